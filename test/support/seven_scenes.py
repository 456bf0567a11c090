# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The shared 7-Scenes frames 0-99 (``../shared/real-scenes/7scenes-redkitchen``) as tests read
them: a frame's measured depth, and the depth files ``process`` wrote for them."""

import cv2
import numpy as np

from tools.eval.real_scenes import REAL_SCENES

SEVEN = REAL_SCENES / "7scenes-redkitchen"


def measured(i: int) -> np.ndarray:
    """Frame ``i``'s measured depth in metres (uint16 millimetres on disk), NaN where none."""
    raw = cv2.imread(str(SEVEN / f"frame-{i:06d}.depth.png"), cv2.IMREAD_UNCHANGED)
    return np.where(raw > 0, raw.astype(np.float32) / 1000, np.nan)


def published(out) -> dict[int, np.ndarray]:
    """The depth ``process`` wrote under ``out`` (``depth/frame-NNNNNN.npy``), by frame index."""
    return {int(p.name.split("-")[1].split(".")[0]): np.load(p)
            for p in (out / "depth").glob("*.npy")}
