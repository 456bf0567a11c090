# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Image and video files in, result folders out, for the offline ``process`` command.

Output folder layout (one file per frame and product, ``<stem>`` = the input file's stem or
``frame_000123`` for videos; each product's row in ``core/product_table.py`` says its file)::

    depth/<stem>.npy             float32 metres (or relative units), NaN = invalid
    depth/<stem>.png             ... or 16-bit PNG in millimetres, 0 = invalid (--depth-format png16)
    depth_colored/<stem>.png     colour view (near = warm)
    depth_confidence/<stem>.npy  float32 DA3's confidence (its own values, >= 1), NaN = not seen
    normals/<stem>.npy           float32 H x W x 3 unit vectors, camera optical frame, NaN invalid
    normals_colored/<stem>.png
    labels/<stem>.png            8-bit ADE20K class ids, 255 = not seen by the model
    labels_colored/<stem>.png
    labels_confidence/<stem>.png 8-bit top-class softmax probability x 255, 0 = not seen
    points/<stem>.ply            binary PLY, x y z float (metres, camera optical frame) [+ rgb]
    classes.json                 ADE20K class names, index = label id (with labels)
    summary.json                 model, backend, frames, per-stage timing (mean / p95 ms), ...
"""

from __future__ import annotations

import json
import math
import os
import re
from decimal import Decimal
from pathlib import Path
from typing import Any, Iterator

import cv2
import numpy as np

from ...core import postprocess as post
from ...core.geometry.pointcloud import finite_points
from ...core.product_table import PRODUCTS
from ...core.timing import StageStats

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff", ".webp", ".pgm", ".ppm",
                  ".pnm", ".jp2")
DEPTH_FORMATS = ("npy", "png16")
STAMP_NAME = re.compile(r"[0-9]+(\.[0-9]+)?")  # seconds: 1305031102.175304


class InputError(RuntimeError):
    """An input or output path cannot be used; the message says why (one line)."""


# ---- inputs -------------------------------------------------------------------------------------
def is_image_file(path: Path) -> bool:
    return path.suffix.lower() in IMAGE_SUFFIXES


def list_images(folder: Path) -> list[Path]:
    """The image files directly in ``folder``, in name order (numbers compared as numbers);
    frames named by their stamps (:func:`name_stamps`) in time order."""
    files = [p for p in folder.iterdir() if p.is_file() and is_image_file(p)
             and not p.name.startswith(".")]
    stamps = name_stamps(files)
    if stamps is not None:  # 1000.1 after 1000.033333: the stamp's value, not its digits
        return [p for _, p in sorted(zip(stamps, files), key=lambda sp: (sp[0], sp[1].name))]
    return sorted(files, key=_natural_key)


def name_stamps(paths: list[Path]) -> list[Decimal] | None:
    """The stamps (s) that name ``paths``, as TUM RGB-D names its frames
    (``1305031102.175304.png``; trailing zeros may be left out: ``1000.1.png``, ``1000.png``),
    or None unless every name is a number and one at least has a fractional part (names that
    are all whole numbers, ``000123.png``, are frame numbers, not times)."""
    if not paths or not all(STAMP_NAME.fullmatch(p.stem) for p in paths):
        return None
    if not any("." in p.stem for p in paths):
        return None
    return [Decimal(p.stem) for p in paths]


def _natural_key(path: Path) -> list[Any]:
    return [int(part) if part.isdigit() else part.lower()
            for part in re.split(r"(\d+)", path.name)]


def read_image(path: Path) -> np.ndarray:
    """An image file as bgr8 (grey and 16-bit images are converted); InputError if unreadable."""
    data = np.fromfile(str(path), np.uint8) if path.is_file() else None
    frame = cv2.imdecode(data, cv2.IMREAD_COLOR) if data is not None and data.size else None
    if frame is None:
        raise InputError(f"cannot read image '{path}' (not an image OpenCV can decode)")
    return frame


class VideoReader:
    """A video file read with OpenCV; InputError when it cannot be opened or has no frame."""

    def __init__(self, path: Path) -> None:
        self.path = path
        if not path.is_file():
            raise InputError(f"input '{path}' does not exist")
        self._cap = cv2.VideoCapture(str(path))
        if not self._cap.isOpened():
            raise InputError(f"cannot open '{path}' as a video, image or bag (OpenCV could not "
                             f"read it)")
        ok, self._first = self._cap.read()
        if not ok or self._first is None:
            self._cap.release()
            raise InputError(f"cannot read a frame from video '{path}' (unsupported codec or "
                             f"damaged file)")
        count = int(self._cap.get(cv2.CAP_PROP_FRAME_COUNT))
        self.frame_count = count if count > 0 else None
        fps = float(self._cap.get(cv2.CAP_PROP_FPS))
        self.fps = fps if math.isfinite(fps) and fps > 0 else None

    @property
    def size(self) -> tuple[int, int]:
        """(width, height) of the first frame."""
        return self._first.shape[1], self._first.shape[0]

    def frames(self) -> Iterator[np.ndarray]:
        """bgr8 frames until the end (or the first unreadable frame)."""
        frame = self._first
        while frame is not None:
            yield frame
            ok, frame = self._cap.read()
            if not ok:
                frame = None

    def close(self) -> None:
        self._cap.release()


# ---- outputs ------------------------------------------------------------------------------------
def check_new_output(path: Path) -> None:
    """InputError unless ``path`` does not exist yet or is an empty folder."""
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise InputError(f"output '{path}' exists already; choose another --out or remove it")


def write_ply(path: Path, points: np.ndarray) -> int:
    """Binary little-endian PLY of the finite points (x y z float [+ red green blue uchar]).

    ``points`` is the pipeline's structured array (XYZ or XYZRGB with packed float ``rgb``),
    organised or not. Returns the number of points written.
    """
    xyz, rgb = finite_points(points)
    has_rgb = rgb is not None
    fields = [("x", "<f4"), ("y", "<f4"), ("z", "<f4")]
    if has_rgb:
        fields += [("red", "u1"), ("green", "u1"), ("blue", "u1")]
    out = np.empty(xyz.shape[0], np.dtype(fields))
    for i, axis in enumerate("xyz"):
        out[axis] = xyz[:, i]
    if has_rgb:
        for i, channel in enumerate(("red", "green", "blue")):
            out[channel] = rgb[:, i]
    header = ["ply", "format binary_little_endian 1.0",
              "comment dense_perception: metres, camera optical frame (x right, y down, z ahead)",
              f"element vertex {out.shape[0]}"]
    header += [f"property float {a}" for a in "xyz"]
    if has_rgb:
        header += [f"property uchar {c}" for c in ("red", "green", "blue")]
    header.append("end_header")
    with open(path, "wb") as f:
        f.write(("\n".join(header) + "\n").encode("ascii"))
        f.write(out.tobytes())
    return int(out.shape[0])


def read_ply(path: Path) -> np.ndarray:
    """Read back a PLY written by :func:`write_ply` (for tests and scripts)."""
    with open(path, "rb") as f:
        props = []
        count = 0
        while True:
            line = f.readline().decode("ascii").strip()
            if line.startswith("element vertex"):
                count = int(line.split()[-1])
            elif line.startswith("property"):
                _, kind, name = line.split()
                props.append((name, "<f4" if kind == "float" else "u1"))
            elif line == "end_header":
                break
        return np.frombuffer(f.read(), np.dtype(props), count)


def write_json(path: Path, value: Any) -> None:
    """Write JSON atomically (a reader never sees half a file)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(value, indent=2, sort_keys=False) + "\n")
    os.replace(tmp, path)


def timing_summary(stats: dict[str, StageStats]) -> dict[str, dict[str, float]]:
    """Per-stage {count, mean_ms, p95_ms} for summary.json."""
    return {name: {"count": s.count, "mean_ms": round(s.mean_ms, 3), "p95_ms": round(s.p95_ms, 3)}
            for name, s in stats.items()}


class FolderSink:
    """Writes each frame's products as files under ``root`` (see the module docstring)."""

    def __init__(self, root: Path, keys: list[str], depth_format: str = "npy") -> None:
        if depth_format not in DEPTH_FORMATS:
            raise InputError(f"depth format '{depth_format}' is unknown; use one of: "
                             f"{', '.join(DEPTH_FORMATS)}")
        self.root = root
        # files are PNG already: image_transport's compressed topics are for bags only
        self.keys = [k for k in keys if PRODUCTS[k].file]
        self.depth_format = depth_format
        self.counts: dict[str, int] = {k: 0 for k in self.keys}
        root.mkdir(parents=True, exist_ok=True)
        for key in self.keys:
            (root / key).mkdir(exist_ok=True)
        if "classes" in keys:
            write_json(root / "classes.json", list(post.ade20k_class_names()))

    def write(self, stem: str, products: Any) -> None:
        root = self.root
        for key in self.keys:
            value = products.get(key)
            if value is None:
                continue
            form = PRODUCTS[key].file  # the products table says how
            if form == "depth" and self.depth_format == "png16":
                _imwrite(root / key / f"{stem}.png", post.depth_to_millimetres(value))
            elif form in ("depth", "npy"):  # float32 arrays
                np.save(root / key / f"{stem}.npy", value)
            elif form == "ply":
                write_ply(root / key / f"{stem}.ply", value)
            elif form == "png":  # mono8, bgr8
                _imwrite(root / key / f"{stem}.png", value)
            else:  # png_rgb: rgb8 colour views
                _imwrite(root / key / f"{stem}.png", cv2.cvtColor(value, cv2.COLOR_RGB2BGR))
            self.counts[key] += 1


def _imwrite(path: Path, image: np.ndarray) -> None:
    ok, data = cv2.imencode(".png", image)
    if not ok:
        raise OSError(f"cannot encode {path.name} as PNG")
    data.tofile(str(path))
