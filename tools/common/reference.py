# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Plain reference implementations, written as the formulas read, for the tests and the
benchmark to compare the fast runtime code against (not installed with the package)."""

from __future__ import annotations

import numpy as np

from dense_perception.core.geometry.intrinsics import Intrinsics
from dense_perception.core.model.specs import ModelSpec


def reference_points(depth: np.ndarray, k: Intrinsics, max_depth: float = float("inf")
                     ) -> list[tuple[float, float, float]]:
    """A plain per-pixel pinhole back-projection loop: (x, y, z) of every valid pixel."""
    points = []
    for v in range(depth.shape[0]):
        for u in range(depth.shape[1]):
            z = float(depth[v, u])
            if np.isfinite(z) and 0 < z <= max_depth:
                points.append(((u - k.cx) * z / k.fx, (v - k.cy) * z / k.fy, z))
    return points


def reference_preprocess(rgb: np.ndarray, spec: ModelSpec) -> np.ndarray:
    """The model card's formula, written plainly: RGB uint8 H x W x 3 -> [1,3,H,W] float32."""
    x = rgb.astype(np.float32) / np.float32(spec.scale)
    x = (x - np.asarray(spec.mean, np.float32)) / np.asarray(spec.std, np.float32)
    return x.transpose(2, 0, 1)[None]
