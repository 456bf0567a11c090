"""Metric scale for relative depth (DA3): ground plane, reference depth, and a temporal filter.

DA3-Small's depth is right only up to one unknown factor per image. This module turns it into
metres, without ROS:

* :func:`fit_ground_plane`: RANSAC plane in the relative point cloud of the lower part of the
  view, with a prior on its tilt; scale = ``camera_height`` / the plane's distance from the
  optical centre (no IMU, no TF).
* :func:`reference_scale`: median of metric / relative ratios over the pixels of a registered
  metric depth image (LiDAR projection, ToF, stereo), outliers rejected in log space.
* :class:`ScaleFilter`: a robust exponential filter in log space with a time constant, a step
  detector for scene changes, and "hold the last good scale" when a frame gives none.
* :class:`DepthScaler`: one of the sources plus the filter; what the node, the offline command
  and the bench call once per frame.

Scale only, no shift: DA3's any-view models (Small included) predict depth along with camera
rays, so depth x ray is a 3D point cloud that is right up to a similarity (the multi-view
training fixes geometry, not units). A shift would bend that geometry (planes would stop being
planes), and a scale-only ratio is robust with sparse references, where a least-squares
scale + shift is pulled by outliers and ill-conditioned when the references span little depth.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, replace

import numpy as np

from .fit import FitPlan
from .intrinsics import Intrinsics

SCALE_SOURCES = ("none", "fixed", "ground_plane", "reference_depth")
ESTIMATED_SOURCES = ("ground_plane", "reference_depth")

GROUND_SAMPLE_POINTS = 2000   # about this many points of the lower view go to the RANSAC
GROUND_ITERATIONS = 256       # candidate planes, scored all at once
GROUND_INLIER_TOLERANCE = 0.04  # inlier band, as a fraction of the plane's distance
GROUND_MIN_BAND = 0.005       # the refinement's band never narrows below this (0.5 % of d)
GROUND_REFINE_ROUNDS = 4      # least-squares refits, each on the points of a narrowed band
MIN_SUPPORT = 30              # fewest inlier points / reference pixels for a trustworthy frame
REFERENCE_MAX_PIXELS = 20000   # reference pixels used per frame (evenly spread)
REFERENCE_LOG_TOLERANCE = 0.05  # smallest inlier band of log ratios (about +-5 %)
STEP_MIN_LOG = 0.05           # smallest change the step detector takes over at once (about 5 %)
STALE_TIME_CONSTANTS = 10.0   # WARN when the held scale is older than this many time constants


@dataclass(frozen=True)
class ScaleConfig:
    """How the scale of relative depth is found (mirrors the node's parameters)."""

    source: str = "none"
    fixed_scale: float = 1.0          # relative_depth_scale: metres per unit for 'fixed'
    camera_height: float = 0.0        # metres above the floor, for 'ground_plane'
    time_constant: float = 5.0        # seconds, of the temporal filter
    max_tilt_deg: float = 30.0        # ground plane: largest angle between its normal and +y
    min_inlier_ratio: float = 0.3     # fewer inliers than this: the frame gives no scale

    def problem(self) -> str | None:
        """Why this configuration is impossible, or None."""
        if self.source not in SCALE_SOURCES:
            return (f"depth_scale_source '{self.source}' is unknown; allowed: "
                    f"{', '.join(SCALE_SOURCES)}")
        if self.source == "ground_plane" and not self.camera_height > 0:
            return ("depth_scale_source 'ground_plane' needs camera_height: the optical centre's "
                    "height above the floor in metres (e.g. -p camera_height:=0.35)")
        if not self.time_constant > 0:
            return f"depth_scale_time_constant must be > 0 s, got {self.time_constant}"
        return None


def relative_output_problem(metric_model: bool, source: str, max_depth: float,
                            depth_encoding: str) -> str | None:
    """Why metre-only settings cannot apply to this depth, or None.

    With a relative model and ``depth_scale_source: none`` the depth has no unit: 16UC1
    "millimetres" and a ``max_depth`` in metres would pass relative units off as metres.
    """
    if metric_model or source != "none":
        return None
    fix = ("set depth_scale_source to fixed (relative_depth_scale = metres per unit), "
           "ground_plane (with camera_height) or reference_depth")
    if depth_encoding == "16UC1":
        return ("depth_encoding 16UC1 means millimetres, but this model's depth is relative "
                f"(depth_scale_source: none); use 32FC1, or {fix}")
    if max_depth > 0:
        return ("max_depth is in metres, but this model's depth is relative (depth_scale_source: "
                f"none); set max_depth to 0, or {fix}")
    return None


# ---- per-frame estimators -------------------------------------------------------------------
@dataclass(frozen=True)
class Estimate:
    """One frame's scale (metres per relative unit), or None with the reason."""

    scale: float | None
    inlier_ratio: float = 0.0
    support: int = 0          # inlier points (ground plane) or pixels (reference)
    reason: str = ""
    normal: tuple[float, float, float] | None = None  # ground plane, camera optical frame


def ground_points(depth: np.ndarray, k: Intrinsics, lower_fraction: float = 0.5,
                  max_points: int = GROUND_SAMPLE_POINTS) -> np.ndarray:
    """N x 3 back-projected points of the lower ``lower_fraction`` of the view (valid only).

    Sampled on a regular grid so that about ``max_points`` come back whatever the image size.
    """
    h, w = depth.shape
    top = int(h * (1.0 - lower_fraction))
    stride = max(1, int(math.sqrt((h - top) * w / max_points)))
    v, u = np.mgrid[top:h:stride, 0:w:stride]
    z = depth[v, u]
    keep = np.isfinite(z) & (z > 0)
    z, u, v = z[keep], u[keep], v[keep]
    return np.stack([(u - k.cx) / k.fx * z, (v - k.cy) / k.fy * z, z], axis=1)


def fit_ground_plane(points: np.ndarray, max_tilt_deg: float = 30.0,
                     tolerance: float = GROUND_INLIER_TOLERANCE,
                     iterations: int = GROUND_ITERATIONS, seed: int = 0
                     ) -> tuple[np.ndarray, float, np.ndarray] | None:
    """RANSAC plane below the camera: (unit normal n, distance d > 0, inlier mask), or None.

    Points p on the plane satisfy n . p = d, with n pointing from the camera to the plane
    (optical frame: +y is down). Candidates whose normal is more than ``max_tilt_deg`` from +y
    (walls, the ceiling) are rejected before scoring. Inliers lie within ``tolerance`` x d of
    the plane (a scale-free band). Every candidate is scored at once (one N x iterations
    matrix product).

    The best candidate is refined by least squares (SVD), each round on the points within a
    band narrowed to the floor's own scatter: 3 robust standard deviations (1.4826 x the
    median absolute residual) of the previous round's inliers, between :data:`GROUND_MIN_BAND`
    and ``tolerance``. A fixed ``tolerance`` band also holds the foot of every wall or box
    standing on the floor (their points within ``tolerance`` x d of it); all on one side of
    the plane, they tilt the least-squares fit and bias the distance (about 1 % for a level
    camera facing a wall). The narrowed band keeps them out and keeps a noisy floor's points
    in. The returned inlier mask is still the ``tolerance`` band around the refined plane.
    """
    n_points = len(points)
    if n_points < 3:
        return None
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n_points, size=(iterations, 3))
    a, b, c = points[idx[:, 0]], points[idx[:, 1]], points[idx[:, 2]]
    normals = np.cross(b - a, c - a)
    length = np.linalg.norm(normals, axis=1)
    ok = length > 1e-12
    normals, a = normals[ok] / length[ok, None], a[ok]
    dist = np.einsum("ij,ij->i", normals, a)
    flip = dist < 0
    normals[flip] *= -1.0
    dist = np.abs(dist)
    ok = (normals[:, 1] >= math.cos(math.radians(max_tilt_deg))) & (dist > 1e-9)
    normals, dist = normals[ok], dist[ok]
    if not len(normals):
        return None
    # Scored in float32 with the normals divided by the distance, so that a point on a plane
    # gives 1. Written as three broadcast multiply-adds, not a matrix product: with an inner
    # size of 3, OpenBLAS's thread start-up costs 100x the arithmetic on a busy machine (the
    # node runs this beside XNNPACK's threads).
    p32 = points.astype(np.float32)
    scaled = (normals / dist[:, None]).astype(np.float32)
    score = p32[:, 0:1] * scaled[None, :, 0]
    score += p32[:, 1:2] * scaled[None, :, 1]
    score += p32[:, 2:3] * scaled[None, :, 2]
    score -= 1.0
    np.abs(score, out=score)
    counts = np.count_nonzero(score <= tolerance, axis=0)
    best = int(np.argmax(counts))
    inliers = score[:, best] <= tolerance
    band = tolerance
    for _ in range(GROUND_REFINE_ROUNDS):
        if inliers.sum() < 3:
            return None
        chosen = points[inliers]
        centre = chosen.mean(axis=0)
        normal = np.linalg.svd(chosen - centre, full_matrices=False)[2][2]
        if normal[1] < 0:
            normal = -normal
        d = float(np.dot(normal, centre))  # 3-vectors: no BLAS
        if d <= 0:
            return None
        residual = np.abs(np.einsum("ij,j->i", points, normal) / d - 1.0)  # fraction of d
        # Narrow the band to the scatter of this round's inliers (see the docstring).
        scatter = 3.0 * 1.4826 * float(np.median(residual[inliers]))
        band = min(band, max(scatter, GROUND_MIN_BAND))
        inliers = residual <= band
    if normal[1] < math.cos(math.radians(max_tilt_deg)):
        return None
    return normal, d, residual <= tolerance


def ground_plane_scale(depth: np.ndarray, k: Intrinsics, camera_height: float,
                       max_tilt_deg: float = 30.0, min_inlier_ratio: float = 0.3) -> Estimate:
    """Scale from the floor: ``camera_height`` / the relative plane distance (see module doc)."""
    points = ground_points(depth, k)
    if len(points) < MIN_SUPPORT:
        return Estimate(None, reason=f"only {len(points)} valid points in the lower view")
    found = fit_ground_plane(points, max_tilt_deg)
    if found is None:
        return Estimate(None, reason=f"no plane within {max_tilt_deg:g} deg of level "
                                     "in the lower view")
    normal, d, inliers = found
    count = int(inliers.sum())
    ratio = count / len(points)
    result = Estimate(camera_height / d, ratio, count,
                      normal=tuple(float(x) for x in normal))
    if ratio < min_inlier_ratio or count < MIN_SUPPORT:
        return replace(result, scale=None, reason=(
            f"ground plane holds {ratio:.0%} of the lower view (< {min_inlier_ratio:.0%})"))
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
    result = Estimate(math.exp(float(np.median(log_ratio[inliers]))), ratio, count)
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


# ---- over time -----------------------------------------------------------------------------
class ScaleFilter:
    """Robust exponential filter of the scale in log space, with a time constant in seconds.

    * Each good estimate moves the log scale by ``alpha = 1 - exp(-dt / time_constant)`` of its
      residual (by 1/n for the n-th estimate while that is larger: a running mean at first),
      the residual clipped to 3 robust standard deviations of the window (Huber-like: one wild
      frame moves it little). ``dt`` comes from the frames' own stamps, so the result
      does not depend on how fast frames are processed.
    * A step (a new scene): when every estimate of the last third of the time constant lies on
      the same side, farther than 3 standard deviations of the window (and 5 %), the filter
      jumps to their median. Smaller changes are followed exponentially.
    * A frame without a trustworthy estimate leaves the scale as it is (held).
    """

    def __init__(self, time_constant: float) -> None:
        self.time_constant = time_constant
        self._log: float | None = None
        self._window: deque[tuple[float, float]] = deque()  # (t, log scale) of good estimates
        self._last_t: float | None = None
        self._count = 0  # good estimates since the last reset
        self.last_good_t: float | None = None

    @property
    def scale(self) -> float | None:
        """The filtered scale; None until the first good estimate."""
        return None if self._log is None else math.exp(self._log)

    def spread(self) -> float:
        """Robust relative spread (1.4826 x MAD of log scale) of the estimates in the window."""
        if len(self._window) < 2:
            return 0.0
        x = np.array([s for _, s in self._window])
        return 1.4826 * float(np.median(np.abs(x - np.median(x))))

    def update(self, t: float, estimate: float | None) -> float | None:
        """Feed the estimate of the frame stamped ``t`` (s); None = no trustworthy estimate."""
        if self._last_t is not None and t < self._last_t - self.time_constant:
            self.reset()  # time went back (a bag replayed from the start): a new sequence
        if estimate is None or not (estimate > 0 and math.isfinite(estimate)):
            return self.scale
        x = math.log(estimate)
        self._window.append((t, x))
        while self._window and self._window[0][0] < t - self.time_constant:
            self._window.popleft()
        dt = 0.0 if self._last_t is None else max(t - self._last_t, 0.0)
        alpha = 1.0 - math.exp(-dt / self.time_constant)
        self._count += 1
        if self._log is None:
            self._log = x
        else:
            sigma = self.spread()
            bound = max(3.0 * sigma, STEP_MIN_LOG)
            recent = [s for ts, s in self._window if ts >= t - self.time_constant / 3.0]
            offsets = np.array(recent) - self._log
            step = float(np.median(offsets))
            if (len(recent) >= 3 and (np.all(offsets > 0) or np.all(offsets < 0))
                    and abs(step) > bound):
                self._log += step
                self._count = len(recent)  # as if the new scene's estimates were averaged
                while self._window and self._window[0][0] < t - self.time_constant / 3.0:
                    self._window.popleft()  # the old scene's estimates no longer count
            else:
                # A running mean at first (1/n), then the exponential filter (alpha).
                weight = max(alpha, 1.0 / self._count)
                self._log += weight * min(max(x - self._log, -bound), bound)
        self._last_t = t
        self.last_good_t = t
        return self.scale

    def reset(self) -> None:
        """Forget everything (no scale until the next good estimate)."""
        self._log, self._last_t, self.last_good_t, self._count = None, None, None, 0
        self._window.clear()


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
    reason: str = ""             # why this frame gave no estimate
    stale: bool = False          # the held scale is older than STALE_TIME_CONSTANTS

    def units(self) -> str:
        """A short phrase for diagnostics and summaries."""
        if self.source == "model":
            return "metres (metric model)"
        if self.source == "fixed":
            return f"metres (asserted: relative_depth_scale = {self.scale:g} m per unit)"
        if self.source == "none":
            return "relative (unitless; depth_scale_source: none)"
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

    Warns while an estimated source has found no scale (metric outputs are withheld) and while
    the scale in use is held from an estimate older than :data:`STALE_TIME_CONSTANTS`.
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
        "depth scale note": report.reason or "-"})
    if report.scale is None:
        why = f": {report.reason}" if report.reason else ""
        return values, (f"no depth scale from {report.source} yet{why}; depth/image and points "
                        "are withheld until one is found")
    if report.stale:
        return values, (f"depth scale held for {report.age_s:.1f} s (no trustworthy estimate: "
                        f"{report.reason})")
    return values, ""


class DepthScaler:
    """One scale source plus the temporal filter; call :meth:`update` once per frame."""

    def __init__(self, config: ScaleConfig) -> None:
        problem = config.problem()
        if problem:
            raise ValueError(problem)
        self.config = config
        self.filter = ScaleFilter(config.time_constant)
        self.last: ScaleReport = ScaleReport(config.source, None, False,
                                             reason="no frame yet")

    def configure(self, config: ScaleConfig) -> None:
        """New settings; the filter's state is kept unless the source changes."""
        problem = config.problem()
        if problem:
            raise ValueError(problem)
        if config.source != self.config.source:
            self.filter.reset()
        self.filter.time_constant = config.time_constant
        self.config = config

    def update(self, t: float, depth: np.ndarray, k: Intrinsics, plan: FitPlan,
               output_resolution: str, reference: np.ndarray | None = None) -> ScaleReport:
        """Estimate this frame's scale from ``depth`` (relative, on the published grid with
        intrinsics ``k``), filter it, and report the scale to use (None: not found yet)."""
        config = self.config
        if config.source == "ground_plane":
            est = ground_plane_scale(depth, k, config.camera_height, config.max_tilt_deg,
                                     config.min_inlier_ratio)
        elif reference is None:
            est = Estimate(None, reason="no reference depth for this frame")
        else:
            est = reference_scale(depth, reference, plan, output_resolution,
                                  config.min_inlier_ratio)
        scale = self.filter.update(t, est.scale)
        good_t = self.filter.last_good_t
        age = None if good_t is None else max(t - good_t, 0.0)
        self.last = ScaleReport(
            config.source, scale, scale is not None, est.scale, est.inlier_ratio,
            self.filter.spread(), age, est.reason,
            stale=age is not None and age > STALE_TIME_CONSTANTS * config.time_constant)
        return self.last


def withholds_depth(report: ScaleReport | None) -> bool:
    """True when depth must not be published or written: an estimated source has no scale yet.

    (Relative depth with ``none`` is published, unitless, as the user chose; depth that will
    turn into metres once a scale is found is withheld until then, so one topic or file set
    never holds two units.)
    """
    return report is not None and report.source in ESTIMATED_SOURCES and not report.metric


class ScaleTally:
    """The scale of every frame of a run, for summary.json (offline) and the bench."""

    def __init__(self) -> None:
        self.reports: list[ScaleReport] = []

    def add(self, report: ScaleReport | None) -> None:
        if report is not None:
            self.reports.append(report)

    def summary(self) -> dict:
        """Units, source, frames in metres / relative / withheld, and the scale per frame."""
        if not self.reports:
            return {"units": "none (no depth)"}
        last = self.reports[-1]
        metric = sum(r.metric for r in self.reports)
        out = {"units": last.units(), "source": last.source, "frames_metric": metric,
               "frames_relative": len(self.reports) - metric,
               "frames_withheld": sum(withholds_depth(r) for r in self.reports)}
        if last.source in ESTIMATED_SOURCES:
            out["scale_per_frame"] = [None if r.scale is None else round(r.scale, 6)
                                      for r in self.reports]
            out["estimate_per_frame"] = [None if r.estimate is None else round(r.estimate, 6)
                                         for r in self.reports]
            reasons: dict[str, int] = {}
            for r in self.reports:
                if r.reason:
                    reasons[r.reason] = reasons.get(r.reason, 0) + 1
            out["no_estimate_reasons"] = reasons
        elif last.scale is not None:
            out["scale"] = last.scale
        return out
