# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Metric scale for relative depth (DA3, model_type depth): the sources, the temporal filter, and
what a frame's scale is (its report and diagnostics; the run's tally: :mod:`.scale_tally`).

DA3-Small's depth is right up to one unknown factor per image; this turns it into metres:

* :func:`~.estimators.ground_plane_scale`: the floor the robot stands on, the level plane at
  the foot of the view in the relative point cloud of its lower part (RANSAC,
  :mod:`.ground_plane`), with a prior on its tilt; scale = ``camera_height`` / the plane's
  distance from the optical centre (no IMU, no TF).
* :func:`~.estimators.reference_scale`: median of metric / relative ratios over the pixels of a
  registered metric depth image (LiDAR projection, ToF, stereo), outliers rejected in log space.
* :class:`ScaleFilter` (:mod:`.scale_filter`): a robust exponential filter in log space with
  a step detector and the variance of its scale (a held one expires by its error).
* :class:`DepthScaler`: one of the sources (and ``depth_scale_check``'s second,
  :mod:`.cross_check`) plus the filter, or, for unrelated photos, each frame's own estimate;
  what the node, the offline command and the bench call once per frame.

Scale only, no shift: DA3's any-view models (Small included) predict depth along with camera
rays, so depth x ray is a 3D point cloud that is right up to a similarity (the multi-view
training fixes geometry, not units). A shift would bend that geometry (planes would stop being
planes), and a scale-only ratio is robust with sparse references, where a least-squares scale
+ shift is pulled by outliers and ill-conditioned on references spanning little depth.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Hashable

import numpy as np

from ..geometry.fit import FitPlan
from ..geometry.intrinsics import Intrinsics
from .cross_check import CHECKED_SOURCES, cross_check
from .estimators import Estimate, ground_plane_scale, measured, reference_scale
from .model_metres import ModelMetres
from .scale_filter import ScaleFilter
from .unit_check import beyond_max_depth
from ..setting_names import NODE, Syntax

ESTIMATED_SOURCES = ("ground_plane", "reference_depth", "motion")

STALE_TIME_CONSTANTS = 10.0   # WARN when the held scale is older than this many time constants
GUESSED_CAMERA = "guessed pinhole (fallback_hfov_deg)"
RESTARTED = ("the camera's intrinsics changed (CameraInfo K, D, R, P, size, ROI or binning, or "
             "the pinhole guess and a CameraInfo): the scale filter started afresh")


def scale_is_estimated(metric_depth: bool, source: str) -> bool:
    """Whether a frame's scale is estimated (ground plane, reference depth, motion): the one
    answer for the node, the offline command and the pipeline. 'none' and 'fixed' do not
    change per frame. A metric model's metres (``metric_depth``) are checked and corrected by
    an estimated source (:mod:`.model_metres`) the same way."""
    del metric_depth  # the same answer: a metric model's metres are one more source
    return source in ESTIMATED_SOURCES


@dataclass(frozen=True)
class ScaleConfig:
    """How the scale of relative depth is found (mirrors the node's parameters)."""

    source: str = "none"
    fixed_scale: float = 1.0          # relative_depth_scale: metres per unit for 'fixed'
    camera_height: float = 0.0        # metres above the floor, for 'ground_plane'
    time_constant: float = 5.0        # seconds, of the temporal filter
    max_tilt_deg: float = 30.0        # ground plane: largest angle between its normal and +y
    min_inlier_ratio: float = 0.3     # fewer inliers than this: the frame gives no scale
    max_age: float = 50.0             # s without a good estimate, then the scale expires; 0: never
    per_frame: bool = False           # unrelated photos: each its own estimate, no filter
    max_scale_error: float = 0.08     # metres only while 2 sigma of the scale is within this
    metric_error: float = 0.15        # a metric network's own relative error (metric_depth_error)
    max_depth: float = 0.0            # metres; an estimate putting the view beyond it is refused
    check: str = "none"               # depth_scale_check: a second source (ground_plane)

    def problem(self, syntax: Syntax = NODE) -> str | None:
        """Why these settings cannot work together, or None (settings named in ``syntax``)."""
        floor = "depth_scale_source" if self.source == "ground_plane" else \
            "depth_scale_check" if self.check == "ground_plane" else ""
        if floor and not self.camera_height > 0:
            return (f"{syntax.phrase(floor, 'ground_plane')} needs "
                    f"{syntax.name('camera_height')}: the optical centre's height above the "
                    f"floor in metres (e.g. {syntax.example('camera_height', 0.35)})")
        return None  # each value alone is checked in the settings table


def relative_output_problem(metric_model: bool, source: str, max_depth: float,
                            depth_encoding: str, syntax: Syntax = NODE) -> str | None:
    """Why metre-only settings cannot apply to this depth, or None (settings named in
    ``syntax``).

    With a relative model and ``depth_scale_source: none`` the depth has no unit: 16UC1
    "millimetres" and a ``max_depth`` in metres would pass relative units off as metres.
    """
    if metric_model or source != "none":
        return None
    n = syntax.name
    none = syntax.phrase("depth_scale_source", "none")
    fix = (f"set {n('depth_scale_source')} to fixed ({n('relative_depth_scale')} = metres per "
           f"unit), ground_plane (with {n('camera_height')}) or reference_depth")
    if depth_encoding == "16UC1":
        return (f"{syntax.phrase('depth_encoding', '16UC1')} means millimetres, but this model's "
                f"depth is relative ({none}); use {syntax.phrase('depth_encoding', '32FC1')}, "
                f"or {fix}")
    if max_depth > 0:
        return (f"{n('max_depth')} is in metres, but this model's depth is relative ({none}); "
                f"set {n('max_depth')} to 0, or {fix}")
    return None


# ---- over time -----------------------------------------------------------------------------
@dataclass(frozen=True)
class ScaleReport:
    """What the depth's scale is after a frame, for products, diagnostics and summaries."""

    source: str
    scale: float | None          # metres per relative unit in use; None = relative
    metric: bool                 # True when the depth is metres
    estimate: float | None = None  # this frame's own estimate
    inlier_ratio: float = 0.0
    spread: float = 0.0          # relative, over the filter's window
    age_s: float | None = None   # since the last good estimate (frame stamps)
    reason: str = ""             # why this frame gave no estimate (or its estimate was not used)
    stale: bool = False          # the held scale is older than STALE_TIME_CONSTANTS
    expired: bool = False        # the scale was forgotten: no good estimate for max_age_s
    max_age_s: float = 0.0       # depth_scale_max_age in force
    per_frame: bool = False      # each frame its own estimate, no filter (unrelated photos)
    guessed: bool = False        # this frame's camera was the pinhole guess (fallback_hfov_deg)
    restarted: bool = False      # the camera's intrinsics changed: the filter started afresh
    sigma: float | None = None   # relative standard error of the scale in use (None: unknown)
    estimate_sigma: float | None = None  # this frame's estimate's own relative error
    bounded_out: bool = False    # withheld: 2 sigma exceeds max_scale_error
    disagrees: bool = False      # this frame's estimate is beyond both errors from the scale
    clock_offset: float | None = None  # motion: the pose clock's offset measured (s)
    metric_model: bool = False   # the model's own metres, checked and corrected by the source

    def units(self) -> str:
        """A short phrase for diagnostics and summaries."""
        if self.source == "model":
            return "metres (metric model)"
        if self.metric_model:
            return (f"metres (metric model, checked by {self.source})" if self.scale is not None
                    else f"the metric model's metres, checked by {self.source}, are not sure "
                    "enough (depth/image and points withheld)")
        if self.source == "fixed":
            return f"metres (asserted: relative_depth_scale = {self.scale:g} m per unit)"
        if self.source == "none":
            return "relative (unitless; depth_scale_source: none)"
        if self.scale is None and self.bounded_out:
            return (f"relative: the scale from {self.source} is not sure enough (depth/image "
                    "and points withheld)")
        if self.scale is None and self.expired:
            return (f"relative: the scale from {self.source} expired (depth/image and points "
                    "withheld)")
        if self.scale is None:
            return f"relative: no scale from {self.source} yet (depth/image and points withheld)"
        return f"metres (scale from {self.source})"


def fixed_scale_report(metric_model: bool, source: str, relative_depth_scale: float
                       ) -> ScaleReport:
    """The report for depth whose unit does not change per frame (metric model, none, fixed)."""
    if metric_model:
        return ScaleReport("model", 1.0, True)
    if source == "fixed":
        return ScaleReport("fixed", relative_depth_scale, True)
    return ScaleReport("none", None, False)


def scale_diagnostics(report: ScaleReport) -> tuple[dict[str, str], str]:
    """Key/value strings for diagnostics (and summaries), and a warning ("" when none).

    Warns while an estimated source has no scale (none found yet, or expired after
    ``depth_scale_max_age``: metric outputs are withheld) and while the scale in use is held
    from an estimate older than :data:`STALE_TIME_CONSTANTS` time constants (before it expires,
    or forever with a max age of 0).
    """
    values = {"depth units": report.units(), "depth scale source": report.source}
    if report.source not in ESTIMATED_SOURCES:
        if report.source == "fixed":
            values["depth scale (m per unit)"] = f"{report.scale:.6g}"
        return values, ""
    values.update({
        "depth scale (m per unit)": "-" if report.scale is None else f"{report.scale:.6g}",
        "depth scale, this frame": "-" if report.estimate is None else f"{report.estimate:.6g}",
        "depth scale spread (%)": f"{100.0 * report.spread:.2f}",
        "depth scale inlier ratio": f"{report.inlier_ratio:.3f}",
        "depth scale age (s)": "-" if report.age_s is None else f"{report.age_s:.2f}",
        "depth scale error, 2 sigma (%)": "-" if report.sigma is None else
        f"{200.0 * report.sigma:.1f}",
        "depth scale error of this frame, 2 sigma (%)": "-" if report.estimate_sigma is None
        else f"{200.0 * report.estimate_sigma:.1f}",
        "depth scale note": report.reason or "-",
        **({} if report.source != "motion" else {
            "pose clock offset (ms)": "-" if report.clock_offset is None else
            f"{1000.0 * report.clock_offset:+.0f} (the image seen at pose time stamp + this)"}),
        "depth scale camera": GUESSED_CAMERA if report.guessed else "CameraInfo"})
    if report.scale is None:
        why = f": {report.reason}" if report.reason else ""
        if report.bounded_out:
            return values, (f"depth scale from {report.source} not sure enough{why}; "
                            "depth/image and points are withheld until it is")
        if report.expired:
            return values, (f"depth scale expired: no trustworthy estimate for "
                            f"{report.age_s:.1f} s (> depth_scale_max_age "
                            f"{report.max_age_s:g} s){why}; depth/image and points are "
                            "withheld until a new one is found")
        return values, (f"no depth scale from {report.source} yet{why}; depth/image and points "
                        "are withheld until one is found")
    if report.disagrees:
        return values, (f"this frame's {report.source} estimate {report.estimate:.4g} "
                        f"disagrees with the scale in use {report.scale:.4g} beyond both "
                        "errors (3 sigma): the sources or the scene changed")
    if report.stale:
        return values, (f"depth scale held for {report.age_s:.1f} s (no trustworthy estimate: "
                        f"{report.reason})")
    if report.guessed and report.source == "ground_plane":
        return values, ("depth scale from the floor seen through a guessed camera (no usable "
                        "CameraInfo: pinhole guess from fallback_hfov_deg): the metres are as "
                        "wrong as the guess")
    return values, ""


class DepthScaler:
    """One scale source plus the temporal filter; call :meth:`update` once per frame.

    With ``config.per_frame`` (a folder of unrelated photos) there is no filter and no hold:
    each frame's scale is its own estimate, or none (its depth is withheld).
    """

    def __init__(self, config: ScaleConfig) -> None:
        problem = config.problem()
        if problem:
            raise ValueError(problem)
        self.config = config
        self.filter = ScaleFilter(config.time_constant, config.max_age)
        self.model = ModelMetres()  # a metric network's error as this camera finds it
        self.last: ScaleReport = ScaleReport(config.source, None, False,
                                             reason="no frame yet")
        self._camera: Hashable | None = None  # the camera the filter's estimates were made with

    def configure(self, config: ScaleConfig) -> None:
        """New settings; the filter's state is kept unless the source or the camera's height
        changes (estimates of another height are another calibration, not noise)."""
        problem = config.problem()
        if problem:
            raise ValueError(problem)
        if config.source != self.config.source or \
                config.camera_height != self.config.camera_height:
            self.filter.reset()
            self.model.reset()
        self.filter.time_constant = config.time_constant
        self.filter.max_age = config.max_age
        self.config = config

    def update(self, t: float, depth: np.ndarray, k: Intrinsics, plan: FitPlan,
               output_resolution: str, reference: np.ndarray | None = None, *,
               camera: Hashable | None = None, guessed: bool = False,
               estimate: Estimate | None = None, metric_model: bool = False,
               bound: bool = True) -> ScaleReport:
        """Estimate this frame's scale from ``depth`` (relative, on the published grid with
        intrinsics ``k``), filter it, and report the scale to use (None: not found yet).

        ``camera``: what the intrinsics came from (the CameraInfo's camera model, or the pinhole
        guess with its size and field of view; ``guessed`` for the latter). The filter belongs
        to one camera: when ``camera`` changes it starts afresh, so estimates made with a
        guessed camera never mix with those of the real calibration (a floor seen through a
        60 deg guess of a 90 deg lens is 1.7x too near), nor those of a zoom or binning step.
        ``estimate``: this frame's estimate made elsewhere, for the source 'motion'
        (``core.motion``: the camera's motion and the image motion). ``metric_model``: the
        depth is a metric network's metres, and the source checks them
        (:func:`.model_metres.with_model_metres`). ``bound``: withhold a scale whose error
        exceeds ``max_scale_error`` here (False: the caller judges the error of what it
        publishes, :func:`with_output_error`).
        """
        config = self.config
        restarted = camera is not None and self._camera is not None and camera != self._camera
        if camera is not None:
            self._camera = camera
        if restarted and not config.per_frame:
            self.filter.reset()
            self.model.reset()
        if config.source == "ground_plane":
            est = ground_plane_scale(depth, k, config.camera_height, config.max_tilt_deg,
                                     config.min_inlier_ratio)
        elif config.source == "motion":
            est = estimate or Estimate(None, reason="no camera motion for this frame")
        elif reference is None:
            est = Estimate(None, reason="no reference depth for this frame")
        else:
            est = reference_scale(depth, reference, plan, output_resolution,
                                  config.min_inlier_ratio)
        check_disagrees = False  # a second source (depth_scale_check) beside the first
        if config.check == "ground_plane" and config.source in CHECKED_SOURCES:
            est, check_disagrees = cross_check(est, ground_plane_scale(
                depth, k, config.camera_height, config.max_tilt_deg, config.min_inlier_ratio),
                config.source, config.check)
        est = beyond_max_depth(est, depth, config.source, config.max_depth)
        model_disagrees, own_only = False, False
        if metric_model:  # the network's own metres, where nothing measured them
            own_only = not measured(est)
            est, model_disagrees = self.model.fuse(est, config.source, config.metric_error)
        disagrees = model_disagrees or check_disagrees
        if config.per_frame:
            too_unsure = "" if est.scale is None else error_bound_problem(est.sigma, config)
            bounded_out = bool(too_unsure)
            reason = est.reason or too_unsure
            scale = None if bounded_out else est.scale
            self.last = ScaleReport(config.source, scale, scale is not None, est.scale,
                                    est.inlier_ratio, reason=reason, per_frame=True,
                                    guessed=guessed, sigma=est.sigma, estimate_sigma=est.sigma,
                                    bounded_out=bounded_out, disagrees=disagrees,
                                    metric_model=metric_model)
            return self.last
        scale = self.filter.update(t, None if own_only else est.scale, est.sigma,
                                   est.systematic)
        if check_disagrees:
            scale = None  # the two sources disagree: neither, nor the scale held, is trusted
        good_t = self.filter.last_good_t
        age = None if good_t is None else max(t - good_t, 0.0)
        sigma = self.filter.sigma
        own_error = self.model.error(config.metric_error)
        if own_only and (scale is None or sigma is None or sigma > own_error):
            scale, sigma = 1.0, own_error  # no surer measurement held
        reason = est.reason or self.filter.note
        too_unsure = "" if scale is None or not bound else error_bound_problem(sigma, config)
        bounded_out = bool(too_unsure)
        if bounded_out:
            reason = f"{too_unsure}; {reason}" if reason else too_unsure
        self.last = ScaleReport(
            config.source, None if bounded_out else scale,
            scale is not None and not bounded_out, est.scale, est.inlier_ratio,
            self.filter.spread(), age, reason,
            stale=age is not None and age > STALE_TIME_CONSTANTS * config.time_constant,
            expired=self.filter.expired, max_age_s=config.max_age, guessed=guessed,
            restarted=restarted, sigma=sigma, estimate_sigma=est.sigma,
            bounded_out=bounded_out, disagrees=self.filter.disagrees or disagrees,
            clock_offset=est.clock_offset, metric_model=metric_model)
        return self.last


def error_bound_problem(sigma: float | None, config: ScaleConfig) -> str:
    """Why a scale with relative error ``sigma`` may not be published under
    ``config.max_scale_error`` (2 sigma within it; 1 = no bound), or "" when it may."""
    if sigma is None or config.max_scale_error >= 1.0 or 2.0 * sigma <= config.max_scale_error:
        return ""
    return (f"the scale's error bound (2 sigma = {200.0 * sigma:.1f} %) exceeds "
            f"max_scale_error ({100.0 * config.max_scale_error:g} %)")


def with_output_error(report: ScaleReport, sigma: float | None, config: ScaleConfig,
                      why: str = "") -> ScaleReport:
    """``report`` with ``sigma``, the relative error of the scale actually published (the
    motion scale carried by the temporal alignment: :mod:`..motion.output_error`), in place of
    the filter's (which stands where ``sigma`` is None), and withheld when 2 sigma exceeds
    ``config.max_scale_error``, the reason saying ``why`` (its largest part) where given."""
    if report.scale is None:
        return report
    sigma = report.sigma if sigma is None else sigma
    problem = error_bound_problem(sigma, config)
    if not problem:
        return replace(report, sigma=sigma)
    problem = f"{problem}: {why}" if why else problem
    return replace(report, scale=None, metric=False, sigma=sigma, bounded_out=True,
                   reason=f"{problem}; {report.reason}" if report.reason else problem)


def withholds_depth(report: ScaleReport | None) -> bool:
    """True when depth must not be published or written: an estimated source has no scale yet.

    (Relative depth with ``none`` is published, unitless, as the user chose; depth that will
    turn into metres once a scale is found is withheld until then, so one topic or file set
    never holds two units.)
    """
    return report is not None and report.source in ESTIMATED_SOURCES and not report.metric
