# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""image_transport's compressed wire formats, written from numpy products (ROS-free).

The node and the offline command publish these beside the raw topics, so RViz, Foxglove and
``image_transport republish`` decode them without any extra package on the robot:

- ``compressedDepth`` (compressed_depth_image_transport, ``format: png``): a 12-byte
  ``ConfigHeader`` (int32 compression format, 0 = INV_DEPTH; float32 quantisation a, b; little
  endian) followed by a 16-bit PNG. For ``32FC1`` the PNG holds quantised inverse depth
  ``trunc(a / z + b)`` with ``a = q (q + 1)`` and ``b = 1 - a / depth_max`` (``q`` =
  depth_quantization), 0 for invalid or ``z >= depth_max``; a decoder reads ``z = a / (v - b)``.
  The truncation's error is bounded (``z**2 / (a - z)``) for ``z < a`` only: farther, one step
  spans all depth out to depth_max, so such depth is sent as invalid too, never as a wrong
  distance (and the settings refuse a depth_max beyond ``a``).
  For ``16UC1`` it holds the millimetres as they are, 0 past ``depth_max``. The format string is
  ``"<encoding>; compressedDepth png"``.
- ``compressed`` (compressed_image_transport): JPEG of colour images converted to BGR, format
  ``"<encoding>; jpeg compressed bgr8"``; lossless PNG of single-channel images, format
  ``"<encoding>; png compressed "`` (the plugin's own trailing space: it names no conversion).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import cv2
import numpy as np

INV_DEPTH = 0  # compression_common.h: compressionFormat INV_DEPTH
# ConfigHeader {compressionFormat format; float depthParam[2]}, little endian
CONFIG_HEADER = struct.Struct("<iff")
UINT16_MAX = 65535


@dataclass(frozen=True)
class CompressionConfig:
    """The encoders' settings (the node's ``compressed_*`` / ``jpeg_quality`` parameters);
    defaults are the image_transport plugins' own but for the JPEG quality (80, not 95)."""

    depth_max: float = 10.0          # m: farther depth is sent as invalid
    depth_quantization: float = 100.0  # depth (m) at which one quantisation step is 1 m
    png_level: int = 3               # zlib level 0-9 (OpenCV's and the plugins' default 3)
    jpeg_quality: int = 80           # 0-100


@dataclass(frozen=True)
class Compressed:
    """One ``sensor_msgs/CompressedImage`` payload: its ``format`` string and ``data`` bytes."""

    format: str
    data: np.ndarray  # flat uint8


def quantization(config: CompressionConfig) -> tuple[float, float]:
    """compressedDepth's (a, b) for ``config``, as float32 values (the header's)."""
    q = np.float32(config.depth_quantization)
    a = np.float32(q * (q + np.float32(1.0)))
    b = np.float32(np.float32(1.0) - a / np.float32(config.depth_max))
    return float(a), float(b)


def representable_depth(config: CompressionConfig = CompressionConfig()) -> float:
    """The depth (m) below which compressedDepth's error is bounded: ``a = q (q + 1)``; at or
    past it (or past depth_max) depth is sent as invalid."""
    return quantization(config)[0]


def depth_error_bound(z: float, config: CompressionConfig = CompressionConfig()) -> float:
    """The largest decoded-minus-true depth (m) at depth ``z`` (always >= 0: the truncation
    rounds inverse depth down, so decoded depth is never nearer): ``z**2 / (a - z)`` for
    ``z < a``; ValueError for ``z >= a``, where no bound holds (such depth is sent invalid)."""
    a, _ = quantization(config)
    if not z < a:
        raise ValueError(f"no error bound at {z} m: compressedDepth holds depth below "
                         f"q (q + 1) = {a:g} m only")
    return z * z / (a - z)


def nearest_encodable(config: CompressionConfig = CompressionConfig()) -> float:
    """The nearest depth (m) the 16-bit inverse depth can hold; nearer is sent as invalid."""
    a, b = quantization(config)
    return a / (UINT16_MAX + 1 - b)


def _png(image: np.ndarray, level: int) -> np.ndarray:
    ok, data = cv2.imencode(".png", image, [cv2.IMWRITE_PNG_COMPRESSION, int(level)])
    if not ok:
        raise ValueError(f"PNG encoding failed for a {image.dtype} {image.shape} image")
    return data.reshape(-1)


def _with_header(a: float, b: float, png: np.ndarray) -> np.ndarray:
    out = np.empty(CONFIG_HEADER.size + png.size, np.uint8)
    out[:CONFIG_HEADER.size] = np.frombuffer(CONFIG_HEADER.pack(INV_DEPTH, a, b), np.uint8)
    out[CONFIG_HEADER.size:] = png
    return out


def inverse_depth(depth: np.ndarray, config: CompressionConfig) -> np.ndarray:
    """``32FC1`` metres -> compressedDepth's 16-bit quantised inverse depth (0 = invalid)."""
    a, b = quantization(config)
    z = depth.astype(np.float32, copy=False)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        v = np.float32(a) / z + np.float32(b)  # float32 arithmetic, as the plugin's
        # Invalid (NaN, inf, <= 0), at or past depth_max, too near for 16 bits, or at or past
        # a (no bound: it would decode as depth_max or worse): 0. The plugin's own conversion
        # is undefined for a too-near depth; withheld here instead.
        keep = (z > 0) & (z < np.float32(min(config.depth_max, a))) & (v < UINT16_MAX + 1)
    out = np.zeros(depth.shape, np.uint16)
    out[keep] = v[keep]  # positive: the cast truncates, as the plugin's C++ conversion
    return out


def compressed_depth(depth: np.ndarray, encoding: str,
                     config: CompressionConfig = CompressionConfig()) -> Compressed:
    """``depth/image/compressedDepth``: ``depth`` (H x W) as published, ``32FC1`` metres (NaN
    invalid) or ``16UC1`` millimetres (0 invalid)."""
    if depth.ndim != 2:
        raise ValueError(f"compressedDepth needs a one-channel depth image, got {depth.shape}")
    if encoding == "32FC1":
        a, b = quantization(config)
        data = _with_header(a, b, _png(inverse_depth(depth, config), config.png_level))
    elif encoding == "16UC1":
        mm = np.asarray(depth, np.uint16)
        limit = min(UINT16_MAX, int(config.depth_max * 1000.0))
        mm = np.where(mm > limit, np.uint16(0), mm)
        data = _with_header(0.0, 0.0, _png(mm, config.png_level))
    else:
        raise ValueError(f"compressedDepth takes 32FC1 or 16UC1 depth, not {encoding}")
    return Compressed(f"{encoding}; compressedDepth png", data)


def jpeg(image: np.ndarray, encoding: str,
         config: CompressionConfig = CompressionConfig()) -> Compressed:
    """A colour view (``rgb8`` or ``bgr8``, H x W x 3) as compressed_image_transport's JPEG."""
    if encoding not in ("rgb8", "bgr8") or image.ndim != 3 or image.shape[2] != 3:
        raise ValueError(f"JPEG views are rgb8/bgr8 H x W x 3, got {encoding} {image.shape}")
    bgr = cv2.cvtColor(image, cv2.COLOR_RGB2BGR) if encoding == "rgb8" else image
    ok, data = cv2.imencode(".jpg", bgr, [cv2.IMWRITE_JPEG_QUALITY, int(config.jpeg_quality)])
    if not ok:
        raise ValueError("JPEG encoding failed")
    return Compressed(f"{encoding}; jpeg compressed bgr8", data.reshape(-1))


def png_mono(image: np.ndarray, encoding: str,
             config: CompressionConfig = CompressionConfig()) -> Compressed:
    """A one-channel 8/16-bit image (labels) as compressed_image_transport's lossless PNG."""
    if image.ndim != 2 or image.dtype not in (np.uint8, np.uint16):
        raise ValueError(f"PNG here takes one-channel 8/16-bit images, got {image.dtype} "
                         f"{image.shape}")
    return Compressed(f"{encoding}; png compressed ", _png(image, config.png_level))
