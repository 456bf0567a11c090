# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The camera a CameraInfo describes (REP 104): K, D, distortion model, R, P, binning and ROI.

It answers two questions for the pipeline: which pinhole camera describes the image the model
sees, and whether the pipeline must rectify the image first. One rule, whatever D holds: a raw
image (``image_raw``) is rectified through D, R and P, as image_geometry's ``rectifyImage`` and
OpenCV's ``initUndistortRectifyMap`` define it, so the model sees (and the package publishes) the
rectified image P describes, in the rectified camera's frame (the raw optical frame turned by R).
The remap is skipped only when it is exactly the identity: D all zero, R = I and P's left 3x3
equal to K (or P unusable); a raw image is then already its own rectified image. ``image_rect``
is described by P (``fx()``/``cx()`` are P's), and binning and ROI change K and P as
``PinholeCameraModel::fromCameraInfo`` does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import cv2
import numpy as np

from .intrinsics import Intrinsics

# Distortion models this package can undo (sensor_msgs/distortion_models.hpp names), with the
# number of coefficients OpenCV uses for each.
DISTORTION_MODELS = {"plumb_bob": 5, "rational_polynomial": 8, "equidistant": 4}
_IDENTITY = (1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0)
# OpenCV's plain undistortPoints stops after 5 iterations, short of convergence near the corners
# of a strongly distorted image; iterate to a hundredth of a pixel's worth instead.
_UNDISTORT_CRITERIA = (cv2.TERM_CRITERIA_COUNT | cv2.TERM_CRITERIA_EPS, 40, 1e-9)
# A raw pixel whose undistorted ray does not project back within this many pixels was not
# inverted (beyond the lens model's range): it has no place in the rectified image.
_ROUND_TRIP_PX = 0.05


@dataclass(frozen=True)
class CameraModel:
    """One camera's calibration, for images of ``width`` x ``height`` (binning and ROI applied).

    Attributes:
        k: row-major 3x3 camera matrix of the raw image.
        d: distortion coefficients (meaning set by ``distortion_model``).
        r: row-major 3x3 rectification rotation.
        p: row-major 3x4 projection matrix of the rectified image.
        input_rectified: the images are already rectified (``image_rect``): use P, ignore K, D.
    """

    width: int
    height: int
    k: tuple[float, ...]
    d: tuple[float, ...] = ()
    distortion_model: str = "plumb_bob"
    r: tuple[float, ...] = _IDENTITY
    p: tuple[float, ...] = ()
    input_rectified: bool = False

    @classmethod
    def from_camera_info(cls, msg: Any, input_rectified: bool = False) -> "CameraModel":
        """From a sensor_msgs/CameraInfo (rclpy or rosbags), binning and ROI applied (REP 104).

        The ROI is in full-resolution pixels, so its offset moves the principal point first;
        binning then scales focal lengths, principal points and P's Tx (as image_geometry does).
        """
        bin_x, bin_y = max(1, int(getattr(msg, "binning_x", 0))), max(1, int(getattr(msg, "binning_y", 0)))
        roi = getattr(msg, "roi", None)
        x0, y0, roi_w, roi_h = ((int(roi.x_offset), int(roi.y_offset), int(roi.width),
                                 int(roi.height)) if roi is not None else (0, 0, 0, 0))
        width = (roi_w if roi_w and roi_h else int(msg.width)) // bin_x
        height = (roi_h if roi_w and roi_h else int(msg.height)) // bin_y
        k = [float(v) for v in msg.k]
        p = [float(v) for v in msg.p]
        if len(k) == 9:
            k[2] -= x0
            k[5] -= y0
            k[0], k[2] = k[0] / bin_x, k[2] / bin_x
            k[4], k[5] = k[4] / bin_y, k[5] / bin_y
        if len(p) == 12:
            p[2] -= x0
            p[6] -= y0
            p[0], p[2], p[3] = p[0] / bin_x, p[2] / bin_x, p[3] / bin_x
            p[5], p[6], p[7] = p[5] / bin_y, p[6] / bin_y, p[7] / bin_y
        r = tuple(float(v) for v in msg.r)
        return cls(width=width, height=height, k=tuple(k), d=tuple(float(v) for v in msg.d),
                   distortion_model=str(msg.distortion_model),
                   r=r if len(r) == 9 and any(r) else _IDENTITY, p=tuple(p),
                   input_rectified=bool(input_rectified))

    @classmethod
    def pinhole(cls, k: Intrinsics) -> "CameraModel":
        """An ideal pinhole camera (no distortion, P = K)."""
        kk = tuple(k.k())
        return cls(width=k.width, height=k.height, k=kk,
                   p=(kk[0], 0.0, kk[2], 0.0, 0.0, kk[4], kk[5], 0.0, 0.0, 0.0, 1.0, 0.0))

    # ---- which case this is ---------------------------------------------------------------------
    @property
    def distorted(self) -> bool:
        """Any non-zero distortion coefficient."""
        return any(v != 0.0 for v in self.d)

    @property
    def model_known(self) -> bool:
        """The distortion model is one this package can undo."""
        return self.distortion_model in DISTORTION_MODELS

    @property
    def rectification_is_identity(self) -> bool:
        """Rectifying would move no pixel: D all zero, R = I and P's 3x3 = K (or P unusable)."""
        return not self.distorted and self.r == _IDENTITY and self._p_is_k()

    @property
    def needs_rectification(self) -> bool:
        """A raw image that must be rectified (D, R, P) before the model sees it."""
        return self._rectifies() and self.problem() is None

    def note(self) -> str:
        """Why the images cannot be treated exactly (shown in diagnostics), or ''."""
        if not self.input_rectified and self.distorted and not self.model_known:
            return (f"unknown distortion model '{self.distortion_model}' (known: "
                    f"{', '.join(DISTORTION_MODELS)}): treated as a pinhole camera with K, "
                    "distortion (and R, P) ignored")
        if self._uses_p() and not self._p_usable():
            return "CameraInfo P is empty or invalid: using K for the rectified image"
        return ""

    def describe(self) -> str:
        """Which case this camera is, in a few words (for diagnostics)."""
        note = self.note()
        if self.input_rectified:
            return "rectified input (image_rect): P" + (f"; {note}" if note else "")
        if self.needs_rectification:
            why = [f"{self.distortion_model} distortion"] if self.distorted else []
            why += ["R != I"] if self.r != _IDENTITY else []
            why += [] if self._p_is_k() else ["P != K"]
            return (f"raw input, {', '.join(why)}: rectified before the model"
                    + (f"; {note}" if note else " (P)"))
        return note or "raw input, rectification is the identity (D = 0, R = I, P = K): K"

    # ---- the pinhole camera of the image the model sees ----------------------------------------
    def intrinsics(self) -> Intrinsics:
        """The pinhole intrinsics of the (rectified) full frame: P's for rectified input or
        when the pipeline rectifies, else K's."""
        if self._uses_p() and self._p_usable():
            p = self.p
            return Intrinsics(fx=p[0], fy=p[5], cx=p[2], cy=p[6], width=self.width,
                              height=self.height)
        return Intrinsics.from_k(self.k, self.width, self.height)

    def problem(self) -> str | None:
        """Why this calibration cannot be used, or None when it can."""
        if len(self.k) != 9:
            return f"K has {len(self.k)} values, not 9"
        if not all(math.isfinite(v) for v in self.d + self.r):
            return "D or R holds NaN or inf"
        if self.model_known and self.distorted and not self.input_rectified:
            needed = DISTORTION_MODELS[self.distortion_model]
            if len(self.d) < needed and self.distortion_model == "equidistant":
                return f"equidistant distortion needs {needed} coefficients, got {len(self.d)}"
            if len(self.d) not in (4, 5, 8, 12, 14):
                return f"{self.distortion_model} distortion has {len(self.d)} coefficients"
        return Intrinsics.from_k(self.k, self.width, self.height).problem() or \
            self.intrinsics().problem()

    def rectify_points(self, u: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Raw pixel coordinates -> the same rays' pixels in the rectified full frame (the grid
        of :meth:`intrinsics`), as the rectifying remap places them: undistorted (D), turned by
        R, projected by P. NaN where a ray has no place there (behind the rectified camera, or
        beyond what the lens model can invert). Unchanged when the image is not rectified."""
        u, v = np.asarray(u, np.float64), np.asarray(v, np.float64)
        if not self.needs_rectification:
            return u, v
        raw = np.stack([u.ravel(), v.ravel()], axis=-1).reshape(-1, 1, 2)
        k = np.array(self.k, np.float64).reshape(3, 3)
        fisheye = self.distortion_model == "equidistant" and self.distorted
        d = np.array(self.d[:4] if fisheye else self.d if self.distorted else (), np.float64)
        if fisheye:
            xy = cv2.fisheye.undistortPoints(raw, k, d)
        elif hasattr(cv2, "undistortPointsIter"):  # OpenCV 4; 5 took criteria into the plain one
            xy = cv2.undistortPointsIter(raw, k, d, np.eye(3), np.eye(3), _UNDISTORT_CRITERIA)
        else:
            xy = cv2.undistortPoints(raw, k, d, criteria=_UNDISTORT_CRITERIA)
        rays = np.concatenate([xy.reshape(-1, 2), np.ones((len(xy), 1))], axis=1)
        project = cv2.fisheye.projectPoints if fisheye else cv2.projectPoints
        back = project(rays.reshape(-1, 1, 3), np.zeros(3), np.zeros(3), k, d)[0].reshape(-1, 2)
        inverted = np.hypot(*(back - raw.reshape(-1, 2)).T) < _ROUND_TRIP_PX
        # R and P as OpenCV applies them, but keeping only rays in front of the rectified camera
        # (OpenCV divides by Z whatever its sign: a ray behind would land mirrored).
        rays = rays @ np.array(self.r, np.float64).reshape(3, 3).T
        ahead = inverted & (rays[:, 2] > 1e-9)
        with np.errstate(divide="ignore", invalid="ignore"):
            pix = rays @ np.array(self.intrinsics().k(), np.float64).reshape(3, 3).T
            pu, pv = pix[:, 0] / pix[:, 2], pix[:, 1] / pix[:, 2]
        pu, pv = np.where(ahead, pu, np.nan), np.where(ahead, pv, np.nan)
        return pu.reshape(u.shape), pv.reshape(v.shape)

    def _rectifies(self) -> bool:
        # A raw image, rectified through D (when this package knows its model), R and P.
        return (not self.input_rectified and (self.model_known or not self.distorted)
                and not self.rectification_is_identity)

    def _uses_p(self) -> bool:
        return self.input_rectified or self._rectifies()

    def _p_is_k(self) -> bool:
        # P's left 3x3 is K: rectification projects with K (an unusable P falls back to K).
        p, k = self.p, self.k
        return not self._p_usable() or (len(k) == 9 and all(
            p[i] == k[j] for j, i in enumerate((0, 1, 2, 4, 5, 6, 8, 9, 10))))

    def _p_usable(self) -> bool:
        p = self.p
        return (len(p) == 12 and all(math.isfinite(v) for v in p) and p[0] > 0 and p[5] > 0)


def as_camera_model(camera: "CameraModel | Intrinsics | None") -> "CameraModel | None":
    """Accept either a full camera model or bare pinhole intrinsics."""
    if camera is None or isinstance(camera, CameraModel):
        return camera
    return CameraModel.pinhole(camera)
