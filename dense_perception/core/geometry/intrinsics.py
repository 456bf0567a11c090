# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Pinhole camera intrinsics, from a CameraInfo-like K or guessed from a field of view."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence


@dataclass(frozen=True)
class Intrinsics:
    """Pinhole intrinsics of an image of ``width`` x ``height`` pixels (REP 104 conventions)."""

    fx: float
    fy: float
    cx: float
    cy: float
    width: int
    height: int

    @classmethod
    def from_k(cls, k: Sequence[float], width: int, height: int) -> "Intrinsics":
        """From a row-major 3x3 K (as in sensor_msgs/CameraInfo.k)."""
        return cls(fx=float(k[0]), fy=float(k[4]), cx=float(k[2]), cy=float(k[5]),
                   width=int(width), height=int(height))

    @classmethod
    def from_hfov(cls, width: int, height: int, hfov_deg: float) -> "Intrinsics":
        """A guessed pinhole model with square pixels and the principal point at the centre."""
        f = (width / 2.0) / math.tan(math.radians(hfov_deg) / 2.0)
        return cls(fx=f, fy=f, cx=(width - 1) / 2.0, cy=(height - 1) / 2.0,
                   width=int(width), height=int(height))

    def k(self) -> list[float]:
        """Row-major 3x3 K."""
        return [self.fx, 0.0, self.cx, 0.0, self.fy, self.cy, 0.0, 0.0, 1.0]

    def problem(self) -> str | None:
        """Why these intrinsics cannot be used for back-projection, or None when they can."""
        values = (self.fx, self.fy, self.cx, self.cy)
        if not all(math.isfinite(v) for v in values):
            return "K holds NaN or inf"
        if self.fx <= 0 or self.fy <= 0:
            return f"focal length must be positive (fx={self.fx:g}, fy={self.fy:g})"
        if self.width < 1 or self.height < 1:
            return f"size {self.width}x{self.height} is empty"
        return None
