"""The camera a CameraInfo describes (REP 104): K, D, distortion model, R, P, binning and ROI.

It answers two questions for the pipeline: which pinhole camera describes the image the model
sees (K for an undistorted raw image, P for a rectified one), and whether the pipeline must
rectify the image first (a raw image with distortion). The rules follow image_geometry's
``PinholeCameraModel``: ``image_rect`` is described by P (``fx()``/``cx()`` are P's), ``image_raw``
by K and D, and binning and ROI change both as ``PinholeCameraModel::fromCameraInfo`` does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from .intrinsics import Intrinsics

# Distortion models this package can undo (sensor_msgs/distortion_models.hpp names), with the
# number of coefficients OpenCV uses for each.
DISTORTION_MODELS = {"plumb_bob": 5, "rational_polynomial": 8, "equidistant": 4}
_IDENTITY = (1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0)


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
    def needs_rectification(self) -> bool:
        """A raw image whose distortion must be undone before the model sees it."""
        return (not self.input_rectified and self.distorted and self.model_known
                and self.problem() is None)

    def note(self) -> str:
        """Why the images cannot be treated exactly (shown in diagnostics), or ''."""
        if not self.input_rectified and self.distorted and not self.model_known:
            return (f"unknown distortion model '{self.distortion_model}' (known: "
                    f"{', '.join(DISTORTION_MODELS)}): treated as a pinhole camera with K, "
                    "distortion ignored")
        if self._uses_p() and not self._p_usable():
            return "CameraInfo P is empty or invalid: using K for the rectified image"
        return ""

    def describe(self) -> str:
        """Which case this camera is, in a few words (for diagnostics)."""
        note = self.note()
        if self.input_rectified:
            return "rectified input (image_rect): P" + (f"; {note}" if note else "")
        if self.needs_rectification:
            return (f"raw input, {self.distortion_model} distortion: rectified before the model"
                    + (f"; {note}" if note else " (P)"))
        return note or "raw input, no distortion: K"

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

    def _uses_p(self) -> bool:
        return self.input_rectified or (self.distorted and self.model_known)

    def _p_usable(self) -> bool:
        p = self.p
        return (len(p) == 12 and all(math.isfinite(v) for v in p) and p[0] > 0 and p[5] > 0)


def as_camera_model(camera: "CameraModel | Intrinsics | None") -> "CameraModel | None":
    """Accept either a full camera model or bare pinhole intrinsics."""
    if camera is None or isinstance(camera, CameraModel):
        return camera
    return CameraModel.pinhole(camera)
