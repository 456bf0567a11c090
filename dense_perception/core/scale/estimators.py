# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""One frame's metric scale for relative depth, from the floor the robot stands on or from a
registered metric depth image (each an :class:`Estimate`, or none with the reason)."""

from __future__ import annotations

import math
from typing import Any
from dataclasses import dataclass, field, replace

import numpy as np

from ..geometry.fit import FitPlan, Interp
from ..geometry.intrinsics import Intrinsics
from .ground_plane import GROUND_INLIER_TOLERANCE, level_planes, lower_view_samples, plane_offset
from .robot_floor import floor_at_feet

MIN_SUPPORT = 30              # fewest inlier points / reference pixels for a trustworthy frame
REFERENCE_MAX_PIXELS = 20000   # reference pixels used per frame (evenly spread)
REFERENCE_LOG_TOLERANCE = 0.05  # smallest inlier band of log ratios (about +-5 %)
INDEPENDENT_SAMPLES = 100     # neighbouring pixels and points share their errors: at most this
                              # many count as independent in a frame's standard error
FLOOR_SIGMA = 0.02            # ground plane: camera_height and the plane's tilt prior, ~2 %
FLOOR_SCATTER_WEIGHT = 1.5    # ground plane: the floor's own scatter about its plane, times this
REFERENCE_SIGMA = 0.01        # reference: its registration and its own calibration, ~1 %


def robust_spread(logs: np.ndarray) -> float:
    """The standard deviation of ``logs``, robustly: 1.4826 x their median absolute deviation
    (0 for none)."""
    return 1.4826 * float(np.median(np.abs(logs - np.median(logs)))) if len(logs) else 0.0


def standard_error(logs: np.ndarray, floor: float) -> float:
    """Relative standard error of a median of log ratios ``logs``: their robust spread over
    the square root of the samples that count as independent, and ``floor`` in quadrature."""
    spread = robust_spread(logs) if len(logs) else 1.0
    count = max(1, min(len(logs), INDEPENDENT_SAMPLES))
    return math.sqrt(spread ** 2 / count + floor ** 2)


@dataclass(frozen=True)
class Estimate:
    """One frame's scale (metres per relative unit), or None with the reason."""

    scale: float | None
    inlier_ratio: float = 0.0
    support: int = 0          # inlier points (ground plane) or pixels (reference)
    reason: str = ""
    normal: tuple[float, float, float] | None = None  # ground plane, camera optical frame
    sigma: float | None = None  # relative standard error (log scale) from the source's own data
    # the part of ``sigma`` that the next frame of the same view repeats (a camera height, a
    # floor that is two surfaces, a registration): averaging frames never removes it
    systematic: float = 0.0
    clock_offset: float | None = None  # motion: the pose clock's offset measured (s)
    # motion's scale map: log correction over the view (median 0) on the estimate's grid
    correction: np.ndarray | None = field(default=None, repr=False, compare=False)
    # the map itself (``core.motion.scale_map.ScaleMap``): read on a later frame's own depth
    scale_map: Any = field(default=None, repr=False, compare=False)
    # motion: the trusted pixels' metric points (N x 3, the keyframe's camera frame)
    points: np.ndarray | None = field(default=None, repr=False, compare=False)

    def correction_for(self, relative: np.ndarray) -> np.ndarray | None:
        """The log correction of the view for the frame of ``relative`` depth: the
        estimate's own (its frame's), else its map read on that depth; None without one."""
        if self.correction is not None and self.correction.shape == relative.shape:
            return self.correction
        return None if self.scale_map is None else self.scale_map.correction(relative)


DISAGREE_SIGMAS = 3.0  # two measurements of one scale farther apart than this many standard
                       # errors of both disagree


def measured(est: Estimate) -> bool:
    """Whether ``est`` is a measurement with its error (a scale and a relative error > 0)."""
    return est.scale is not None and est.sigma is not None and est.sigma > 0


def fuse_measurements(scale_a: float, sigma_a: float, scale_b: float, sigma_b: float
                      ) -> tuple[float, float] | None:
    """Two measurements of one scale with their relative errors, fused by inverse variance in
    log scale: (scale, relative error); None where they disagree, beyond
    :data:`DISAGREE_SIGMAS` standard errors of both."""
    var_a, var_b = sigma_a ** 2, sigma_b ** 2
    gap = math.log(scale_a / scale_b)
    if gap * gap > DISAGREE_SIGMAS ** 2 * (var_a + var_b):
        return None
    log = (math.log(scale_a) * var_b + math.log(scale_b) * var_a) / (var_a + var_b)
    return math.exp(log), math.sqrt(var_a * var_b / (var_a + var_b))


def fused_systematic(sigma_a: float, systematic_a: float, sigma_b: float, systematic_b: float
                     ) -> float:
    """The systematic part of :func:`fuse_measurements`' result: each source's own, weighted
    as its scale is (inverse variance), in quadrature (two sources' systematic errors are
    independent)."""
    var_a, var_b = sigma_a ** 2, sigma_b ** 2
    return math.hypot(var_b * systematic_a, var_a * systematic_b) / (var_a + var_b)


def on_model_grid(plan: FitPlan, depth: np.ndarray, valid: np.ndarray | None, k: Intrinsics
                  ) -> tuple[np.ndarray, Intrinsics]:
    """A model output ``depth`` (and the camera's ``k``) on the model's grid (``output_resolution:
    model``), NaN where the rectified view looked past the raw frame (``valid`` 0).

    The estimators' one grid, whatever grid is published: the input grid holds the same depth
    resampled, and the ground plane sampled on it other rays (a scale 6 % apart on the two).
    """
    on_grid = plan.unfit(depth, "model", Interp.DEPTH, fill=np.nan)
    if valid is not None:
        seen = plan.unfit(valid, "model", Interp.NEAREST, fill=0) != 0
        on_grid = np.where(seen, on_grid, np.float32(np.nan))
    return on_grid, plan.published_intrinsics(k, "model")


def ground_plane_scale(depth: np.ndarray, k: Intrinsics, camera_height: float,
                       max_tilt_deg: float = 30.0, min_inlier_ratio: float = 0.3) -> Estimate:
    """Scale from the floor the robot stands on: ``camera_height`` / the distance of its plane.

    The level planes of the lower view holding at least half of ``min_inlier_ratio`` of it are
    found (:func:`.ground_plane.level_planes`: half, so that a floor too small to use is still
    recognised as the floor and the frame gives no estimate, rather than a larger desk giving
    one 2.5x off); the floor is the one the feet of the image columns vote for
    (:func:`.robot_floor.floor_at_feet`): the level surface seen lowest in the image with
    nothing below it. The frame gives no estimate when

    * no column's foot is on a level plane (a wall, clutter), or the plane at the feet has
      something beneath it seen in front of it in more columns than not (a desk's front
      face: a raised surface, the floor out of view), or something above it seen in front of
      it in :data:`.robot_floor.FOOT_CONTEST` as many columns (a strip of the robot's own
      floor before a drop, too small to be a plane; the robot's body in view);
    * a second level plane at another height (beyond the inlier band) holds the feet of at
      least :data:`.robot_floor.FOOT_CONTEST` as many columns as the floor: the robot may
      stand on either (beside a step or a stage edge), the reason names both and their
      heights' ratio;
    * the floor holds less than ``min_inlier_ratio`` of the lower view's valid points (the
      support threshold: the robot's own floor alone, whatever else is level in view).
    """
    points, cells = lower_view_samples(depth, k)
    if len(points) < MIN_SUPPORT:
        return Estimate(None, reason=f"only {len(points)} valid points in the lower view")
    rejected: list[str] = []
    planes = level_planes(points, max_tilt_deg, cells=cells, min_share=min_inlier_ratio / 2.0,
                          min_points=MIN_SUPPORT, rejected=rejected)
    if not planes:
        return Estimate(None, reason=f"no plane within {max_tilt_deg:g} deg of level "
                                     "in the lower view" + "".join(f"; {r}" for r in rejected[:1]))
    best, reason = floor_at_feet(points, cells, planes, max_tilt_deg)
    if best is None:
        return Estimate(None, reason=reason)
    count = int(round(best.share * len(points)))
    # The error: the scatter of the floor's points about its plane, relative to its distance,
    # as a standard error, and that scatter itself (FLOOR_SCATTER_WEIGHT): a floor's scatter in
    # relative depth is systematic, not noise that averages out. A plane through two level
    # surfaces (a road and the pavement beside it, 15 cm apart) fits both within the inlier
    # band and scatters by half their height difference; a true floor scatters by its noise.
    offsets = plane_offset(points, np.asarray(best.normal, dtype=points.dtype), best.d)
    near = np.abs(offsets) <= GROUND_INLIER_TOLERANCE
    logs = np.log1p(offsets[near])
    scatter = FLOOR_SCATTER_WEIGHT * robust_spread(logs)
    systematic = math.hypot(FLOOR_SIGMA, scatter)
    sigma = math.hypot(standard_error(logs, FLOOR_SIGMA), scatter)
    result = Estimate(camera_height / best.d, best.share, count,
                      normal=tuple(float(x) for x in best.normal), sigma=sigma,
                      systematic=systematic)
    if best.share < min_inlier_ratio or count < MIN_SUPPORT:
        return replace(result, scale=None, reason=(
            f"the robot's floor (the level plane at the foot of the view) holds "
            f"{best.share:.0%} of the lower view (< {min_inlier_ratio:.0%})"))
    return result


def reference_scale(relative: np.ndarray, reference: np.ndarray, plan: FitPlan,
                    output_resolution: str, min_inlier_ratio: float = 0.3) -> Estimate:
    """Scale from a metric depth image registered to the camera (same view, any resolution).

    ``relative`` is on the published grid; ``reference`` is metres (NaN or <= 0 invalid) over
    the camera's field of view. Each valid reference pixel is mapped to the published grid (for
    a plan that rectifies raw frames, through the same undistortion, R and P as the image) and
    the ratio metric / relative taken there; outliers are rejected in log space (beyond 3 robust
    standard deviations of the median, at least :data:`REFERENCE_LOG_TOLERANCE`); the scale is
    the median ratio of the inliers.
    """
    rv, ru = np.nonzero(np.isfinite(reference) & (reference > 0))
    if len(rv) < MIN_SUPPORT:
        return Estimate(None, reason=f"only {len(rv)} valid reference pixels")
    if len(rv) > REFERENCE_MAX_PIXELS:  # a dense depth camera: an even subset is as good
        keep = slice(None, None, -(-len(rv) // REFERENCE_MAX_PIXELS))
        rv, ru = rv[keep], ru[keep]
    rh, rw = reference.shape
    # Reference pixel centres -> camera pixels (the same field of view) -> published grid.
    u = (ru + 0.5) * plan.frame_width / rw - 0.5
    v = (rv + 0.5) * plan.frame_height / rh - 0.5
    pu, pv = plan.camera_to_published(u, v, output_resolution)
    pu, pv = (np.rint(np.nan_to_num(x, nan=-1.0)).astype(np.int64) for x in (pu, pv))  # NaN: unseen
    h, w = relative.shape
    inside = (pu >= 0) & (pu < w) & (pv >= 0) & (pv < h)
    rel = relative[pv[inside], pu[inside]]
    metric = reference[rv[inside], ru[inside]]
    usable = np.isfinite(rel) & (rel > 0)
    log_ratio = np.log(metric[usable].astype(np.float64)) - np.log(rel[usable].astype(np.float64))
    if len(log_ratio) < MIN_SUPPORT:
        return Estimate(None, reason=f"only {len(log_ratio)} reference pixels where the model "
                                     "saw valid depth")
    centre = float(np.median(log_ratio))
    spread = 1.4826 * float(np.median(np.abs(log_ratio - centre)))
    inliers = np.abs(log_ratio - centre) <= max(3.0 * spread, REFERENCE_LOG_TOLERANCE)
    count = int(inliers.sum())
    ratio = count / len(log_ratio)
    result = Estimate(math.exp(float(np.median(log_ratio[inliers]))), ratio, count,
                      sigma=standard_error(log_ratio[inliers], REFERENCE_SIGMA),
                      systematic=REFERENCE_SIGMA)
    if ratio < min_inlier_ratio or count < MIN_SUPPORT:
        return replace(result, scale=None, reason=(
            f"reference ratios agree on only {ratio:.0%} of the pixels (< {min_inlier_ratio:.0%})"))
    return result


def reference_to_metres(image: np.ndarray, encoding: str) -> np.ndarray:
    """A 16UC1 (millimetres, 0 invalid) or 32FC1 (metres) depth image as float32 metres."""
    if encoding == "16UC1":
        metres = image.astype(np.float32) / 1000.0
        metres[image == 0] = np.nan
        return metres
    if encoding == "32FC1":
        return image.astype(np.float32, copy=False)
    raise ValueError(f"reference depth must be 16UC1 (mm) or 32FC1 (m), got '{encoding}'")
