# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Depth moved from one view into another by a known rigid motion, and the flicker measure built
on it (TAE).

A depth image (metres or relative units along the optical axis, NaN or <= 0 invalid) of camera
a, with pinhole intrinsics ``k``, is back-projected, moved by ``a_to_b`` (a 4x4 transform that
maps points of camera a's frame into camera b's, :func:`.pose.motion`) and projected into b's
image with a z-buffer (the nearest surface wins where several land on one pixel: occlusion).
Pixels of b that nothing lands on (newly seen, or holes between spread pixels) are NaN: TAE's
measure. :func:`backward_warp` looks the other way, from b's pixels at b's own depth into a,
and samples a there: no holes, nothing rounded (the temporal alignment's).
"""

from __future__ import annotations

import cv2
import numpy as np

from ..geometry.intrinsics import Intrinsics


def project(depth: np.ndarray, k: Intrinsics, a_to_b: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Where each pixel of ``depth`` (view a) lands in view b: its (u, v) pixel coordinates
    and depth z in b, float32 maps of ``depth``'s shape (NaN for invalid pixels)."""
    h, w = depth.shape
    z = np.where(depth > 0, depth, np.nan).astype(np.float32, copy=False)
    r = a_to_b[:3, :3].astype(np.float32)
    t = a_to_b[:3, 3].astype(np.float32)
    xr = ((np.arange(w, dtype=np.float32) - np.float32(k.cx)) / np.float32(k.fx))[None, :]
    yr = ((np.arange(h, dtype=np.float32) - np.float32(k.cy)) / np.float32(k.fy))[:, None]
    # X_b = z * (R @ ray) + t, each ray's turn from its column and row (broadcast, cheap).
    zb = (r[2, 0] * xr + (r[2, 1] * yr + r[2, 2])) * z + t[2]
    with np.errstate(divide="ignore", invalid="ignore"):
        inverse = np.float32(1.0) / zb
        ub = ((r[0, 0] * xr + (r[0, 1] * yr + r[0, 2])) * z + t[0]) * inverse
        ub = ub * np.float32(k.fx) + np.float32(k.cx)
        vb = ((r[1, 0] * xr + (r[1, 1] * yr + r[1, 2])) * z + t[1]) * inverse
        vb = vb * np.float32(k.fy) + np.float32(k.cy)
    return ub, vb, zb


def forward_warp(depth: np.ndarray, k: Intrinsics, a_to_b: np.ndarray) -> np.ndarray:
    """``depth`` of view a as seen from view b (same intrinsics and size): each pixel moved by
    ``a_to_b`` to its nearest pixel in b, the nearest surface kept (z-buffer); NaN where nothing
    lands."""
    h, w = depth.shape
    ub, vb, zb = project(depth, k, a_to_b)
    ui = np.rint(ub)
    vi = np.rint(vb)
    with np.errstate(invalid="ignore"):
        inside = (zb > 0) & (ui >= 0) & (ui < w) & (vi >= 0) & (vi < h)
    # Pixel indices below 2**24 are exact in float32.
    index = (vi * np.float32(w) + ui)[inside].astype(np.int64)
    buffer = np.full(h * w, np.inf, dtype=np.float32)
    np.minimum.at(buffer, index, zb[inside])  # the z-buffer: the nearest surface per pixel
    buffer[np.isinf(buffer)] = np.nan
    return buffer.reshape(h, w)


def tae(depth_a: np.ndarray, depth_b: np.ndarray, k: Intrinsics, a_to_b: np.ndarray
        ) -> float | None:
    """Temporal alignment error: ``depth_a`` moved by the camera motion ``a_to_b`` into view b,
    then the mean AbsRel |moved - depth_b| / depth_b over the pixels where both are valid
    (Video Depth Anything's ``eval_tae.py``). 0 for depth that holds still; a depth sensor
    scores about 0.006 on hand-held indoor video. None when no pixel overlaps."""
    moved = forward_warp(depth_a, k, a_to_b)
    both = np.isfinite(moved) & np.isfinite(depth_b) & (depth_b > 0)
    if not both.any():
        return None
    target = depth_b[both].astype(np.float64)
    return float(np.mean(np.abs(moved[both] - target) / target))


def backward_warp(depth_a: np.ndarray, k: Intrinsics, a_to_b: np.ndarray, depth_b: np.ndarray,
                  extra: np.ndarray | None = None
                  ) -> tuple[np.ndarray, np.ndarray | None]:
    """``depth_a`` of view a as seen from view b, looked up from b: each pixel of b, at its own
    depth ``depth_b`` (in the units of ``a_to_b``'s translation), is moved into view a and
    ``depth_a`` sampled there (bilinear, :func:`cv2.remap`), then moved back into b. Every
    pixel of b with a depth gets a value where it falls inside a's valid depth (no holes open
    between moved pixels, none is rounded to the grid); where b sees what a did not (an
    occlusion), the value is a's nearer surface, which a caller comparing it with ``depth_b``
    finds to disagree. NaN where b's pixel falls outside view a or on invalid depth.
    ``extra`` (a per-pixel value of a) is sampled the same way (0 outside)."""
    h, w = depth_a.shape
    b_to_a = np.linalg.inv(a_to_b).astype(np.float32)
    ua, va, _ = project(depth_b, k, b_to_a)
    # Within a's pixels (to half a pixel beyond the outer centres, clamped: the image's edge
    # is its outer pixels' edge), else far outside (NaN).
    with np.errstate(invalid="ignore"):
        inside = (ua > -0.5) & (ua < w - 0.5) & (va > -0.5) & (va < h - 0.5)
    map_u = np.where(inside, np.clip(ua, 0, w - 1), -1e4).astype(np.float32)
    map_v = np.where(inside, np.clip(va, 0, h - 1), -1e4).astype(np.float32)
    mapped = np.where(depth_a > 0, depth_a, np.nan).astype(np.float32, copy=False)
    sampled = cv2.remap(mapped, map_u, map_v, cv2.INTER_LINEAR,
                        borderMode=cv2.BORDER_CONSTANT, borderValue=float("nan"))
    # The sampled surface point of a, moved back into b: its depth there.
    r = a_to_b[:3, :3].astype(np.float32)
    t = a_to_b[:3, 3].astype(np.float32)
    xr = (ua - np.float32(k.cx)) / np.float32(k.fx)
    yr = (va - np.float32(k.cy)) / np.float32(k.fy)
    moved = (r[2, 0] * xr + r[2, 1] * yr + r[2, 2]) * sampled + t[2]
    moved = np.where(moved > 0, moved, np.nan).astype(np.float32)
    carried = None
    if extra is not None:
        carried = cv2.remap(extra.astype(np.float32), map_u, map_v, cv2.INTER_NEAREST,
                            borderMode=cv2.BORDER_CONSTANT, borderValue=0.0)
    return moved, carried
