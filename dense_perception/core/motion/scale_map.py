# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""A scale map from motion: where the flow gives metric depth, the network's depth corrected over
the view by a smooth field, not only one number.

A weak network's depth is not its truth times a constant (per frame, measured = a x
predicted^b with b from 0.06 to 1.67 on one real stretch, and tilted across the view), so the
metric / relative ratio of the pixels the flow trusts changes across the view and with depth.
The map is a bilateral grid of those ratios (log scale): :data:`GRID` cells of the view, each
split into :data:`BANDS` bands of the view's depth, each cell the median log ratio of its
pixels, shrunk towards its band's median by its count (:data:`SHRINK` pixels weigh as much as
that median); cells without pixels of a band take the band's median. Each
pixel reads the grid bilinearly across the view and linearly across depth from its own depth,
so a correction never crosses a depth edge: a near object and the wall behind it take their
own band's ratio.

A frame that did not measure its own scale gets the map of the last measurement carried to it
(:func:`carried_correction`): the measurement's metric points moved by the poses and fitted on the
frame's own depth.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import cv2
import numpy as np

from ..geometry.intrinsics import Intrinsics

GRID = (4, 6)        # rows, columns of the view
BANDS = 3            # bands of the view's log depth (its tertiles)
MIN_CELL = 20        # fewer trusted pixels: the cell is empty
SHRINK = 10.0        # pixels that weigh as much as the band's median
MAX_CORRECTION = 0.7  # |log|: at most about 2x either way
MAX_SAMPLES = 6000   # trusted pixels used (evenly spread): about 80 a cell, plenty for a median
MIN_Z = 1e-3         # m: a carried point nearer than this (or behind) is not seen


@dataclass(frozen=True)
class ScaleMap:
    """A fitted map: each band's plane over the view (bilinear from the grid, full size) and
    the band's log relative depth. Read on any frame of the same view's size with that
    frame's own depth (:meth:`correction`): a keyframe's map serves the frames after it."""

    planes: tuple[np.ndarray, ...]
    centres: tuple[float, ...]

    def field(self, view_log_rel: np.ndarray) -> np.ndarray:
        """The log correction at each pixel of a view of log relative depth
        ``view_log_rel`` (NaN invalid; 0 there), relative to the fitted pixels' median."""
        valid = np.isfinite(view_log_rel)
        planes, centres = self.planes, self.centres
        # Linear across depth, between the bands' own depths (the pixel's own depth picks them).
        depth = np.where(valid, view_log_rel, centres[0]).astype(np.float32, copy=False)
        out = planes[0].copy()
        weight = np.empty_like(out)  # one buffer for each band's term (read on every frame)
        for b in range(1, len(planes)):  # telescoping: P0 + w1 (P1 - P0) + w2 (P2 - P1) + ...
            span = max(centres[b] - centres[b - 1], 1e-6)
            np.subtract(depth, np.float32(centres[b - 1]), out=weight)
            np.divide(weight, np.float32(span), out=weight)
            np.clip(weight, np.float32(0.0), np.float32(1.0), out=weight)
            weight *= self.steps[b - 1]
            out += weight
        out[~valid] = 0.0
        return out

    def level(self, view_log_rel: np.ndarray) -> float:
        """The median of :meth:`field` over every 7th valid pixel of the view (what
        :meth:`correction` takes out), read on those pixels alone."""
        picked = np.flatnonzero(np.isfinite(view_log_rel))[::7]
        if not picked.size:
            return 0.0
        sampled = ScaleMap(tuple(plane.ravel()[picked] for plane in self.planes), self.centres)
        return float(np.median(sampled.field(view_log_rel.ravel()[picked])))

    @cached_property
    def steps(self) -> tuple[np.ndarray, ...]:
        """Each band's plane less the band's below it (the telescoping sum's terms)."""
        return tuple(self.planes[b] - self.planes[b - 1] for b in range(1, len(self.planes)))

    def correction(self, relative: np.ndarray) -> np.ndarray | None:
        """The map read on ``relative`` (a frame's relative depth, NaN or <= 0 invalid) with
        its median over the view taken out (the scale itself carries the level); None when
        the view's size is not the map's."""
        if relative.shape != self.planes[0].shape:
            return None
        with np.errstate(invalid="ignore", divide="ignore"):
            view = np.log(np.where(relative > 0, relative, np.nan))
        return self.read(view)

    def read(self, view_log_rel: np.ndarray) -> np.ndarray:
        """:meth:`field` on a view of log relative depth with its median over every 7th valid
        pixel taken out (the field as it is where none is valid)."""
        field = self.field(view_log_rel)
        valid = field[np.isfinite(view_log_rel)][::7]
        return field - np.float32(np.median(valid)) if valid.size else field


def fit_scale_map(logs: np.ndarray, u: np.ndarray, v: np.ndarray, log_rel: np.ndarray,
                  view_log_rel: np.ndarray) -> np.ndarray:
    """The log correction over the view (``view_log_rel``'s shape, 0 where its depth is
    invalid), relative to the median of ``logs``: each trusted pixel's log(metric / relative)
    at full-size pixel ``u``, ``v`` with its log relative depth ``log_rel``."""
    fitted = fit_map(logs, u, v, log_rel, view_log_rel)
    return np.zeros(view_log_rel.shape, np.float32) if fitted is None else \
        fitted.field(view_log_rel)


def fit_map(logs: np.ndarray, u: np.ndarray, v: np.ndarray, log_rel: np.ndarray,
            view_log_rel: np.ndarray) -> ScaleMap | None:
    """The :class:`ScaleMap` of :func:`fit_scale_map`'s pixels; None where nothing fits."""
    h, w = view_log_rel.shape
    rows, cols = GRID
    valid = np.isfinite(view_log_rel)
    if not valid.any() or len(logs) < MIN_CELL:
        return None
    step = max(1, -(-len(logs) // MAX_SAMPLES))
    logs, u, v = logs[::step], u[::step], v[::step]
    log_rel = np.asarray(log_rel[::step], np.float32)  # the view's precision: bands alike
    centre = float(np.median(logs))
    y = logs - centre
    edges = np.quantile(view_log_rel[valid][::7], np.linspace(0.0, 1.0, BANDS + 1))
    band = np.clip(np.searchsorted(edges[1:-1], log_rel, side="right"), 0, BANDS - 1)
    r = np.clip((v * rows / h).astype(np.int64), 0, rows - 1)
    c = np.clip((u * cols / w).astype(np.int64), 0, cols - 1)
    # Each band's cells: their median, shrunk towards the band's own median by their count;
    # a cell without pixels of a band takes that band's median (never the other bands' ratio:
    # a near object's cells must not hand the wall's ratio to the object's edge). A band
    # without pixels (the view's depth has fewer distinct values) is left out.
    centres, planes = [], []
    for b in range(BANDS):
        mine = band == b
        if np.count_nonzero(mine) < MIN_CELL:
            continue
        level = float(np.median(y[mine]))
        grid = np.full(rows * cols, level)
        filled, medians, counts = cell_medians(y[mine], (r * cols + c)[mine], rows * cols)
        # In y's precision (float32 samples, as each cell's own np.median gives).
        n, band_level = counts.astype(y.dtype), y.dtype.type(level)
        grid[filled] = band_level + (medians - band_level) * n / (n + y.dtype.type(SHRINK))
        grid = np.clip(grid.reshape(rows, cols), -MAX_CORRECTION, MAX_CORRECTION)
        centres.append(float(np.median(log_rel[mine])))
        # Bilinear across the view (cell centres at the grid's pixel centres).
        planes.append(cv2.resize(grid.astype(np.float32), (w, h),
                                 interpolation=cv2.INTER_LINEAR))
    if not planes:
        return None
    return ScaleMap(tuple(planes), tuple(centres))


def cell_medians(values: np.ndarray, cells: np.ndarray, n_cells: int
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The cells (ids below ``n_cells``) holding at least :data:`MIN_CELL` of ``values``, the
    median of each one's values (as ``np.median`` gives it, in ``values``' precision) and
    their counts: one sort by cell, then value, instead of a median per cell."""
    order = np.lexsort((values, cells))
    ordered = values[order]
    counts = np.bincount(cells, minlength=n_cells)
    starts = np.cumsum(counts) - counts
    filled = np.flatnonzero(counts >= MIN_CELL)
    low = ordered[starts[filled] + (counts[filled] - 1) // 2]
    high = ordered[starts[filled] + counts[filled] // 2]
    # np.median's mean of the middle pair: (a + b) / 2 in the values' own precision.
    return filled, (low + high) / values.dtype.type(2), counts[filled]


def carried_correction(points: np.ndarray, key_to_frame: np.ndarray, k: Intrinsics,
                       relative: np.ndarray) -> np.ndarray | None:
    """A keyframe's measurement read on a later frame: the log correction over the frame's
    view (median 0, as :meth:`ScaleMap.correction`) fitted from the measurement's metric
    ``points`` (N x 3 in the keyframe's optical frame) moved into the frame by
    ``key_to_frame`` (4x4, from the poses), projected with the frame's intrinsics ``k`` and
    compared with the frame's own ``relative`` depth there; None where too few land in view.

    A map fitted on the keyframe and read on a later frame corrects that frame with the
    keyframe's depth errors; a weak network's shape changes from frame to frame, so that adds
    flicker. The moved points, fitted on the frame's own depth, correct its own errors."""
    h, w = relative.shape
    rotation = key_to_frame[:3, :3].astype(np.float32)
    moved = points @ rotation.T + key_to_frame[:3, 3].astype(np.float32)
    z = moved[:, 2]
    with np.errstate(invalid="ignore", divide="ignore"):
        u = np.float32(k.fx) * moved[:, 0] / z + np.float32(k.cx)
        v = np.float32(k.fy) * moved[:, 1] / z + np.float32(k.cy)
    seen = (z > MIN_Z) & (u >= 0) & (u <= w - 1) & (v >= 0) & (v <= h - 1)
    u, v, z = u[seen], v[seen], z[seen]
    rel = relative[np.rint(v).astype(np.int64), np.rint(u).astype(np.int64)]
    usable = np.isfinite(rel) & (rel > 0)
    if np.count_nonzero(usable) < MIN_CELL:
        return None
    with np.errstate(invalid="ignore", divide="ignore"):
        view = np.log(np.where(relative > 0, relative, np.nan))
    log_rel = np.log(rel[usable])
    fitted = fit_map(np.log(z[usable]) - log_rel, u[usable], v[usable], log_rel, view)
    return None if fitted is None else fitted.read(view)
