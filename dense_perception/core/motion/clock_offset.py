# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The offset between the pose clock and the image clock, measured from the optical flow.

A pose stream that is late (or early) against the images describes the camera at another
moment: the motion between two frames is then not the motion the image saw, and the flow
leaves its epipolar lines (VINS-Mono estimates the same offset online, its ``td``). For each
pair of frames, the flow's median distance from the epipolar lines is evaluated with the poses
taken at each candidate offset (:data:`OFFSETS`, interpolated along the frames' own poses, at
most :data:`MAX_EXTRAPOLATION_S` beyond the newest); the curves of the last :data:`PAIRS`
pairs (one in :data:`EVERY`) are added up, and the offset is their minimum (refined by a parabola) once it is
clearly lower than the curve's ends. ``offset`` s means the image at stamp ``t`` was seen at
pose time ``t + offset``.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from ..geometry.intrinsics import Intrinsics
from .pose import interpolate, motion

OFFSETS = np.round(np.arange(-0.15, 0.1501, 0.015), 3)  # s, the candidates
PAIRS = 30                  # pairs whose curves are added up
MIN_PAIRS = 4               # fewer curves: no offset yet
MAX_EXTRAPOLATION_S = 0.2   # s beyond the newest pose, at constant velocity
SAMPLES = 1500              # trusted pixels used per curve (evenly spread)
SHARPNESS = 1.2             # the ends of the summed curve at least this x its minimum
EVERY = 2                   # a curve from every second pair (the offset changes slowly)


def pose_at(stamps: list[float], poses: list[np.ndarray], t: float,
            quaternions: list[np.ndarray] | None = None) -> np.ndarray | None:
    """The pose at ``t`` along ``poses`` (at increasing ``stamps``): interpolated between the
    two around it, or extrapolated at the last (first) two's velocity at most
    :data:`MAX_EXTRAPOLATION_S` beyond the ends; None farther. ``quaternions``: the poses'
    rotations as quaternions, where the caller keeps them (the offset's search interpolates
    the same poses dozens of times a pair)."""
    if len(stamps) < 2 or t < stamps[0] - MAX_EXTRAPOLATION_S or \
            t > stamps[-1] + MAX_EXTRAPOLATION_S:
        return None
    j = int(np.clip(np.searchsorted(stamps, t, side="right") - 1, 0, len(stamps) - 2))
    span = stamps[j + 1] - stamps[j]
    if span <= 0:
        return None
    pair = None if quaternions is None else (quaternions[j], quaternions[j + 1])
    return interpolate(poses[j], poses[j + 1], (t - stamps[j]) / span, pair)


def epipolar_terms(ub: np.ndarray, vb: np.ndarray, ua: np.ndarray, va: np.ndarray,
                   b_to_a: np.ndarray, k: Intrinsics, dtype: type = np.float64
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """For b's pixels ``ub, vb`` seen at ``ua, va`` in a, with the motion ``b_to_a``: the two
    linear equations in each pixel's inverse depth i, ``c1 i = d1`` and ``c2 i = d2`` (from
    x_a (p_z + i t_z) = fx (p_x + i t_x), the same for y, p the ray turned into a's
    orientation), and p_z. Least squares gives i = (c1 d1 + c2 d2) / (c1² + c2²); what no
    depth explains, |c1 d2 - c2 d1| / sqrt(c1² + c2²) / p_z, is the distance (px) from the
    epipolar line. The turned rays in ``dtype`` (float32 on the scale's hot path)."""
    rot, t = b_to_a[:3, :3], b_to_a[:3, 3]
    rays = np.stack([(ub - k.cx) / k.fx, (vb - k.cy) / k.fy, np.ones_like(ub)])
    p = (rot @ rays).astype(dtype, copy=False)
    xa, ya = ua - k.cx, va - k.cy
    c1, d1 = k.fx * t[0] - xa * t[2], xa * p[2] - k.fx * p[0]
    c2, d2 = k.fy * t[1] - ya * t[2], ya * p[2] - k.fy * p[1]
    return c1, d1, c2, d2, p[2]


def epipolar_residual(ub: np.ndarray, vb: np.ndarray, ua: np.ndarray, va: np.ndarray,
                      b_to_a: np.ndarray, k: Intrinsics) -> float:
    """Median distance (px) of the matches (b's pixels ``ub, vb`` seen at ``ua, va`` in a)
    from the epipolar lines that the motion ``b_to_a`` predicts."""
    c1, d1, c2, d2, pz = epipolar_terms(ub, vb, ua, va, b_to_a, k)
    norm = np.sqrt(c1 * c1 + c2 * c2)
    ok = (norm > 1e-9) & (pz > 0)
    if not ok.any():
        return float("inf")
    return float(np.median(np.abs(c1 * d2 - c2 * d1)[ok] / norm[ok] / pz[ok]))


class ClockOffset:
    """Per camera: the residual curves of the last pairs and the offset they point to."""

    def __init__(self) -> None:
        self._curves: deque[np.ndarray] = deque(maxlen=PAIRS)
        self._pairs = 0

    def reset(self) -> None:
        """Forget the curves (a new sequence)."""
        self._curves.clear()
        self._pairs = 0

    def add_pair(self, ub: np.ndarray, vb: np.ndarray, ua: np.ndarray, va: np.ndarray,
                 tb: float, ta: float, stamps: list[float], poses: list[np.ndarray],
                 k: Intrinsics, quaternions: list[np.ndarray] | None = None) -> None:
        """One pair's curve: frame b (stamp ``tb``, pixels ``ub, vb``) matched at ``ua, va`` in
        frame a (``ta``), with the frames' poses at ``stamps`` (and their ``quaternions``,
        where kept: see :func:`pose_at`); one pair in :data:`EVERY`."""
        self._pairs += 1
        if self._pairs % EVERY:
            return
        step = max(1, len(ub) // SAMPLES)
        ub, vb, ua, va = ub[::step], vb[::step], ua[::step], va[::step]
        curve = np.full(len(OFFSETS), np.nan)
        for i, offset in enumerate(OFFSETS):
            pose_b = pose_at(stamps, poses, tb + offset, quaternions)
            pose_a = pose_at(stamps, poses, ta + offset, quaternions)
            if pose_b is not None and pose_a is not None:
                curve[i] = epipolar_residual(ub, vb, ua, va, motion(pose_b, pose_a), k)
        if np.isfinite(curve).sum() >= 3:
            self._curves.append(curve)

    @property
    def offset(self) -> float | None:
        """The offset (s) the curves point to; None until :data:`MIN_PAIRS` pairs and while
        their sum has no clear minimum inside the candidates."""
        if len(self._curves) < MIN_PAIRS:
            return None
        curves = np.array(self._curves)
        usable = np.all(np.isfinite(curves), axis=0)
        if usable.sum() < 3:
            return None
        total = curves[:, usable].sum(axis=0)
        offsets = OFFSETS[usable]
        best = int(np.argmin(total))
        if best in (0, len(total) - 1) or min(total[0], total[-1]) < SHARPNESS * total[best]:
            return None
        left, mid, right = total[best - 1], total[best], total[best + 1]
        bend = left - 2 * mid + right
        shift = 0.5 * (left - right) / bend if bend > 0 else 0.0
        spacing = float(offsets[best + 1] - offsets[best])
        return float(offsets[best] + np.clip(shift, -0.5, 0.5) * spacing)
