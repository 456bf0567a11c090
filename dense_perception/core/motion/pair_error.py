# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The relative error one pair's motion scale claims (:mod:`.motion_scale`), from its own
pixels: a block jackknife of their median over regions of the view and over bands of depth,
the flow's distance from its epipolar lines over the parallax, and a floor."""

from __future__ import annotations

import math

import numpy as np

MIN_PIXELS = 200          # trusted pixels a pair needs (a region or band: a quarter of it)
BLOCKS = (2, 3)           # rows, columns of the view's regions for the block jackknife
DEPTH_BANDS = 3           # bands of relative depth for the depth jackknife and the slope
MIN_SIGMA = 0.02          # the smallest relative error claimed (the flow's own bias, ~0.3 px)


def depth_band_error(q: np.ndarray, rel_trusted: np.ndarray, rel_view: np.ndarray) -> float:
    """How far the scale of the trusted pixels may be from the whole view's when the ratio
    changes with depth (a network whose depth is its truth to a power): the robust slope of log
    ``q`` against log relative depth, times how far the trusted pixels' median log depth lies
    from the view's (``rel_view``, NaN invalid), plus the spread of the scale between
    :data:`DEPTH_BANDS` bands of depth (a block jackknife over depth instead of space)."""
    keep = q > 0
    if np.count_nonzero(keep) < MIN_PIXELS:
        return 0.0
    y, x = np.log(q[keep]), np.log(rel_trusted[keep])
    edges = np.quantile(x, np.linspace(0.0, 1.0, DEPTH_BANDS + 1))
    band = np.clip(np.searchsorted(edges, x, side="right") - 1, 0, DEPTH_BANDS - 1)
    centres = [(float(np.median(x[band == b])), float(np.median(y[band == b])))
               for b in range(DEPTH_BANDS) if np.count_nonzero(band == b) >= MIN_PIXELS // 4]
    if len(centres) < 2:
        return 0.0
    xs, ys = np.array(centres).T
    slope = float(np.polyfit(xs, ys, 1)[0]) if np.ptp(xs) > 1e-6 else 0.0
    view = rel_view[np.isfinite(rel_view) & (rel_view > 0)]
    shift = abs(float(np.median(np.log(view[::7]))) - float(np.median(x))) if view.size else 0.0
    left_out = [float(np.median(y[band != b])) for b in range(DEPTH_BANDS)]
    return math.hypot(slope * shift, jackknife(left_out))


def pair_sigma(q: np.ndarray, u: np.ndarray, v: np.ndarray, shape: tuple[int, ...],
               residual: float, parallax: float) -> float:
    """The relative standard error of one pair's scale (1 / median ``q``; ``q`` per pixel at
    full-size pixel ``u``, ``v`` of a view of ``shape``): the block jackknife of the median over
    :data:`BLOCKS` regions, the epipolar ``residual`` (px) over the median ``parallax`` (px),
    and :data:`MIN_SIGMA`, added in quadrature."""
    rows, cols = BLOCKS
    h, w = shape[:2]
    block = (np.clip((v * rows / h).astype(np.int64), 0, rows - 1) * cols
             + np.clip((u * cols / w).astype(np.int64), 0, cols - 1))
    logs = np.log(np.maximum(q, 1e-12))
    left_out = [float(np.median(logs[block != b])) for b in range(rows * cols)
                if MIN_PIXELS // 4 <= np.count_nonzero(block == b) < len(q) - MIN_PIXELS]
    if len(left_out) >= 3:
        regions = jackknife(left_out)
    else:  # the trusted pixels fill fewer than three regions: the view is barely sampled
        regions = 1.4826 * float(np.median(np.abs(logs - np.median(logs))))
    geometry = residual / max(parallax, 1e-6)
    return math.sqrt(regions ** 2 + geometry ** 2 + MIN_SIGMA ** 2)


def jackknife(left_out: list[float]) -> float:
    """The jackknife standard error of a statistic from its values with each group left out
    in turn: sqrt((n - 1) / n * sum((x_i - mean)^2))."""
    n = len(left_out)
    values = np.asarray(left_out, dtype=np.float64)
    return math.sqrt((n - 1) / n * float(np.sum((values - values.mean()) ** 2)))

