# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The metric scale from motion on every shared 7-Scenes stretch, with true and odometry-like
poses, on both real networks: docs/accuracy.md's stretch tables and pictures (``make eval-real``).

Each stretch (``7scenes-redkitchen`` and the four of ``7scenes-redkitchen-more``, 100 frames
each) runs through the pipeline (``tools.eval.sequence.evaluate``'s motion row: what
``process --poses ... --depth-scale-source motion`` publishes), fed the true poses or
odometry-like ones (:mod:`tools.eval.pose_noise`, seed 0), and is judged against the measured
depth with the true poses. Twice: with ``max_scale_error`` at its default (what a user gets)
and at 1 (every frame in metres, to check the error each frame claims against the truth).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import cv2
import numpy as np

from dense_perception.core.pipeline import DensePipeline
from dense_perception.core.scale.metric_scale import ScaleConfig
from tools.eval.pose_noise import odometry_like
from tools.eval.real_scenes import FASTDEPTH, REAL_SCENES
from tools.eval.sequence import evaluate, read_sequence

POSE_SEED = 0


def stretches() -> list[Path]:
    """The shared stretches, in the video's order."""
    more = REAL_SCENES / "7scenes-redkitchen-more"
    found = [REAL_SCENES / "7scenes-redkitchen"]
    found += sorted(p for p in more.iterdir() if p.is_dir()) if more.is_dir() else []
    return [p for p in found if (p / "trajectory.tum").is_file()]


def label(folder: Path) -> str:
    """'0-99', '100-199', ...: the frames a stretch holds."""
    if folder.name.startswith("frames-"):
        first, last = folder.name.split("-")[1:3]
        return f"{int(first)}-{int(last)}"
    return "0-99"


def run_stretch(base: DensePipeline, folder: Path) -> dict:
    """Figures per poses kind ('true', 'odometry-like') and bound ('default', 'none')."""
    seq = read_sequence(folder, folder / "trajectory.tum", folder / "camera.yaml")
    fed = {"true": None, "odometry-like": odometry_like(seq.poses, seq.stamps, POSE_SEED)}
    out = {}
    for kind, poses in fed.items():
        for bound, value in (("default", ScaleConfig.max_scale_error), ("none", 1.0)):
            out[kind, bound] = evaluate(base, seq, poses=poses, rows=("motion scale",),
                                        max_scale_error=value)["motion scale"]
    return out


def _pct(x: float | None, signed: bool = False) -> str:
    return "-" if x is None else (f"{x:+.1%}" if signed else f"{x:.1%}")


def _absrel_tae(f: dict) -> str:
    if f["absrel"] is None:
        return "-"
    tae = "-" if f["tae"] is None else f"{f['tae']:.4f}"
    return f"{f['absrel']:.3f} / {f['best_absrel']:.3f}, {tae}"


def table(results: dict[str, dict]) -> list[str]:
    """The markdown rows for one network's stretches."""
    lines = ["| stretch | poses | in metres | off > 10 % | worst | median | within 2σ | "
             "TAE (×100) | AbsRel / best single scale | every frame: off > 10 %, within 2σ | "
             "every frame: AbsRel / best single scale, TAE |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, per in results.items():
        for kind in ("true", "odometry-like"):
            f, every = per[kind, "default"], per[kind, "none"]
            errors = [e for e, _ in f["per_frame"].values()]
            all_errors = [e for e, _ in every["per_frame"].values()]
            off = sum(abs(e) > 0.10 for e in errors)
            tae = "-" if f["tae"] is None else f"{f['tae']:.4f} ({100 * f['tae']:.2f})"
            absrel = "-" if f["absrel"] is None else f"{f['absrel']:.3f} / {f['best_absrel']:.3f}"
            within = "-" if f["within_2_sigma"] is None else f"{f['within_2_sigma']:.0%}"
            every_within = "-" if every["within_2_sigma"] is None else \
                f"{every['within_2_sigma']:.0%}"
            lines.append(
                f"| {name} | {kind} | {f['frames']} of {f['total']} | {off} | "
                f"{_pct(f['max_error'])} | {_pct(f['median_error'])} | {within} | {tae} | "
                f"{absrel} | {sum(abs(e) > 0.10 for e in all_errors)} of {every['frames']}, "
                f"{every_within} | {_absrel_tae(every)} |")
    return lines


def picture(per: dict, path: Path, title: str) -> None:
    """The error of each frame's scale with its 2σ band (every frame, bound 1), the frames the
    default bound publishes as filled dots, the withheld ones as open ones: PNG at ``path``."""
    width, height, left, top = 720, 260, 50, 30
    image = np.full((height, width, 3), 255, np.uint8)
    span = 0.3  # +-30 %
    plot_h, plot_w = height - top - 30, width - left - 20

    def y(v: float) -> int:
        return int(top + plot_h / 2 - np.clip(v, -span, span) / span * plot_h / 2)

    def x(i: int, n: int) -> int:
        return int(left + i * plot_w / max(n - 1, 1))

    every, shown = per["true", "none"], per["true", "default"]
    n = every["total"]
    for level in (-0.2, -0.1, 0.0, 0.1, 0.2):
        cv2.line(image, (left, y(level)), (left + plot_w, y(level)),
                 (0, 0, 0) if level == 0 else (220, 220, 220), 1)
        cv2.putText(image, f"{level:+.0%}", (2, y(level) + 4), cv2.FONT_HERSHEY_SIMPLEX, 0.35,
                    (80, 80, 80), 1, cv2.LINE_AA)
    for i, (error, sigma) in every["per_frame"].items():
        if sigma is not None:
            centre = float(np.log1p(error))
            cv2.line(image, (x(i, n), y(centre - 2 * sigma)), (x(i, n), y(centre + 2 * sigma)),
                     (235, 200, 160), 2)
    for i, (error, _) in every["per_frame"].items():
        published = i in shown["per_frame"]
        cv2.circle(image, (x(i, n), y(float(np.log1p(error)))), 3, (160, 60, 0),
                   -1 if published else 1, cv2.LINE_AA)
    cv2.putText(image, title, (left, 18), cv2.FONT_HERSHEY_SIMPLEX, 0.45, (0, 0, 0), 1,
                cv2.LINE_AA)
    cv2.putText(image, "frame", (left + plot_w - 40, height - 8), cv2.FONT_HERSHEY_SIMPLEX, 0.4,
                (80, 80, 80), 1, cv2.LINE_AA)
    cv2.imwrite(str(path), image)


def stretch_section(networks: dict[str, DensePipeline], pictures: Path | None) -> str:
    """docs/accuracy.md's section: one table per network, one picture per stretch (the first
    network's, true poses) written under ``pictures`` (None: none)."""
    lines = [
        "## Every stretch: metres from motion, with their error", "",
        "The five shared 100-frame stretches of the 7-Scenes redkitchen video "
        "(`7scenes-redkitchen`, frames 0-99, and the four of `7scenes-redkitchen-more`), "
        "through `--depth-scale-source motion --fit stretch --output-resolution input` "
        "(`tools/eval/stretches.py`), fed the true poses or odometry-like ones "
        "(`tools/eval/pose_noise.py`, seed 0: each pose 20 ms late, each step 2 % long, 1 mm "
        "and 0.1 deg of jitter a step), always judged with the true poses. *Off*: median of "
        "published / measured depth, minus 1. *Within 2σ*: the frames whose error is within "
        "twice the standard error the scale claims. The last column publishes every frame "
        "(`max_scale_error` 1) to check that claim on all of them, and what the scale map "
        "(`motion_scale_map`) does to the depth. TAE in brackets ×100, as Video Depth "
        "Anything reports it.", ""]
    for name, base in networks.items():
        results = {}
        for folder in stretches():
            results[label(folder)] = per = run_stretch(base, folder)
            if pictures is not None and name == next(iter(networks)):
                png = pictures / f"accuracy-stretch-{label(folder)}.png"
                picture(per, png, f"{name}, frames {label(folder)}, true poses: error of each "
                                  "frame's scale, 2 sigma bars; filled = published")
        lines += [f"### {name}", "", *table(results), ""]
    if pictures is not None:
        lines += ["Each frame's scale error (dots; filled: published at the default bound) "
                  "with the 2σ it claims (bars), PyD-Net++ with the true poses:", ""]
        lines += [f"![frames {label(f)}](accuracy-stretch-{label(f)}.png)" for f in stretches()]
        lines.append("")
    return "\n".join(lines)


def networks(base: DensePipeline) -> dict[str, DensePipeline]:
    """PyD-Net++ (``base``) and FastDepth as relative networks through the motion scale, and
    FastDepth declared metric, its own metres checked by the motion scale."""
    from dense_perception.core.pipeline import load_pipeline
    from dense_perception.core.settings.table import Settings
    nets = {"PyD-Net++": base}
    if FASTDEPTH.is_file():
        fast = load_pipeline(str(FASTDEPTH), Settings(
            model_type="depth", backend="cpu", output_resolution="input", fit="stretch",
            input_normalization="unit"), log=lambda *_: None)
        nets["FastDepth"] = DensePipeline(fast.runner, fast.spec,
                                          replace(fast.config, depth_scale_source="none"))
        from tools.eval.metric_network import metric_pipeline  # its own metres, checked
        own = metric_pipeline()
        nets["FastDepth, its own metres"] = DensePipeline(
            own.runner, own.spec, replace(own.config, depth_scale_source="none"))
    return nets
