# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Rectifying raw frames (D, R, P) on the way into the model: one ``cv2.remap`` per frame.

Undistortion, the fit plan's crop and resize are all maps from an output pixel to a raw pixel,
so they fold into one: OpenCV's ``initUndistortRectifyMap`` is asked for the rectified camera as
it appears on the model's grid (P cropped and scaled by the plan), and a turned plan turns the
maps. The maps are built once per (camera, plan) and cached, so a frame costs one remap, about
what the plain crop-and-resize costs. A bilinear remap does not average, so when the model's
grid is at least two times coarser than the frame, the frame is first shrunk by that whole factor
with area averaging (as the plain fit's INTER_AREA), and the maps point into the shrunk frame.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import cv2
import numpy as np

from .camera_model import DISTORTION_MODELS, CameraModel
from .fit import FitPlan
from .intrinsics import Intrinsics


def undistort_maps(camera: CameraModel, target: Intrinsics) -> tuple[np.ndarray, np.ndarray]:
    """Float maps (x, y) giving, for each pixel of the pinhole ``target`` grid, the raw pixel of
    ``camera`` that sees the same ray (OpenCV; R from the CameraInfo)."""
    k = np.array(camera.k, np.float64).reshape(3, 3)
    r = np.array(camera.r, np.float64).reshape(3, 3)
    new_k = np.array(target.k(), np.float64).reshape(3, 3)
    size = (target.width, target.height)
    if camera.distortion_model == "equidistant" and camera.distorted:
        d = np.array(camera.d[:DISTORTION_MODELS["equidistant"]], np.float64)
        return cv2.fisheye.initUndistortRectifyMap(k, d, r, new_k, size, cv2.CV_32FC1)
    # No distortion (any model, even D empty): R and P alone, through the plain map.
    d = np.array(camera.d if camera.distorted else (), np.float64)
    return cv2.initUndistortRectifyMap(k, d, r, new_k, size, cv2.CV_32FC1)


class _Maps:
    """Fixed-point remap tables plus where they land inside the raw frame."""

    def __init__(self, map_x: np.ndarray, map_y: np.ndarray, width: int, height: int,
                 shrink: int = 1) -> None:
        # A ray that leaves the raw frame has no colour: the products there are invalid.
        self.valid = ((map_x >= -0.5) & (map_x <= width - 0.5)
                      & (map_y >= -0.5) & (map_y <= height - 0.5)).astype(np.uint8)
        self.all_valid = bool(self.valid.all())
        self.shrunk_size = None
        if shrink > 1:  # point the maps into the frame shrunk by ``shrink`` (pixel centres kept)
            self.shrunk_size = (width // shrink, height // shrink)
            map_x = (map_x + 0.5) * (self.shrunk_size[0] / width) - 0.5
            map_y = (map_y + 0.5) * (self.shrunk_size[1] / height) - 0.5
        # 16-bit fixed point maps make cv2.remap about twice as fast as float maps.
        self.fixed, self.frac = cv2.convertMaps(map_x, map_y, cv2.CV_16SC2)

    def remap(self, frame: np.ndarray) -> np.ndarray:
        if self.shrunk_size is not None:
            frame = cv2.resize(frame, self.shrunk_size, interpolation=cv2.INTER_AREA)
        return cv2.remap(frame, self.fixed, self.frac, cv2.INTER_LINEAR,
                         borderMode=cv2.BORDER_REPLICATE)


class Rectifier:
    """Cached rectify-crop-resize maps for raw frames (thread-safe)."""

    def __init__(self, capacity: int = 4) -> None:
        self._capacity = capacity
        self._maps: OrderedDict[tuple, _Maps] = OrderedDict()
        self._lock = threading.Lock()

    def fit_image(self, frame: np.ndarray, camera: CameraModel, plan: FitPlan
                  ) -> tuple[np.ndarray, np.ndarray | None]:
        """The raw ``frame`` rectified, cropped, turned and resized as ``plan`` says, in one
        remap; and a uint8 mask on the model grid of the pixels the raw frame saw (None when
        it saw them all)."""
        maps = self._get(("model", camera, plan), lambda: self._model_maps(camera, plan))
        return maps.remap(frame), None if maps.all_valid else maps.valid

    def full_frame(self, frame: np.ndarray, camera: CameraModel) -> np.ndarray:
        """The raw ``frame`` rectified at its own size (the grid of ``camera.intrinsics()``)."""
        maps = self._get(("full", camera), lambda: _Maps(
            *undistort_maps(camera, camera.intrinsics()), camera.width, camera.height))
        return maps.remap(frame)

    @staticmethod
    def _model_maps(camera: CameraModel, plan: FitPlan) -> _Maps:
        # The rectified camera as the plan's crop and resize leave it (unturned model grid).
        target = plan.published_intrinsics(camera.intrinsics(), "model")
        map_x, map_y = undistort_maps(camera, target)
        if plan.turned:
            map_x = cv2.rotate(map_x, cv2.ROTATE_90_CLOCKWISE)
            map_y = cv2.rotate(map_y, cv2.ROTATE_90_CLOCKWISE)
        # Frame pixels per model pixel, in the rectified view (the fewer of the two axes).
        shrink = int(min(plan.crop_width / target.width, plan.crop_height / target.height))
        return _Maps(map_x, map_y, camera.width, camera.height, shrink)

    def _get(self, key: tuple, build) -> _Maps:
        with self._lock:
            maps = self._maps.get(key)
            if maps is not None:
                self._maps.move_to_end(key)
                return maps
        maps = build()
        with self._lock:
            self._maps[key] = maps
            while len(self._maps) > self._capacity:
                self._maps.popitem(last=False)
        return maps
