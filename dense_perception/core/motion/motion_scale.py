# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""``depth_scale_source: motion``: the metric scale that best explains the image motion, given the
metric camera motion between two frames a baseline apart.

For the current frame b and an earlier frame a of the same camera (poses known), OpenCV's DIS
optical flow gives, per pixel of b, where it is seen in a. With the motion b -> a known in
metres, each pixel's ray in b and its flow fix its inverse depth (two linear equations, one
unknown: least squares). The ratio relative depth x inverse depth is the pixel's inverse scale;
the scale is 1 / their median (a median in inverse depth, where flow noise is symmetric, so
pixels with little parallax widen the spread without biasing it). Withheld, with the reason:

* the camera moved less than ``min_baseline`` over the frames kept (``MAX_HISTORY_S``);
* too few pixels whose flow is consistent forward and backward (``FB_TOLERANCE_PX``);
* too little parallax: the scene is too far for the baseline (median below ``MIN_PARALLAX_PX``);
* the flow does not lie on the epipolar lines the motion predicts (median residual above
  ``MAX_EPIPOLAR_PX``): the poses do not describe this camera (world-to-camera instead of
  camera-to-world, a body frame instead of the optical frame, a wrong time offset), or the
  scene moved;
* the pixels disagree (robust spread of log inverse scale above ``MAX_SPREAD``);
* the camera moved faster than :data:`MAX_SPEED` between the two frames: no robot or hand
  does, the trajectory is not in metres (millimetres give a scale 1000x too large).

Each estimate carries its relative standard error (``Estimate.sigma``, in log scale), from its
own data: how much the scale changes when each of :data:`BLOCKS` regions of the view is left
out (a block jackknife of the median: the network's shape differs across the view, so the
pixels the flow trusts may hold another ratio than the rest), the flow's distance from the
epipolar lines over the median parallax (pose and clock errors move the flow along the lines as
much as across them), and a floor (:data:`MIN_SIGMA`).

The offset between the pose clock and the image clock is measured from the same flow
(:mod:`.clock_offset`), unless it is set by hand (``pose_clock_offset``), and, once known,
compensated: each pair's motion is taken from the poses at the image stamps plus the offset
(``Estimate.clock_offset`` reports it).

A frame's estimate is the median of the last :data:`RECENT` pairs' within :data:`RECENT_S`
(none from a single pair): robust to one pair on a weak texture.

The flow runs on a copy of the frame at most :data:`FLOW_WIDTH` pixels wide.
"""

from __future__ import annotations

import math
import time
from collections import deque
from dataclasses import dataclass, replace

import cv2
import numpy as np

from ..geometry.intrinsics import Intrinsics
from ..scale.estimators import Estimate
from .clock_offset import ClockOffset, epipolar_terms, pose_at
from .scale_map import fit_map
from .pose import motion, quaternion_from_rotation, rotation_angle_deg

FLOW_WIDTH = 320          # px: flow on a frame this wide (cost; DIS is accurate to ~0.3 px)
MAX_HISTORY_S = 2.0       # s of past frames kept as partners
MAX_HISTORY = 90          # frames kept at most
MAX_ROTATION_DEG = 25.0   # partners rotated more than this share too little of the view
FB_TOLERANCE_PX = 1.0     # forward-backward flow disagreement (full-size px) still trusted
MIN_FLOW_SHARE = 0.1      # fewer trusted pixels than this share: the flow is unsure
MIN_PARALLAX_PX = 2.0     # median parallax (px, full size) below this: the scene is too far
MAX_EPIPOLAR_PX = 3.0     # median distance (px) of the flow from its epipolar line
MAX_SPREAD = 0.4          # robust std of the pixels' log inverse scale
MIN_PIXELS = 200
MAX_SPEED = 10.0          # m/s between two frames: faster is no robot or hand (poses in mm?)
BLOCKS = (2, 3)           # rows, columns of the view's regions for the block jackknife
DEPTH_BANDS = 3           # bands of relative depth for the depth jackknife and the slope
MIN_OFFSET_S = 0.005      # a measured clock offset below this is not compensated
MIN_SIGMA = 0.02          # the smallest relative error claimed (the flow's own bias, ~0.3 px)
RECENT = 3                # a frame's scale: the median of the last few pairs' (within RECENT_S)
RECENT_S = 1.0


@dataclass
class _Past:
    t: float
    pose: np.ndarray
    grey: np.ndarray
    quaternion: np.ndarray  # the pose's rotation, kept for the clock offset's interpolation


@dataclass(frozen=True)
class Trail:
    """The poses of the recent posed frames (every one, keyframe or not), oldest first: what
    the clock offset interpolates between."""

    stamps: list[float]
    poses: list[np.ndarray]
    quaternions: list[np.ndarray]


@dataclass(frozen=True)
class Pair:
    """A frame and its partner a baseline before it: what :meth:`MotionScale.measure` takes
    (off the frame path: it holds copies, nothing the frame path changes later)."""

    t: float
    partner_t: float
    grey: np.ndarray          # the frame's, shrunk for the flow
    partner_grey: np.ndarray
    b_to_a: np.ndarray        # the frame's camera to the partner's, from the poses
    trail: Trail


def flow_image(grey: np.ndarray) -> np.ndarray:
    """``grey`` (uint8) shrunk to at most :data:`FLOW_WIDTH` pixels wide for the flow."""
    h, w = grey.shape
    if w <= FLOW_WIDTH:
        return grey
    return cv2.resize(grey, (FLOW_WIDTH, max(1, round(h * FLOW_WIDTH / w))),
                      interpolation=cv2.INTER_AREA)


class MotionScale:
    """Per camera: the past frames (pose, small grey image) and the scale of each new frame."""

    def __init__(self, min_baseline: float = 0.1, scale_map: bool = True,
                 clock_offset: float = 0.0) -> None:
        self.min_baseline = min_baseline
        self.scale_map = scale_map
        self.fixed_offset = clock_offset or None  # set by hand: not measured
        # The frame path's: the past frames that may partner a later one, and every pose.
        self._past: deque[_Past] = deque(maxlen=MAX_HISTORY)
        self._trail: deque[tuple[float, np.ndarray, np.ndarray]] = deque(maxlen=MAX_HISTORY)
        # The measurement's (the keyframe worker's, off the frame path):
        self._flow = cv2.DISOpticalFlow_create(cv2.DISOPTICAL_FLOW_PRESET_MEDIUM)
        self.clock = ClockOffset()
        self.stage_ms: dict[str, float] = {}  # the last pair's stages (flow, clock offset, map)
        # (t, pair's scale, its relative error)
        self._recent: deque[tuple[float, float, float]] = deque(maxlen=RECENT)

    def reset(self) -> None:
        """Forget the past frames (a new sequence)."""
        self.forget()
        self.reset_measures()

    def forget(self) -> None:
        """The frame path's half of :meth:`reset`: the partners and the poses."""
        self._past.clear()
        self._trail.clear()

    def reset_measures(self) -> None:
        """The measurement's half of :meth:`reset`: the recent pairs and the clock offset."""
        self._recent.clear()
        self.clock.reset()

    def estimate(self, t: float, pose: np.ndarray | None, relative: np.ndarray,
                 k: Intrinsics, grey: np.ndarray) -> Estimate:
        """This frame's scale (metres per unit of ``relative``, on the published grid with
        intrinsics ``k``; ``grey`` the frame's uint8 image on the same grid), or none with the
        reason: :meth:`pair` and :meth:`measure` in one. The frame is kept as a partner for
        later ones."""
        pair = self.pair(t, pose, grey)
        return pair if isinstance(pair, Estimate) else self.measure(pair, relative, k)

    def observe(self, t: float, pose: np.ndarray) -> None:
        """Keep the pose of the posed frame stamped ``t`` (every frame: the clock offset
        interpolates between them); time going back starts a new sequence."""
        if self._trail and t < self._trail[-1][0]:
            self.forget()  # time went back: a new sequence (the measurement sees it too)
        while self._trail and self._trail[0][0] < t - MAX_HISTORY_S:
            self._trail.popleft()
        self._trail.append((t, pose, quaternion_from_rotation(pose[:3, :3])))

    def pair(self, t: float, pose: np.ndarray | None, grey: np.ndarray,
             observed: bool = False) -> Pair | Estimate:
        """The frame paired with the latest past frame a baseline away (the cheap part, on
        the frame path), or none with the reason; the frame is kept as a partner for later
        ones. ``observed``: :meth:`observe` was already called for this frame."""
        if pose is None:
            return Estimate(None, reason="no camera pose for this frame (motion unknown)")
        if not observed:
            self.observe(t, pose)
        if self._past and t < self._past[-1].t:
            self._past.clear()
        while self._past and self._past[0].t < t - MAX_HISTORY_S:
            self._past.popleft()
        small = flow_image(grey)
        partner = self._partner(pose)
        self._past.append(_Past(t, pose, small, self._trail[-1][2]))
        if partner is None:
            return Estimate(None, reason=(
                f"the camera moved less than motion_scale_min_baseline "
                f"({100 * self.min_baseline:g} cm) within {MAX_HISTORY_S:g} s: too little "
                "baseline for a scale from motion"))
        b_to_a = motion(pose, partner.pose)
        speed = float(np.linalg.norm(b_to_a[:3, 3])) / max(t - partner.t, 1e-3)
        if speed > MAX_SPEED:
            return Estimate(None, reason=(
                f"the trajectory moves {speed:.3g} m/s between two frames: no robot or hand "
                "does (are the poses in metres, not millimetres?)"))
        trail = Trail([p[0] for p in self._trail], [p[1] for p in self._trail],
                      [p[2] for p in self._trail])
        return Pair(t, partner.t, small, partner.grey, b_to_a, trail)

    def measure(self, pair: Pair, relative: np.ndarray, k: Intrinsics) -> Estimate:
        """The scale of ``pair``'s frame (its ``relative`` depth, intrinsics ``k``): the
        flows and the fit (the costly part, off the frame path)."""
        t = pair.t
        if self._recent and t < self._recent[-1][0]:
            self.reset_measures()  # time went back: a new sequence
        est = self._fit(pair.grey, pair.partner_grey, pair.b_to_a, relative, k,
                        (t, pair.partner_t), pair.trail)
        if est.scale is None:
            return est
        # One pair can be off by 10 % (flow on a weak texture, the model's shape): the median
        # of the last few pairs, and none from a single pair; its error is the median pair's.
        self._recent.append((t, est.scale, est.sigma))
        recent = [(s, e) for ts, s, e in self._recent if ts >= t - RECENT_S]
        if len(recent) < 2:
            return replace(est, scale=None, reason=(
                f"one pair gave {est.scale:.4g}: waiting for a second to confirm it"))
        return replace(est, scale=float(np.median([s for s, _ in recent])),
                       sigma=float(np.median([e for _, e in recent])))

    def _partner(self, pose: np.ndarray) -> _Past | None:
        """The latest past frame at least ``min_baseline`` away (the shortest usable baseline:
        the most overlap)."""
        for past in reversed(self._past):
            b_to_a = motion(pose, past.pose)
            if rotation_angle_deg(b_to_a) > MAX_ROTATION_DEG:
                return None  # older ones share even less of the view
            if float(np.linalg.norm(b_to_a[:3, 3])) >= self.min_baseline:
                return past
        return None

    def _compensated(self, b_to_a: np.ndarray, times: tuple[float, float],
                     stamps: list[float], poses: list[np.ndarray],
                     quaternions: list[np.ndarray]) -> np.ndarray:
        """The pair's motion with the poses (the past frames', at ``stamps``) taken at the pose
        clock's offset, once known."""
        offset = self.fixed_offset or self.clock.offset
        if offset is None or abs(offset) < MIN_OFFSET_S:
            return b_to_a
        pose_b = pose_at(stamps, poses, times[0] + offset, quaternions)
        pose_a = pose_at(stamps, poses, times[1] + offset, quaternions)
        return b_to_a if pose_b is None or pose_a is None else motion(pose_b, pose_a)

    def _fit(self, grey_b: np.ndarray, grey_a: np.ndarray, b_to_a: np.ndarray,
             relative: np.ndarray, k: Intrinsics, times: tuple[float, float] | None = None,
             trail: Trail | None = None) -> Estimate:
        h, w = grey_b.shape
        zoom = relative.shape[1] / w  # full-size px per flow px
        started = time.perf_counter()
        fwd = self._flow.calc(grey_b, grey_a, None)
        bwd = self._flow.calc(grey_a, grey_b, None)
        self.stage_ms = {"flow": 1000.0 * (time.perf_counter() - started)}
        grid_u, grid_v = np.meshgrid(np.arange(w, dtype=np.float32),
                                     np.arange(h, dtype=np.float32))
        ua, va = grid_u + fwd[..., 0], grid_v + fwd[..., 1]
        back = cv2.remap(bwd, ua, va, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
        fb = np.hypot(fwd[..., 0] + back[..., 0], fwd[..., 1] + back[..., 1]) * zoom
        rel = cv2.resize(relative, (w, h), interpolation=cv2.INTER_AREA)
        inside = (ua >= 0) & (ua <= w - 1) & (va >= 0) & (va <= h - 1)
        trusted = (fb < FB_TOLERANCE_PX) & inside & np.isfinite(rel) & (rel > 0)
        share = float(trusted.mean())
        if share < MIN_FLOW_SHARE or trusted.sum() < MIN_PIXELS:
            return Estimate(None, reason=f"the optical flow is unsure: only {share:.0%} of the "
                                         "pixels agree forward and backward")
        # Full-size pixel coordinates of each trusted pixel in b and of its match in a.
        ub = (grid_u[trusted] + 0.5) * zoom - 0.5
        vb = (grid_v[trusted] + 0.5) * zoom - 0.5
        ua = (ua[trusted] + 0.5) * zoom - 0.5
        va = (va[trusted] + 0.5) * zoom - 0.5
        started = time.perf_counter()
        if times is not None and trail is not None:  # the pose clock's offset: measured
            # (unless set), compensated
            stamps, poses, quaternions = trail.stamps, trail.poses, trail.quaternions
            if self.fixed_offset is None:
                self.clock.add_pair(ub, vb, ua, va, *times, stamps, poses, k, quaternions)
            b_to_a = self._compensated(b_to_a, times, stamps, poses, quaternions)
        self.stage_ms["clock offset"] = 1000.0 * (time.perf_counter() - started)
        c1, d1, c2, d2, pz = epipolar_terms(ub, vb, ua, va, b_to_a, k, np.float32)
        cc = c1 * c1 + c2 * c2
        usable = cc > 1e-12
        inverse = (c1 * d1 + c2 * d2) / np.where(usable, cc, 1.0)
        # Distance of the flow from the epipolar line, in px (the part no depth explains).
        epipolar = np.abs(c1 * d2 - c2 * d1) / np.sqrt(np.where(usable, cc, 1.0)) / pz
        rel_trusted = rel[trusted][usable]
        q = inverse[usable] * rel_trusted  # per pixel: 1 / scale (relative x inverse metres)
        epipolar = epipolar[usable]
        ub, vb = ub[usable], vb[usable]
        sensitivity = np.sqrt(cc[usable]) / pz[usable]  # px of parallax per 1/m
        residual = float(np.median(epipolar))
        if residual > MAX_EPIPOLAR_PX:
            return Estimate(None, reason=(
                f"the image motion does not fit the camera motion (median {residual:.1f} px "
                "off the epipolar lines): are the poses camera-to-world of the optical frame "
                "(x right, y down, z forward), at the image's stamps? (or the scene moved)"))
        q_mid = float(np.median(q))
        if not q_mid > 0:
            return Estimate(None, reason=(
                "the image moves against the camera motion (points would lie behind the "
                "camera): are the poses camera-to-world, not world-to-camera?"))
        parallax = float(np.median(sensitivity * q_mid / rel_trusted))
        if parallax < MIN_PARALLAX_PX:
            return Estimate(None, reason=(
                f"too little parallax (median {parallax:.1f} px < {MIN_PARALLAX_PX:g} px): "
                "the scene is too far for the baseline"))
        positive = q > 0
        logs = np.log(q[positive] / q_mid)
        spread = 1.4826 * float(np.median(np.abs(logs)))
        ratio = float(positive.mean()) * share
        if spread > MAX_SPREAD:
            return Estimate(None, ratio, int(len(q)), reason=(
                f"the pixels disagree on the scale (spread {spread:.0%} > {MAX_SPREAD:.0%})"))
        correction, level, fitted = None, 0.0, None
        started = time.perf_counter()
        if self.scale_map:  # the ratio over the view, not one number (see .scale_map)
            with np.errstate(invalid="ignore", divide="ignore"):
                view = np.log(np.where(relative > 0, relative, np.nan))
            fitted = fit_map(-np.log(q[positive]), ub[positive], vb[positive],
                             np.log(rel_trusted[positive]), view)
            field = np.zeros(view.shape, np.float32) if fitted is None else fitted.field(view)
            level = float(np.median(field[np.isfinite(view)][::7]))
            correction = field - np.float32(level)
        self.stage_ms["scale map"] = 1000.0 * (time.perf_counter() - started)
        sigma = pair_sigma(q, ub, vb, relative.shape, residual, parallax)
        sigma = math.hypot(sigma, depth_band_error(q, rel_trusted, rel))
        return Estimate(math.exp(level) / q_mid, ratio, int(len(q)), sigma=sigma,
                        clock_offset=self.fixed_offset or self.clock.offset,
                        correction=correction, scale_map=fitted)


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

