# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The model size rule of ``export-da3``: ``--size WxH``, ``--aspect W:H`` or a camera_info YAML,
both sides multiples of the 14-pixel ViT patch, rounded as DA3's own ``upper_bound_resize``
(long side 504 by default: DA3's ``process_res``). No torch needed."""

from __future__ import annotations

import argparse
import math
import os
import re
from pathlib import Path

from .common import DEFAULT_LONG_SIDE, PATCH, ExportError


def parse_size(text: str) -> tuple[int, int]:
    """``'896x504'`` -> (896, 504) = (width, height); both must be multiples of 14."""
    m = re.fullmatch(r"\s*(\d+)\s*[xX*]\s*(\d+)\s*", text)
    if not m:
        raise argparse.ArgumentTypeError(f"size '{text}' is not WxH, e.g. 896x504")
    w, h = int(m.group(1)), int(m.group(2))
    bad = [f"{name} {v}" for name, v in (("width", w), ("height", h)) if v < PATCH or v % PATCH]
    if bad:
        raise argparse.ArgumentTypeError(
            f"size {w}x{h}: {', '.join(bad)} not a positive multiple of {PATCH} (the ViT patch); "
            f"use e.g. {_round14(w)}x{_round14(h)}, or --aspect W:H to let the size rule pick")
    return w, h


def parse_aspect(text: str) -> float:
    """``'16:9'``, ``'16/9'`` or ``'1.777'`` -> width / height."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*[:/]\s*(\d+(?:\.\d+)?)\s*", text)
    try:
        value = float(m.group(1)) / float(m.group(2)) if m else float(text)
    except (ValueError, ZeroDivisionError):
        value = float("nan")
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"aspect '{text}' is not W:H (e.g. 16:9) or a ratio > 0")
    return value


def read_camera_info_size(path: str | os.PathLike) -> tuple[int, int]:
    """(image_width, image_height) of a ROS camera_info YAML (camera_calibration_parsers)."""
    import yaml

    try:
        data = yaml.safe_load(Path(path).read_text())
    except OSError as exc:
        raise ExportError(f"camera info '{path}' cannot be read ({exc.strerror})") from None
    except yaml.YAMLError as exc:
        raise ExportError(f"camera info '{path}' is not YAML ({exc})") from None
    try:
        w, h = int(data["image_width"]), int(data["image_height"])
    except (TypeError, KeyError, ValueError):
        raise ExportError(f"camera info '{path}' has no integer image_width/image_height "
                          "(expected a ROS camera_info YAML)") from None
    if w < 1 or h < 1:
        raise ExportError(f"camera info '{path}' says {w}x{h}")
    return w, h


def _round14(v: float) -> int:
    return max(PATCH, int(round(v / PATCH)) * PATCH)


def _nearest_multiple(x: int, patch: int = PATCH) -> int:
    """DA3's ``nearest_multiple``: the closer multiple of ``patch``, ties going up."""
    down = (x // patch) * patch
    up = down + patch
    return up if abs(up - x) <= abs(x - down) else down


def size_for_image(width: float, height: float,
                   long_side: int = DEFAULT_LONG_SIDE) -> tuple[int, int]:
    """(width, height) of the model for a ``width`` x ``height`` camera: DA3's own
    ``upper_bound_resize`` (``InputProcessor``, ``process_res`` = ``long_side``).

    The longer side is scaled to ``long_side`` and each side rounded to a whole pixel (Python's
    ``round``), then to the nearest multiple of 14 (ties up). Unlike DA3 (which lets a side
    become 1 pixel) a side is never below one patch."""
    if long_side < PATCH or long_side % PATCH:
        raise ExportError(f"--long-side {long_side} is not a positive multiple of {PATCH}; "
                          f"use e.g. {_round14(long_side)}")
    if not (width > 0 and height > 0):
        raise ExportError(f"image size {width}x{height} is not positive")
    scale = long_side / float(max(width, height))
    w, h = max(1, int(round(width * scale))), max(1, int(round(height * scale)))
    return max(PATCH, _nearest_multiple(w)), max(PATCH, _nearest_multiple(h))


def size_for_aspect(aspect: float, long_side: int = DEFAULT_LONG_SIDE) -> tuple[int, int]:
    """(width, height) for a camera of ``aspect`` (= width / height): :func:`size_for_image`
    of a ``aspect`` x 1 (landscape) or 1 x ``1 / aspect`` (portrait) image."""
    return size_for_image(aspect, 1.0, long_side) if aspect >= 1 \
        else size_for_image(1.0, 1.0 / aspect, long_side)


def resolve_size(args: argparse.Namespace) -> tuple[int, int]:
    """The model's (width, height) from ``--size`` | ``--camera-info-yaml`` | ``--aspect``."""
    if args.size:
        return args.size
    if args.camera_info_yaml:
        w, h = read_camera_info_size(args.camera_info_yaml)
        return size_for_image(w, h, args.long_side)
    return size_for_aspect(args.aspect, args.long_side)


def default_out(width: int, height: int, gpu_clean: bool, fp16: bool, int8: bool = False) -> str:
    """``da3_small_896x504[_gpu][_fp16|_int8].tflite``."""
    suffix = ("_gpu" if gpu_clean else "") + ("_fp16" if fp16 else "") + ("_int8" if int8 else "")
    return f"da3_small_{width}x{height}{suffix}.tflite"

