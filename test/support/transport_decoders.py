# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Decoders of image_transport's compressed formats, written from the formats' definitions (not
from dense_perception's encoders): the independent truth for the compressed-topic tests.

- compressed_depth_image_transport: ``format`` "<encoding>; compressedDepth png"; ``data`` a
  12-byte ConfigHeader (int32 format, 0 = INV_DEPTH; float32 a, b; little endian) and a 16-bit
  PNG. 32FC1: a non-zero v is ``a / (v - b)`` metres, 0 is invalid (NaN); 16UC1: the PNG's
  millimetres as they are.
- compressed_image_transport: "<encoding>; jpeg compressed bgr8" (JPEG of BGR) or
  "<encoding>; png compressed " (PNG, no conversion).
OpenCV decodes the PNG and JPEG streams.
"""

import struct

import cv2
import numpy as np


def depth_header(data) -> tuple[int, float, float]:
    """(format, a, b) of a compressedDepth payload."""
    return struct.unpack("<iff", bytes(data[:12]))


def decode_compressed_depth(fmt: str, data) -> tuple[str, np.ndarray]:
    """(encoding, depth): 32FC1 metres with NaN invalid, or 16UC1 millimetres."""
    encoding, rest = fmt.split(";", 1)
    if rest != " compressedDepth png":
        raise ValueError(f"not compressedDepth png: {fmt!r}")
    kind, a, b = depth_header(data)
    if kind != 0:
        raise ValueError(f"ConfigHeader format {kind}, not INV_DEPTH (0)")
    png = cv2.imdecode(np.frombuffer(bytes(data[12:]), np.uint8), cv2.IMREAD_UNCHANGED)
    if png is None or png.dtype != np.uint16 or png.ndim != 2:
        raise ValueError("the payload is not a one-channel 16-bit PNG")
    if encoding == "16UC1":
        return encoding, png
    with np.errstate(divide="ignore"):
        depth = np.float32(a) / (png.astype(np.float32) - np.float32(b))
    depth[png == 0] = np.nan
    return encoding, depth


def decode_jpeg_view(fmt: str, data) -> tuple[str, np.ndarray]:
    """(the raw image's encoding, the BGR image)."""
    encoding, rest = fmt.split(";", 1)
    if rest != " jpeg compressed bgr8":
        raise ValueError(f"not a bgr8 JPEG: {fmt!r}")
    return encoding, cv2.imdecode(np.frombuffer(bytes(data), np.uint8), cv2.IMREAD_COLOR)


def decode_png(fmt: str, data) -> tuple[str, np.ndarray]:
    """(encoding, the image as stored, unconverted)."""
    encoding, rest = fmt.split(";", 1)
    if rest != " png compressed ":
        raise ValueError(f"not an unconverted PNG: {fmt!r}")
    return encoding, cv2.imdecode(np.frombuffer(bytes(data), np.uint8), cv2.IMREAD_UNCHANGED)


def step_bound(z: np.ndarray, q: float = 100.0) -> np.ndarray:
    """One quantisation step in metres at depth z: a = q (q + 1); the decoded depth of
    trunc(a / z + b) lies in [z, a / (a / z - 1)], so the error is at most z^2 / (a - z)."""
    a = q * (q + 1)
    return z * z / (a - z)


def check_depth_round_trip(raw: np.ndarray, decoded: np.ndarray, q: float = 100.0,
                           depth_max: float = 10.0) -> None:
    """Valid exactly where ``raw`` is valid and encodable (< depth_max, >= a / (65536 - b)),
    there within one step and never nearer (float32 arithmetic: 0.1 % slack); NaN elsewhere."""
    a = q * (q + 1)
    nearest = a / (65536 - (1 - a / depth_max))
    with np.errstate(invalid="ignore"):
        encodable = np.isfinite(raw) & (raw >= nearest * 1.0001) & (raw < depth_max)
    np.testing.assert_array_equal(np.isfinite(decoded), encodable)
    z = raw[encodable].astype(np.float64)
    err = decoded[encodable] - z
    assert np.all(err >= -1e-6 * z), float(err.min())
    assert np.all(err <= step_bound(z, q) * 1.001 + 1e-7), float((err - step_bound(z, q)).max())


def psnr(a: np.ndarray, b: np.ndarray) -> float:
    """Peak signal-to-noise ratio (dB) of two uint8 images."""
    mse = np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2)
    return float(10 * np.log10(255.0 ** 2 / mse)) if mse > 0 else float("inf")
