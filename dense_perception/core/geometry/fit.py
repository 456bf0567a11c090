# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Letterbox-free fitting of a camera frame to a model's fixed input, and its inverse.

A :class:`FitPlan` says which camera pixels feed the model: a centred crop rectangle (in camera
pixels), an optional 90-degree clockwise turn, then a resize to the model's input size. Nothing is
ever padded. The plan maps model outputs back to the camera's geometry and transforms the camera
intrinsics to the grid that is published.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import Enum

import cv2
import numpy as np

from .camera_model import CameraModel
from .intrinsics import Intrinsics
from ..setting_values import FIT_MODES

# A vector (x, y) expressed in the turned image's optical frame, written in the camera's frame.
# Turning the image 90 deg clockwise maps camera pixel (u, v) to (H-1-v, u), so the turned x axis
# is the camera's -y and the turned y axis is the camera's +x.
_TURNED_TO_CAMERA_XY = np.array([[0.0, 1.0], [-1.0, 0.0]], dtype=np.float32)


class Interp(Enum):
    """How an output is resampled when it changes grid."""

    LINEAR = cv2.INTER_LINEAR
    # Pixel-centre-correct nearest neighbour (plain INTER_NEAREST is shifted by half a pixel).
    NEAREST = cv2.INTER_NEAREST_EXACT
    # Depth: bilinear on smooth surfaces, nearest next to a depth step, so a step stays a step
    # (no "flying pixels" between a near and a far surface, as depth_image_proc).
    DEPTH = -1


# Neighbouring depths that differ by more than this fraction are two surfaces, not one.
DEPTH_STEP_RATIO = 0.05


@dataclass(frozen=True)
class FitPlan:
    """An invertible recipe from a camera frame to the model input.

    Attributes:
        frame_width, frame_height: camera frame size.
        crop_x, crop_y, crop_width, crop_height: region of the camera frame that is used.
        turned: True when the cropped region is turned 90 degrees clockwise for the model.
        model_width, model_height: model input size.
        mode: the fit mode that produced the plan.
        raw_camera: set when the frames are raw and rectified on the way in (the pipeline's
            ``Rectifier`` remap, not :meth:`fit_image`): camera pixels are then the raw frame's,
            and the crop, turn and resize apply to its rectified image (the grid of
            ``raw_camera.intrinsics()``).
    """

    frame_width: int
    frame_height: int
    crop_x: int
    crop_y: int
    crop_width: int
    crop_height: int
    turned: bool
    model_width: int
    model_height: int
    mode: str
    raw_camera: CameraModel | None = None

    def rectifying(self, camera: CameraModel) -> "FitPlan":
        """This plan for raw frames of ``camera`` that are rectified on the way in."""
        return replace(self, raw_camera=camera)

    # ---- forward: camera frame -> model input -------------------------------------------------
    def fit_image(self, frame: np.ndarray) -> np.ndarray:
        """Crop, turn and resize ``frame`` (H x W [x C]) to the model input size (uint8 kept)."""
        if frame.shape[0] != self.frame_height or frame.shape[1] != self.frame_width:
            raise ValueError(f"frame is {frame.shape[1]}x{frame.shape[0]}, plan expects "
                             f"{self.frame_width}x{self.frame_height}")
        region = frame[self.crop_y:self.crop_y + self.crop_height,
                       self.crop_x:self.crop_x + self.crop_width]
        if self.turned:
            region = cv2.rotate(region, cv2.ROTATE_90_CLOCKWISE)
        size = (self.model_width, self.model_height)
        if region.shape[1] == size[0] and region.shape[0] == size[1]:
            return region
        shrinking = region.shape[1] >= size[0] and region.shape[0] >= size[1]
        # INTER_AREA anti-aliases when both axes shrink; with one axis enlarged it shifts pixels,
        # so bilinear is used then.
        return cv2.resize(region, size, interpolation=cv2.INTER_AREA if shrinking else cv2.INTER_LINEAR)

    # ---- the grid that is published -------------------------------------------------------------
    def published_size(self, output_resolution: str) -> tuple[int, int]:
        """(width, height) of the published images for ``output_resolution``."""
        if output_resolution == "input":
            return self.frame_width, self.frame_height
        if self.turned:
            return self.model_height, self.model_width
        return self.model_width, self.model_height

    def camera_to_published(self, u: np.ndarray, v: np.ndarray, output_resolution: str
                            ) -> tuple[np.ndarray, np.ndarray]:
        """Map camera pixel coordinates (pixel centres at integers) to the published grid.

        For a rectifying plan the camera pixels are raw: they are first undistorted and turned
        as the remap takes them (``CameraModel.rectify_points``; NaN where the rectified view
        has no place for them).
        """
        if self.raw_camera is not None:
            u, v = self.raw_camera.rectify_points(u, v)
        if output_resolution == "input":
            return np.asarray(u, np.float64), np.asarray(v, np.float64)
        pw, ph = self.published_size("model")
        sx, sy = pw / self.crop_width, ph / self.crop_height
        return ((np.asarray(u, np.float64) - self.crop_x + 0.5) * sx - 0.5,
                (np.asarray(v, np.float64) - self.crop_y + 0.5) * sy - 0.5)

    def published_intrinsics(self, k: Intrinsics, output_resolution: str) -> Intrinsics:
        """The camera intrinsics for the published grid (crop offset and resize applied)."""
        if output_resolution == "input":
            return k
        pw, ph = self.published_size("model")
        sx, sy = pw / self.crop_width, ph / self.crop_height
        return Intrinsics(fx=k.fx * sx, fy=k.fy * sy,
                          cx=(k.cx - self.crop_x + 0.5) * sx - 0.5,
                          cy=(k.cy - self.crop_y + 0.5) * sy - 0.5,
                          width=pw, height=ph)

    # ---- inverse: model output -> camera geometry ---------------------------------------------
    def unfit(self, output: np.ndarray, output_resolution: str, interp: Interp,
              fill: float = np.nan) -> np.ndarray:
        """Map an output on the model grid (any size, H x W [x C]) back to the published grid.

        The output may be on a coarser grid than the model input (e.g. 256x256 segmentation): it
        covers the same region. For ``output_resolution='input'`` pixels outside the crop get
        ``fill``.
        """
        if self.turned:
            output = cv2.rotate(output, cv2.ROTATE_90_COUNTERCLOCKWISE)
        if output_resolution == "model":
            size = self.published_size("model")
            return _resize(output, size, interp)
        region = _resize(output, (self.crop_width, self.crop_height), interp)
        if self.crop_width == self.frame_width and self.crop_height == self.frame_height:
            return region
        canvas = np.full((self.frame_height, self.frame_width) + region.shape[2:], fill,
                         dtype=region.dtype)
        canvas[self.crop_y:self.crop_y + self.crop_height,
               self.crop_x:self.crop_x + self.crop_width] = region
        return canvas

    def unturn_vectors(self, vectors: np.ndarray) -> np.ndarray:
        """Express H x W x 3 vectors given in the model's (turned) optical frame in the camera's.

        Call after :meth:`unfit` (which only moves pixels); returns ``vectors`` when not turned.
        """
        if not self.turned:
            return vectors
        out = vectors.copy()
        out[..., :2] = vectors[..., :2] @ _TURNED_TO_CAMERA_XY.T
        return out


def _resize(image: np.ndarray, size: tuple[int, int], interp: Interp) -> np.ndarray:
    if image.shape[1] == size[0] and image.shape[0] == size[1]:
        return image
    if interp is Interp.DEPTH:
        return resize_depth(image, size)
    return cv2.resize(image, size, interpolation=interp.value)


def resize_depth(depth: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """Resize an H x W depth image to ``size`` (w, h) without inventing depths across steps.

    Bilinear interpolation reads the 2x2 source pixels around a target pixel, all within one
    pixel of its nearest source pixel. Where that pixel's 3x3 neighbourhood holds a step (depths
    more than ``DEPTH_STEP_RATIO`` apart) or an invalid depth, the nearest depth is taken instead.
    """
    smooth = cv2.resize(depth, size, interpolation=cv2.INTER_LINEAR)
    nearest = cv2.resize(depth, size, interpolation=cv2.INTER_NEAREST_EXACT)
    finite = np.where(np.isfinite(depth), depth, 0).astype(np.float32)
    kernel = np.ones((3, 3), np.uint8)
    high, low = cv2.dilate(finite, kernel), cv2.erode(finite, kernel)
    with np.errstate(invalid="ignore"):
        step = ~(low > 0) | (high - low > DEPTH_STEP_RATIO * low)
    step = cv2.resize(step.view(np.uint8), size, interpolation=cv2.INTER_NEAREST_EXACT)
    # The nearest depth copied over the smooth one where the mask is set, in place (np.where
    # would convert the mask and write a third full-size array).
    cv2.copyTo(nearest, step, dst=smooth)
    return smooth


def _centred_crop(width: int, height: int, aspect: float) -> tuple[int, int, int, int]:
    """Largest centred (x, y, w, h) with w / h as close to ``aspect`` as whole pixels allow."""
    if width / height > aspect:
        w, h = max(1, min(width, round(height * aspect))), height
    else:
        w, h = width, max(1, min(height, round(width / aspect)))
    return (width - w) // 2, (height - h) // 2, w, h


def make_fit_plan(frame_width: int, frame_height: int, model_width: int, model_height: int,
                  mode: str = "crop") -> FitPlan:
    """Plan how a ``frame_width`` x ``frame_height`` frame feeds a model input, never padding.

    * ``crop``: centre-crop to the model aspect, then resize (no distortion).
    * ``stretch``: the whole frame, resized (aspect distorted).
    * ``rotate``: turn the frame 90 degrees clockwise when its orientation (landscape/portrait)
      is opposite to the model's, then centre-crop the small residual.
    """
    if frame_width < 1 or frame_height < 1:
        raise ValueError(f"frame size {frame_width}x{frame_height} is empty")
    if mode not in FIT_MODES:
        raise ValueError(f"fit mode '{mode}' is unknown; use one of: {', '.join(FIT_MODES)}")
    turned = False
    if mode == "rotate":
        frame_landscape = frame_width > frame_height
        model_landscape = model_width > model_height
        turned = (model_width != model_height and frame_width != frame_height
                  and frame_landscape != model_landscape)
    if mode == "stretch":
        x, y, w, h = 0, 0, frame_width, frame_height
    else:
        # The crop is taken in camera pixels, before turning: its aspect is the turned model's.
        aspect = model_height / model_width if turned else model_width / model_height
        x, y, w, h = _centred_crop(frame_width, frame_height, aspect)
    return FitPlan(frame_width, frame_height, x, y, w, h, turned, model_width, model_height, mode)
