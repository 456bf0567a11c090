# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""What the temporal alignment does to the picture: docs/accuracy.md's section on cracks and
blocks (``make eval-real``), or that section alone, spliced into an existing page::

    .venv/bin/python -m tools.eval.streaks [--out docs/accuracy.md]

Every shared stretch of ``7scenes-redkitchen-sfm`` runs through ``--depth-scale-source motion``
with good poses and every frame published (``max_scale_error`` 1), once with
``temporal_alignment`` and once without, each network as a relative one. Per stretch:

* AbsRel at each frame's best scale (median of measured / published): the shape of what is
  published, whatever its metres; the alignment may not make it worse;
* roughness: the mean |log depth - its 5x5 median| over the view, the fine detail of the
  published depth: cracks, specks and the grid-scale texture of pixels rounded to the grid
  count, a straight edge (a block's, or an object's) does not (the median keeps it); the
  alignment may not add detail the network's own frames do not have;
* TAE (``tools.eval.sequence``'s): the flicker the alignment is there to remove.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import replace
from pathlib import Path

import cv2
import numpy as np

from dense_perception.core.motion.camera_motion import CameraMotion, MotionConfig
from dense_perception.core.motion.pose import motion
from dense_perception.core.motion.warp import tae
from dense_perception.core.pipeline import DensePipeline, load_pipeline
from dense_perception.core.scale.metric_scale import DepthScaler, ScaleConfig
from dense_perception.core.settings.table import Settings
from tools.eval.sequence import Sequence, best_scale_absrel, finish_frames, read_sequence
from tools.eval.stretches import label, networks, stretches

HEADING = "## Temporal alignment: cracks and blocks"
NEXT_HEADING = "## A metric network"  # the section eval-real writes after this one
PICTURE_STRETCH, PICTURE_FRAME = "200-299", 70  # the frame the pictures show
PICTURE_NAME = "accuracy-alignment-{}.png"


def roughness(depth: np.ndarray) -> float:
    """Mean |log depth - its 5x5 median| over the valid pixels (the depth's fine detail)."""
    log = np.log(np.where(depth > 0, depth, np.nan)).astype(np.float32)
    return float(np.nanmean(np.abs(log - cv2.medianBlur(log, 5))))


def published(base: DensePipeline, seq: Sequence, aligned: bool) -> dict[int, np.ndarray]:
    """The depth ``process --poses ... --depth-scale-source motion`` publishes per frame, with
    every frame in metres (bound 1), ``temporal_alignment`` on or off."""
    config = replace(base.config, fit="stretch", output_resolution="input",
                     depth_scale_source="motion")
    return finish_frames(DensePipeline(base.runner, base.spec, config), seq, seq.poses,
                         DepthScaler(ScaleConfig("motion", max_scale_error=1.0)),
                         CameraMotion(MotionConfig(min_baseline=0.1,
                                                   temporal_alignment=aligned)))[0]


def figures(outputs: dict[int, np.ndarray], seq: Sequence, truths: dict[int, np.ndarray]
            ) -> dict:
    """AbsRel at each frame's best scale, roughness and TAE over the frames of ``truths``
    (their measured depth)."""
    flicker = [tae(outputs[i], outputs[i + 1], seq.k, motion(seq.poses[i], seq.poses[i + 1]))
               for i in truths if i + 1 in truths]
    return {"absrel": float(np.mean([best_scale_absrel(outputs[i], t)
                                     for i, t in truths.items()])),
            "roughness": float(np.mean([roughness(outputs[i]) for i in truths])),
            "tae": float(np.mean(flicker)) if flicker else float("nan")}


def colour(depth: np.ndarray, near: float, far: float) -> np.ndarray:
    """``depth`` coloured on a log scale from ``near`` to ``far`` (black: none)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        v = (np.log(depth) - np.log(near)) / (np.log(far) - np.log(near))
    image = cv2.applyColorMap((255 * np.clip(np.nan_to_num(v), 0, 1)).astype(np.uint8),
                              cv2.COLORMAP_TURBO)
    image[~(depth > 0)] = 0
    return image


def save_picture(path: Path, depth: np.ndarray, truth: np.ndarray, caption: str) -> None:
    """One published depth, coloured by the measured depth's range, with a caption."""
    near, far = np.nanpercentile(truth, [2, 98])
    image = colour(depth, near, far)
    cv2.putText(image, caption, (8, 22), cv2.FONT_HERSHEY_SIMPLEX, 0.6, (255, 255, 255), 2,
                cv2.LINE_AA)
    cv2.imwrite(str(path), image, [cv2.IMWRITE_PNG_COMPRESSION, 9])


def streak_section(networks: dict[str, DensePipeline], pictures: Path | None) -> str:
    """The section: one table per network that publishes relative depth (a metric one's
    metres are its own, not the motion scale's), and pictures of one frame (under
    ``pictures``)."""
    lines = [
        HEADING, "",
        "The temporal alignment moves the published past into each new view and blends it into "
        "the new frame where the two agree ([Metric depth](metric-depth.md), "
        "`temporal_alignment`). Each shared stretch of "
        "`7scenes-redkitchen-sfm` with good poses and every frame published (`max_scale_error "
        "1`), with and without `temporal_alignment` (`tools/eval/streaks.py`): AbsRel at each "
        "frame's best scale (the shape published, whatever its metres), *roughness* (the mean "
        "|log depth − its 5×5 median|: the depth's fine detail, where cracks, specks and the "
        "texture of pixels rounded to the grid show; a straight edge does not count) "
        "and TAE, over the frames both publish.", ""]
    for name, base in networks.items():
        if base.spec.metric_depth:
            continue
        lines_after: list[str] = []
        lines += [f"### {name}", "",
                  "| stretch | frames | AbsRel at best scale: aligned / not | roughness ×1000: "
                  "aligned / not | TAE: aligned / not |", "|---|---|---|---|---|"]
        for folder in stretches():
            seq = read_sequence(folder, folder / "trajectory.tum", folder / "camera.yaml")
            on, off = published(base, seq, True), published(base, seq, False)
            truths = {i: seq.truth(i) for i in sorted(set(on) & set(off))}
            if not truths:
                lines.append(f"| {label(folder)} | 0 | - | - | - |")
                continue
            a, b = figures(on, seq, truths), figures(off, seq, truths)
            lines.append(f"| {label(folder)} | {len(truths)} | {a['absrel']:.4f} / "
                         f"{b['absrel']:.4f} | {1000 * a['roughness']:.2f} / "
                         f"{1000 * b['roughness']:.2f} | {a['tae']:.4f} / {b['tae']:.4f} |")
            if pictures is not None and label(folder) == PICTURE_STRETCH:
                lines_after += frame_pictures(name, truths, on, off, pictures)
        lines += ["", *lines_after]
    return "\n".join(lines)


def frame_pictures(name: str, truths: dict[int, np.ndarray], on: dict[int, np.ndarray],
                   off: dict[int, np.ndarray], pictures: Path) -> list[str]:
    """One frame of the picture stretch, not aligned and aligned, written under ``pictures``
    (coloured by the range of its measured depth, ``truths``); the section's lines that show
    them (and the forward warp's picture, where it is kept)."""
    if PICTURE_FRAME not in truths:
        return []
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    truth = truths[PICTURE_FRAME]
    shown = {"not": (off, "not aligned"), "aligned": (on, "aligned")}
    for kind, (outputs, caption) in shown.items():
        save_picture(pictures / PICTURE_NAME.format(f"{slug}-{kind}"), outputs[PICTURE_FRAME],
                     truth, f"{name}, {caption}")
    lines = [f"Frame {PICTURE_FRAME} of {PICTURE_STRETCH}, {name}, not aligned and aligned "
             "(colour: log depth over the measured depth's range):", ""]
    lines += [f"![{name}, {caption}]({PICTURE_NAME.format(slug + '-' + kind)})"
              for kind, (_, caption) in shown.items()]
    forward = PICTURE_NAME.format(f"{slug}-forward-warp")
    if (pictures / forward).is_file():
        lines += ["", "The same frame aligned through a forward warp (each previous pixel "
                  "moved to its nearest new pixel) with a hard tolerance, as "
                  "`core/motion/temporal.py` explains: cracks where nothing landed, blocks "
                  "where pixels rounded to the grid and steps at the tolerance.", "",
                  f"![{name}, forward warp]({forward})"]
    return lines + [""]


def splice(text: str, section: str) -> str:
    """``text`` with its :data:`HEADING` section replaced by ``section``; without one, put
    where ``make eval-real`` puts it (before the metric network's section, else at the end)."""
    start = text.find(HEADING)
    if start < 0:
        start = text.find(NEXT_HEADING)
        if start < 0:
            return text.rstrip("\n") + "\n\n" + section.rstrip("\n") + "\n"
        return text[:start] + section.rstrip("\n") + "\n\n" + text[start:]
    following = re.search(r"^## ", text[start + len(HEADING):], re.M)
    end = len(text) if following is None else start + len(HEADING) + following.start()
    return text[:start] + section.rstrip("\n") + "\n\n" + text[end:].lstrip("\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("docs/accuracy.md"))
    args = parser.parse_args(argv)
    from tools.eval.real_scenes import PYDNET, available
    if not available() or not stretches():
        print("streaks: ../shared/real-scenes is absent", file=sys.stderr)
        return 2
    base = load_pipeline(str(PYDNET), Settings(model_type="depth", backend="cpu",
                                               output_resolution="input"))
    section = streak_section(networks(base), args.out.parent)
    args.out.write_text(splice(args.out.read_text(), section))
    return 0


if __name__ == "__main__":
    sys.exit(main())
