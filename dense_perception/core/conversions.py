# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Message layouts <-> numpy, for any message library (ROS-free, duck-typed).

Reading works on any object with the fields of sensor_msgs Image / CompressedImage /
CameraInfo / PointCloud2 (rclpy's messages or the ``rosbags`` library's). Writing returns the
field values; ``messages`` (rclpy) and ``bagio`` (rosbags) only build their own message objects
from them, so the layouts are defined once, here. Which products exist and which message each
becomes is in ``products.py``.
"""

from __future__ import annotations

from typing import Any

import cv2
import numpy as np

from .geometry.intrinsics import Intrinsics
from .preprocess import PIXEL_FORMATS

POINT_FIELD_FLOAT32 = 7  # sensor_msgs/PointField.FLOAT32

_ENCODING_DTYPES = {"32FC1": (np.float32, 1), "32FC3": (np.float32, 3),
                    "16UC1": (np.uint16, 1), "mono8": (np.uint8, 1), "rgb8": (np.uint8, 3),
                    "bgr8": (np.uint8, 3), "rgba8": (np.uint8, 4), "bgra8": (np.uint8, 4)}


class BadImageError(ValueError):
    """The image message cannot be read as a frame; the message says why."""


def image_to_array(msg: Any) -> np.ndarray:
    """A H x W [x C] uint8 view of an 8-bit camera Image's data (no copy).

    BadImageError for an unsupported encoding, an empty image, a step shorter than a row, or
    data whose size is not step x height. Padded rows (step longer than a row) are fine.
    """
    fmt = PIXEL_FORMATS.get(msg.encoding)
    if fmt is None:
        raise BadImageError(f"unsupported encoding '{msg.encoding}'; supported: "
                            f"{', '.join(PIXEL_FORMATS)}")
    width, height, step = int(msg.width), int(msg.height), int(msg.step)
    if width <= 0 or height <= 0:
        raise BadImageError(f"empty image ({width}x{height})")
    row_bytes = width * fmt.channels
    if step < row_bytes:
        raise BadImageError(f"step {step} is smaller than width x bytes per pixel ({row_bytes})")
    data = np.frombuffer(msg.data, np.uint8)
    if data.size != step * height:
        raise BadImageError(f"data has {data.size} bytes but step x height = {step} x {height} "
                            f"= {step * height}")
    rows = np.lib.stride_tricks.as_strided(data, shape=(height, row_bytes), strides=(step, 1))
    if fmt.channels == 1:
        return rows
    return rows.reshape(height, width, fmt.channels)


def compressed_to_array(msg: Any) -> tuple[np.ndarray, str]:
    """Decode a JPEG/PNG CompressedImage with OpenCV into (bgr8 array, 'bgr8')."""
    data = np.frombuffer(msg.data, np.uint8)
    frame = cv2.imdecode(data, cv2.IMREAD_COLOR) if data.size else None
    if frame is None:
        raise BadImageError(f"could not decode compressed image (format '{msg.format}', "
                            f"{data.size} bytes)")
    return frame, "bgr8"


def image_msg_to_array(msg: Any) -> np.ndarray:
    """Any Image this package writes (32FC1, 32FC3, 16UC1, 8-bit) as a H x W [x C] copy."""
    dtype, channels = _ENCODING_DTYPES[msg.encoding]
    rows = np.frombuffer(msg.data, np.uint8).reshape(msg.height, msg.step)
    pixels = rows[:, :msg.width * channels * np.dtype(dtype).itemsize].copy().view(dtype)
    return pixels.reshape((msg.height, msg.width) + ((channels,) if channels > 1 else ()))


def image_fields(image: np.ndarray, encoding: str) -> dict[str, Any]:
    """Image field values for ``image`` (H x W [x C]); ``data`` is a flat uint8 array.

    ValueError when the array's element type or channel count is not the encoding's (a float64
    array sent as 32FC1 would be read as twice as many wrong depths).
    """
    if encoding in _ENCODING_DTYPES:
        dtype, channels = _ENCODING_DTYPES[encoding]
        got = 1 if image.ndim == 2 else image.shape[2]
        if image.dtype != dtype or image.ndim not in (2, 3) or got != channels:
            raise ValueError(f"a {image.dtype} array of shape {image.shape} is not {encoding} "
                             f"({np.dtype(dtype).name} x {channels} channel(s))")
    image = np.ascontiguousarray(image)
    return {"height": int(image.shape[0]), "width": int(image.shape[1]), "encoding": encoding,
            # numpy arrays here are native little-endian (x86_64, aarch64)
            "is_bigendian": 0, "step": int(image.strides[0]),
            "data": image.reshape(-1).view(np.uint8)}


def camera_info_fields(k: Intrinsics) -> dict[str, Any]:
    """CameraInfo field values that are true for the published grid ``k``.

    Every product is published in the rectified frame (raw input is rectified before the
    model), so D is zero, R the identity and K = P: depth_image_proc and image_geometry, which
    read P for a rectified image, then back-project exactly as the node does.
    """
    return {"width": int(k.width), "height": int(k.height), "k": [float(v) for v in k.k()],
            "p": [float(k.fx), 0.0, float(k.cx), 0.0, 0.0, float(k.fy), float(k.cy), 0.0,
                  0.0, 0.0, 1.0, 0.0],
            "r": [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0],
            "distortion_model": "plumb_bob", "d": [0.0] * 5}


def cloud_fields(points: np.ndarray) -> dict[str, Any]:
    """PointCloud2 field values for a structured float32 array (organised if 2-D, else 1 x N).

    ``fields`` is a list of (name, offset); every field is one FLOAT32.
    """
    height, width = points.shape if points.ndim == 2 else (1, points.shape[0])
    step = int(points.dtype.itemsize)
    return {"height": int(height), "width": int(width),
            "fields": [(name, int(points.dtype.fields[name][1])) for name in points.dtype.names],
            "is_bigendian": False, "point_step": step, "row_step": step * int(width),
            # Organised clouds keep NaN points for invalid pixels; unorganised ones have none.
            "is_dense": points.ndim != 2,
            "data": np.ascontiguousarray(points).reshape(-1).view(np.uint8)}


def cloud_to_points(msg: Any) -> np.ndarray:
    """Read a PointCloud2 of float32 fields back into a structured array (height x width)."""
    dtype = np.dtype({"names": [f.name for f in msg.fields],
                      "formats": [np.float32] * len(msg.fields),
                      "offsets": [f.offset for f in msg.fields],
                      "itemsize": msg.point_step})
    data = np.frombuffer(msg.data, np.uint8).reshape(msg.height, msg.row_step)
    return data[:, :msg.width * msg.point_step].copy().view(dtype).reshape(msg.height, msg.width)
