# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""A metric network's own metres on the real frames: docs/accuracy.md's FastDepth section
(``make eval-real``). FastDepth (trained on NYU Depth v2) runs with ``depth_output_unit:
metres``, ``--fit stretch`` and no scale source on the NYU, TUM and 7-Scenes frames; each
frame's published metres against its measured depth, beside PyD-Net++ at its best single scale
(what a relative network gives at best)."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np

from dense_perception.core.geometry.intrinsics import Intrinsics
from dense_perception.core.pipeline import DensePipeline, load_pipeline
from dense_perception.core.settings.table import Settings
from tools.eval.real_scenes import (FASTDEPTH, FRAMES, REAL_SCENES, depth_errors,
                                   frame_intrinsics, oracle_scale)
from tools.eval.sequence import read_sequence

SEVEN = REAL_SCENES / "7scenes-redkitchen"


def metric_pipeline(**changes: object) -> DensePipeline:
    """FastDepth declared metric, on the camera's grid (``changes``: other settings)."""
    return load_pipeline(str(FASTDEPTH), Settings(
        model_type="depth", backend="cpu", output_resolution="input", fit="stretch",
        depth_output_unit="metres", **changes), log=lambda *_: None)


def _frames() -> list[tuple[str, np.ndarray, np.ndarray, Intrinsics]]:
    """(name, BGR image, measured depth, intrinsics) of the NYU, TUM and a few 7-Scenes frames."""
    out = []
    for frame in FRAMES:
        rgb = frame.rgb()
        out.append((frame.name, cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR), frame.depth(),
                    frame_intrinsics(frame, rgb.shape[1], rgb.shape[0])))
    if (SEVEN / "trajectory.tum").is_file():
        seq = read_sequence(SEVEN, SEVEN / "trajectory.tum", SEVEN / "camera.yaml")
        for i in (0, 50, 99):
            out.append((f"7scenes_{i:03d}", cv2.imread(str(seq.colour[i])), seq.truth(i), seq.k))
    return out


def metric_section(relative: DensePipeline) -> str:
    """The section's markdown: FastDepth's own metres per frame, and ``relative`` (PyD-Net++)
    at each frame's best single scale on the same frames."""
    fast = metric_pipeline()
    rows = ["| frame | FastDepth's own metres: AbsRel | delta1 | scale error "
            "| PyD-Net++ at its best single scale: AbsRel |", "|---|---|---|---|---|"]
    for name, bgr, truth, k in _frames():
        own = depth_errors(truth, fast.process(bgr, "bgr8", k).depth)
        rel = relative.process(bgr, "bgr8", k).depth
        best = depth_errors(truth, rel * np.float32(oracle_scale(truth, rel)))
        rows.append(f"| {name} | {own['absrel']:.3f} | {own['delta1']:.3f} | "
                    f"{own['scale_error']:+.1%} | {best['absrel']:.3f} |")
    return "\n".join([
        "## A metric network: FastDepth's own metres", "",
        f"`{Path(FASTDEPTH).name}` (FastDepth, Wofk et al., ICRA 2019; trained on NYU Depth v2) "
        "declared metric (`depth_output_unit: metres`, `--fit stretch`, see models/README.md), "
        "with no scale source: each frame's published metres against its measured depth. It is "
        "right on the rooms it was trained on (NYU) and off elsewhere (TUM): what a metric "
        "network's error (`metric_depth_error`) and a scale source that checks it are for. "
        "The stretch tables above have it twice: as a relative network through the motion "
        "scale, and with its own metres checked by motion (*FastDepth, its own metres*).", "",
        *rows, ""])
