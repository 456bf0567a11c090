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
* the pixels disagree (robust spread of log inverse scale above ``MAX_SPREAD``).

A frame's estimate is the median of the last :data:`RECENT` pairs' within :data:`RECENT_S`
(none from a single pair): robust to one pair on a weak texture.

The flow runs on a copy of the frame at most :data:`FLOW_WIDTH` pixels wide.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, replace

import cv2
import numpy as np

from ..geometry.intrinsics import Intrinsics
from ..scale.estimators import Estimate
from .pose import motion, rotation_angle_deg

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
RECENT = 3                # a frame's scale: the median of the last few pairs' (within RECENT_S)
RECENT_S = 1.0


@dataclass
class _Past:
    t: float
    pose: np.ndarray
    grey: np.ndarray


def flow_image(grey: np.ndarray) -> np.ndarray:
    """``grey`` (uint8) shrunk to at most :data:`FLOW_WIDTH` pixels wide for the flow."""
    h, w = grey.shape
    if w <= FLOW_WIDTH:
        return grey
    return cv2.resize(grey, (FLOW_WIDTH, max(1, round(h * FLOW_WIDTH / w))),
                      interpolation=cv2.INTER_AREA)


class MotionScale:
    """Per camera: the past frames (pose, small grey image) and the scale of each new frame."""

    def __init__(self, min_baseline: float = 0.1) -> None:
        self.min_baseline = min_baseline
        self._past: deque[_Past] = deque(maxlen=MAX_HISTORY)
        self._flow = cv2.DISOpticalFlow_create(cv2.DISOPTICAL_FLOW_PRESET_MEDIUM)
        self._recent: deque[tuple[float, float]] = deque(maxlen=RECENT)  # (t, pair's scale)

    def reset(self) -> None:
        """Forget the past frames (a new sequence)."""
        self._past.clear()
        self._recent.clear()

    def estimate(self, t: float, pose: np.ndarray | None, relative: np.ndarray,
                 k: Intrinsics, grey: np.ndarray) -> Estimate:
        """This frame's scale (metres per unit of ``relative``, on the published grid with
        intrinsics ``k``; ``grey`` the frame's uint8 image on the same grid), or none with the
        reason. The frame is kept as a partner for later ones."""
        if pose is None:
            return Estimate(None, reason="no camera pose for this frame (motion unknown)")
        if self._past and t < self._past[-1].t:
            self.reset()  # time went back: a new sequence
        while self._past and self._past[0].t < t - MAX_HISTORY_S:
            self._past.popleft()
        small = flow_image(grey)
        partner = self._partner(pose)
        self._past.append(_Past(t, pose, small))
        if partner is None:
            return Estimate(None, reason=(
                f"the camera moved less than motion_scale_min_baseline "
                f"({100 * self.min_baseline:g} cm) within {MAX_HISTORY_S:g} s: too little "
                "baseline for a scale from motion"))
        pair = self._fit(small, partner.grey, motion(pose, partner.pose), relative, k)
        if pair.scale is None:
            return pair
        # One pair can be off by 10 % (flow on a weak texture, the model's shape): the median
        # of the last few pairs, and none from a single pair.
        self._recent.append((t, pair.scale))
        recent = [s for ts, s in self._recent if ts >= t - RECENT_S]
        if len(recent) < 2:
            return replace(pair, scale=None, reason=(
                f"one pair gave {pair.scale:.4g}: waiting for a second to confirm it"))
        return replace(pair, scale=float(np.median(recent)))

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

    def _fit(self, grey_b: np.ndarray, grey_a: np.ndarray, b_to_a: np.ndarray,
             relative: np.ndarray, k: Intrinsics) -> Estimate:
        h, w = grey_b.shape
        zoom = relative.shape[1] / w  # full-size px per flow px
        fwd = self._flow.calc(grey_b, grey_a, None)
        bwd = self._flow.calc(grey_a, grey_b, None)
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
        xa = (ua[trusted] + 0.5) * zoom - 0.5 - k.cx
        ya = (va[trusted] + 0.5) * zoom - 0.5 - k.cy
        rot, t = b_to_a[:3, :3], b_to_a[:3, 3]
        rays = np.stack([(ub - k.cx) / k.fx, (vb - k.cy) / k.fy, np.ones_like(ub)])
        p = (rot @ rays).astype(np.float32)  # each ray turned into a's orientation
        # Seen in a at inverse depth i: x_a * (p_z + i t_z) = fx (p_x + i t_x), same for y.
        c1, d1 = k.fx * t[0] - xa * t[2], xa * p[2] - k.fx * p[0]
        c2, d2 = k.fy * t[1] - ya * t[2], ya * p[2] - k.fy * p[1]
        cc = c1 * c1 + c2 * c2
        usable = cc > 1e-12
        inverse = (c1 * d1 + c2 * d2) / np.where(usable, cc, 1.0)
        # Distance of the flow from the epipolar line, in px (the part no depth explains).
        epipolar = np.abs(c1 * d2 - c2 * d1) / np.sqrt(np.where(usable, cc, 1.0)) / p[2]
        q = inverse * rel[trusted]  # per pixel: 1 / scale (relative units x inverse metres)
        q, epipolar = q[usable], epipolar[usable]
        sensitivity = np.sqrt(cc[usable]) / p[2][usable]  # px of parallax per 1/m
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
        parallax = float(np.median(sensitivity * q_mid / rel[trusted][usable]))
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
        return Estimate(1.0 / q_mid, ratio, int(len(q)))

