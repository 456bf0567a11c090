# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The metric scale from motion on every shared 7-Scenes stretch, judged by the colour camera's
true motion, with three kinds of poses, on both real networks: docs/accuracy.md's stretch
tables and pictures (``make eval-real``).

Each stretch of ``7scenes-redkitchen-sfm`` (100 frames each: the colour frames, depth
registered to the colour camera, the colour camera's SfM poses) runs through the pipeline
(``tools.eval.sequence.evaluate``'s motion row: what ``process --poses ...
--depth-scale-source motion`` publishes), fed one of three kinds of poses: *good* (the SfM
poses, ``trajectory.tum``), *odometry-like* (those with a wheel odometry's faults,
:mod:`tools.eval.pose_noise`, seed 0) and *tracker* (``trajectory_kinectfusion.tum``: a real
tracker, wrong in places). Every kind is judged against the registered depth with the SfM
poses. Twice: with ``max_scale_error`` at its default (what a user gets) and at 1 (every frame
in metres, to check the error each frame claims against the truth). The older
``7scenes-redkitchen*`` folders (unregistered depth, the depth camera's poses) keep their other
uses; metres are judged here only.
"""

from __future__ import annotations

import re
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
SFM = REAL_SCENES / "7scenes-redkitchen-sfm"
POSE_KINDS = ("good", "odometry-like", "tracker")
NEAR = 0.05  # a frame within 5 % of the truth is one a user wants published


def stretches() -> list[Path]:
    """The stretches with the colour camera's true motion, in the video's order."""
    if not SFM.is_dir():
        return []
    return sorted(p for p in SFM.iterdir() if (p / "trajectory.tum").is_file())


def label(folder: Path) -> str:
    """'0-99', '100-199', ...: the frames a stretch holds."""
    if folder.name.startswith("frames-"):
        first, last = folder.name.split("-")[1:3]
        return f"{int(first)}-{int(last)}"
    return "0-99"


def run_stretch(base: DensePipeline, folder: Path) -> dict:
    """Figures per kind of poses (:data:`POSE_KINDS`) and bound ('default', 'none')."""
    seq = read_sequence(folder, folder / "trajectory.tum", folder / "camera.yaml")
    tracker = read_sequence(folder, folder / "trajectory_kinectfusion.tum",
                            folder / "camera.yaml").poses
    fed = {"good": None, "odometry-like": odometry_like(seq.poses, seq.stamps, POSE_SEED),
           "tracker": tracker}
    out = {}
    for kind, poses in fed.items():
        for bound, value in (("default", ScaleConfig.max_scale_error), ("none", 1.0)):
            out[kind, bound] = evaluate(base, seq, poses=poses, rows=("motion scale",),
                                        max_scale_error=value)["motion scale"]
    return out


def claimed(sigma: float | None) -> float | None:
    """The error a scale claims, 2σ of its log, as a fraction of the scale (0.1: 10 %)."""
    return None if sigma is None else float(np.expm1(2.0 * sigma))


def _pct(x: float | None, signed: bool = False) -> str:
    return "-" if x is None else (f"{x:+.1%}" if signed else f"{x:.1%}")


def _off(f: dict) -> int:
    """Published frames more than 10 % off."""
    return sum(abs(e) > 0.10 for e, _ in f["per_frame"].values())


def _near_published(f: dict, every: dict) -> tuple[int, int]:
    """Of the frames within :data:`NEAR` when every frame is published (``every``), how many
    the default bound publishes (``f``), and how many there are."""
    near = [i for i, (e, _) in every["per_frame"].items() if abs(e) <= NEAR]
    return sum(i in f["per_frame"] for i in near), len(near)


def table(results: dict[str, dict]) -> list[str]:
    """The markdown rows for one network's stretches."""
    lines = ["| stretch | poses | in metres | off > 10 % | AbsRel / best single scale | "
             "TAE (×100) | every frame: median off | median claimed 2σ | within 2σ | "
             "within 5 %: published |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for name, per in results.items():
        for kind in POSE_KINDS:
            f, every = per[kind, "default"], per[kind, "none"]
            tae = "-" if f["tae"] is None else f"{f['tae']:.4f} ({100 * f['tae']:.2f})"
            absrel = "-" if f["absrel"] is None else f"{f['absrel']:.3f} / {f['best_absrel']:.3f}"
            sigmas = [c for _, s in every["per_frame"].values() if (c := claimed(s)) is not None]
            within = "-" if every["within_2_sigma"] is None else f"{every['within_2_sigma']:.0%}"
            shown, near = _near_published(f, every)
            claim = _pct(float(np.median(sigmas)) if sigmas else None)
            lines.append(
                f"| {name} | {kind} | {f['frames']} of {f['total']} | {_off(f)} | {absrel} | {tae} | "
                f"{_pct(every['median_error'])} | {claim} | {within} | {shown} of {near} |")
    return lines


def pooled(results: dict[str, dict]) -> list[str]:
    """Over every stretch, per kind of poses: the frames within 5 % that the default bound
    publishes, and the published frames more than 10 % off."""
    lines = []
    for kind in POSE_KINDS:
        near = shown = wrong = published = 0
        for per in results.values():
            f, every = per[kind, "default"], per[kind, "none"]
            stretch_shown, stretch_near = _near_published(f, every)
            shown, near = shown + stretch_shown, near + stretch_near
            wrong += _off(f)
            published += f["frames"]
        share = "-" if not near else f"{shown / near:.0%}"
        lines.append(f"- {kind} poses: {shown} of the {near} frames within 5 % published "
                     f"({share}); {wrong} of {published} published frames more than 10 % off.")
    return lines


def calibration(results: dict[str, dict], path: Path, title: str) -> None:
    """Every frame's actual error (|off|, bound 1) against the 2σ its scale claims, all
    stretches, one colour per kind of poses: PNG at ``path``. A dot under the diagonal is a
    frame whose claim covers its error."""
    size, left, top, span = 420, 50, 30, 0.5
    image = np.full((size + top + 40, size + left + 20, 3), 255, np.uint8)
    colours = {"good": (160, 60, 0), "odometry-like": (0, 140, 0), "tracker": (0, 0, 200)}

    def at(claim: float, error: float) -> tuple[int, int]:
        return (int(left + min(claim, span) / span * size),
                int(top + size - min(error, span) / span * size))

    for level in (0.0, 0.1, 0.2, 0.3, 0.4, 0.5):
        cv2.line(image, at(level, 0), at(level, span), (225, 225, 225), 1)
        cv2.line(image, at(0, level), at(span, level), (225, 225, 225), 1)
        cv2.putText(image, f"{level:.0%}", (at(level, 0)[0] - 10, top + size + 14),
                    cv2.FONT_HERSHEY_SIMPLEX, 0.33, (80, 80, 80), 1, cv2.LINE_AA)
        cv2.putText(image, f"{level:.0%}", (4, at(0, level)[1] + 4), cv2.FONT_HERSHEY_SIMPLEX,
                    0.33, (80, 80, 80), 1, cv2.LINE_AA)
    cv2.line(image, at(0, 0), at(span, span), (0, 0, 0), 1, cv2.LINE_AA)
    for per in results.values():
        for kind, colour in colours.items():
            for error, sigma in per[kind, "none"]["per_frame"].values():
                if (claim := claimed(sigma)) is not None:
                    cv2.circle(image, at(claim, abs(error)), 2, colour, -1, cv2.LINE_AA)
    cv2.putText(image, title, (left, 18), cv2.FONT_HERSHEY_SIMPLEX, 0.42, (0, 0, 0), 1,
                cv2.LINE_AA)
    cv2.putText(image, "claimed 2 sigma", (left + size - 110, top + size + 32),
                cv2.FONT_HERSHEY_SIMPLEX, 0.38, (80, 80, 80), 1, cv2.LINE_AA)
    for row, (kind, colour) in enumerate(colours.items()):
        cv2.putText(image, f"{kind} poses", (left + 8, top + 16 + 14 * row),
                    cv2.FONT_HERSHEY_SIMPLEX, 0.38, colour, 1, cv2.LINE_AA)
    cv2.imwrite(str(path), image)


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

    every, shown = per["good", "none"], per["good", "default"]
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
    """docs/accuracy.md's section: one table and one calibration picture per network, one
    picture per stretch (the first network's, good poses), the pictures written under
    ``pictures`` (None: none)."""
    lines = [
        "## Every stretch: metres from motion, with their error", "",
        "The five shared 100-frame stretches of the 7-Scenes redkitchen video with the colour "
        "camera's true motion (`7scenes-redkitchen-sfm`: depth registered to the colour "
        "camera, the colour camera's SfM poses), through `--depth-scale-source motion --fit "
        "stretch --output-resolution input` (`tools/eval/stretches.py`), fed *good* poses (the "
        "SfM ones), *odometry-like* ones (`tools/eval/pose_noise.py`, seed 0: each pose 20 ms "
        "late, each step 2 % long, 1 mm and 0.1 deg of jitter a step) or a *tracker*'s "
        "(KinectFusion's, moved to the colour camera: wrong on 100-199), always judged "
        "against the registered depth with the SfM poses. *In metres*, *off > 10 %*, AbsRel "
        "and TAE: at the default `max_scale_error`. *Off*: median of published / measured "
        "depth, minus 1. The *every frame* columns publish every frame (`max_scale_error` 1) "
        "to check the claimed error on all of them: the median |off|, the median 2σ the "
        "scales claim, the share of frames whose error is within it, and how many of the "
        "frames within 5 % the default bound publishes. TAE in brackets ×100, as Video Depth "
        "Anything reports it.", ""]
    for name, base in networks.items():
        results = {}
        for folder in stretches():
            results[label(folder)] = per = run_stretch(base, folder)
            if pictures is not None and name == next(iter(networks)):
                png = pictures / f"accuracy-stretch-{label(folder)}.png"
                picture(per, png, f"{name}, frames {label(folder)}, good poses: error of each "
                                  "frame's scale, 2 sigma bars; filled = published")
        lines += [f"### {name}", "", *table(results), "", *pooled(results), ""]
        if pictures is not None:
            slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
            calibration(results, pictures / f"accuracy-calibration-{slug}.png",
                        f"{name}: actual error against claimed 2 sigma, every frame")
            lines += [f"![{name}: calibration](accuracy-calibration-{slug}.png)", ""]
    if pictures is not None:
        lines += ["Each frame's scale error (dots; filled: published at the default bound) "
                  "with the 2σ it claims (bars), PyD-Net++ with good poses:", ""]
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
