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
own data: how much the scale changes when each of :data:`.pair_error.BLOCKS` regions of the view is left
out (a block jackknife of the median: the network's shape differs across the view, so the
pixels the flow trusts may hold another ratio than the rest), the flow's distance from the
epipolar lines over the median parallax (pose and clock errors move the flow along the lines as
much as across them), and a floor (:data:`.pair_error.MIN_SIGMA`).

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
from .pair_error import MIN_PIXELS, depth_band_error, pair_sigma
from .scale_map import MAX_SAMPLES, fit_map
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
MAX_SPEED = 10.0          # m/s between two frames: faster is no robot or hand (poses in mm?)
MIN_OFFSET_S = 0.005      # a measured clock offset below this is not compensated
CARRIED_POINTS = 2 * MAX_SAMPLES  # metric points kept for the frames a measurement serves
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


def pose_on_clock(trail: Trail, t: float, offset: float | None) -> np.ndarray | None:
    """The pose along ``trail`` at ``t`` plus the pose clock's ``offset``; None where the
    offset is not compensated (unknown or below :data:`MIN_OFFSET_S`) or the trail does not
    reach."""
    if offset is None or abs(offset) < MIN_OFFSET_S:
        return None
    return pose_at(trail.stamps, trail.poses, t + offset, trail.quaternions)


def motion_on_clock(trail: Trail, times: tuple[float, float], offset: float | None
                    ) -> np.ndarray | None:
    """The camera's motion from the frame stamped ``times[0]`` to the one stamped
    ``times[1]``, both poses taken on the pose clock (:func:`pose_on_clock`); None where
    either cannot be."""
    start, end = pose_on_clock(trail, times[0], offset), pose_on_clock(trail, times[1], offset)
    return None if start is None or end is None else motion(start, end)


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
        # the measured frame's own correction over the view (``Estimate.correction``); off
        # where the map is only read on later frames (the keyframe worker's)
        self.own_correction = True
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
        return Pair(t, partner.t, small, partner.grey, b_to_a, self._kept())

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

    def on_clock(self, t: float, pose: np.ndarray, offset: float | None) -> np.ndarray:
        """The camera's pose at the image stamped ``t`` (a frame kept by :meth:`observe`):
        the poses kept, taken at ``t`` plus the pose clock's ``offset`` where one is
        compensated (as the measurement's pairs are); else, or where they do not reach,
        the frame's own ``pose``."""
        at = pose_on_clock(self._kept(), t, offset)
        return pose if at is None else at

    def carried_motion(self, key: tuple[float, np.ndarray], frame: tuple[float, np.ndarray],
                       offset: float | None) -> np.ndarray:
        """The camera's motion from a keyframe to a later frame (each ``(stamp, pose)``), for
        carrying the keyframe's measurement there: both poses taken on the pose clock
        (:meth:`on_clock`) where both can be, else the two frames' own."""
        moved = motion_on_clock(self._kept(), (key[0], frame[0]), offset)
        return motion(key[1], frame[1]) if moved is None else moved

    def _kept(self) -> Trail:
        """The poses kept (every posed frame's, the frame path's)."""
        trail = self._trail
        return Trail([p[0] for p in trail], [p[1] for p in trail], [p[2] for p in trail])

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
                     trail: Trail) -> np.ndarray:
        """The pair's motion with the poses (the past frames', ``trail``) taken at the pose
        clock's offset, once known."""
        moved = motion_on_clock(trail, times, self.fixed_offset or self.clock.offset)
        return b_to_a if moved is None else moved

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
            b_to_a = self._compensated(b_to_a, times, trail)
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
            if self.own_correction:
                field = np.zeros(view.shape, np.float32) if fitted is None else \
                    fitted.field(view)
                level = float(np.median(field[np.isfinite(view)][::7]))
                correction = field - np.float32(level)
            elif fitted is not None:  # the map is read on the frames it serves, not here
                level = fitted.level(view)
        self.stage_ms["scale map"] = 1000.0 * (time.perf_counter() - started)
        sigma = pair_sigma(q, ub, vb, relative.shape, residual, parallax)
        sigma = math.hypot(sigma, depth_band_error(q, rel_trusted, rel))
        # The trusted pixels as metric points, for the frames this measurement serves (evenly
        # thinned: their map uses MAX_SAMPLES at most).
        step = max(1, -(-int(positive.sum()) // CARRIED_POINTS))
        z = 1.0 / inverse[usable][positive][::step]
        points = np.stack([(ub[positive][::step] - k.cx) / k.fx * z,
                           (vb[positive][::step] - k.cy) / k.fy * z, z], axis=1).astype(np.float32)
        return Estimate(math.exp(level) / q_mid, ratio, int(len(q)), sigma=sigma,
                        clock_offset=self.fixed_offset or self.clock.offset,
                        correction=correction, scale_map=fitted, points=points)

