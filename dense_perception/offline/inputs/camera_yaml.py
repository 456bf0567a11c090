# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""``process --camera-info-yaml FILE``: a calibration file as the CameraInfo a bag would give.

The file is the YAML that ROS's camera_calibration writes and camera_info_manager reads
(``image_width``, ``image_height``, ``camera_name``, ``camera_matrix``, ``distortion_model``,
``distortion_coefficients``, ``rectification_matrix``, ``projection_matrix``; ``binning_x``,
``binning_y`` and ``roi`` where present). It becomes a sensor_msgs/CameraInfo message of the
same type a bag's reader gives, so image folders and videos go through exactly the code a
bag's CameraInfo does (distortion, R, P, binning and ROI). Anything malformed is refused with
one line naming the file and what is wrong.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from ...core.geometry.camera_model import CameraModel
from .bag_io import CAMERA_INFO, TYPESTORE
from .file_io import InputError
from .events import Frame

_T = TYPESTORE.types
_IDENTITY = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]


class CalibrationFileError(InputError):
    """The calibration file cannot be used (the message names the file and the problem)."""


def load_camera_info_yaml(path: str | Path, input_rectified: bool = False) -> Any:
    """The sensor_msgs/CameraInfo of a camera_calibration YAML file.

    A missing ``rectification_matrix`` is the identity and a missing ``projection_matrix`` is
    [K | 0] (a monocular calibration's own values); a missing ``distortion_model`` is
    ``plumb_bob`` when there are no coefficients. Raises CalibrationFileError otherwise.
    """
    import yaml  # only here: the robot recipe's apt set has it through rosdep alone

    where = f"camera info YAML '{path}'"
    try:
        data = yaml.safe_load(Path(path).read_text())
    except OSError as exc:
        raise CalibrationFileError(f"{where} cannot be read ({exc.strerror})") from None
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise CalibrationFileError(f"{where} is not YAML ({_one_line(exc)})") from None
    if not isinstance(data, dict):
        raise CalibrationFileError(f"{where} is not a camera calibration (a mapping with "
                                   "image_width, image_height, camera_matrix, ...)")
    try:
        msg = _camera_info(data)
    except CalibrationFileError as exc:
        raise CalibrationFileError(f"{where}: {exc}") from None
    problem = CameraModel.from_camera_info(msg, input_rectified).problem()
    if problem:
        raise CalibrationFileError(f"{where} is unusable: {problem}")
    return msg


def calibrated_size(msg: Any) -> tuple[int, int]:
    """(width, height) of the images the calibration describes (binning and ROI applied)."""
    camera = CameraModel.from_camera_info(msg)
    return camera.width, camera.height


def size_problem(msg: Any, path: str | Path, width: int, height: int,
                 size: tuple[int, int] | None = None) -> str | None:
    """Why the calibration cannot serve ``width`` x ``height`` images, or None (``size``: its
    :func:`calibrated_size`, when the caller has it)."""
    size = size or calibrated_size(msg)
    if size == (width, height):
        return None
    applied = " (binning and ROI applied)" if size != (msg.width, msg.height) else ""
    return (f"camera info YAML '{path}' is for {size[0]}x{size[1]} images{applied} "
            f"but the input's are {width}x{height}")


def check_calibration_size(msg: Any, path: str | Path, size: tuple[int, int]) -> None:
    """CalibrationFileError unless the calibration (None: none given) is for images of
    ``size`` (width, height)."""
    problem = None if msg is None else size_problem(msg, path, *size)
    if problem:
        raise CalibrationFileError(problem)


def calibrated_frames(events: Iterator[Frame], msg: Any, path: str | Path) -> Iterator[Frame]:
    """The frames with the calibration's CameraInfo, as a bag's frames carry theirs; a frame
    of another size (a folder of mixed images) is skipped with the reason."""
    size = calibrated_size(msg)  # once: every frame is checked against it
    for frame in events:
        if frame.image is not None:
            problem = size_problem(msg, path, frame.image.shape[1], frame.image.shape[0], size)
            if problem:
                frame = Frame(frame.index, frame.stem, None, problem=problem, time=frame.time)
            else:
                frame.camera_info, frame.camera_info_note = msg, f"from {path}"
        yield frame


def _camera_info(data: dict) -> Any:
    width, height = _count(data, "image_width", 1), _count(data, "image_height", 1)
    k = _matrix(data, "camera_matrix", 3, 3)
    d = _matrix(data, "distortion_coefficients", 1, None, required=False) or []
    model = data.get("distortion_model")
    if model is None:
        if any(d):
            raise CalibrationFileError("distortion_coefficients are given without a "
                                       "distortion_model")
        model = "plumb_bob"
    if not isinstance(model, str) or not model:
        raise CalibrationFileError(f"distortion_model must be a name, got {model!r}")
    r = _matrix(data, "rectification_matrix", 3, 3, required=False) or _IDENTITY
    p = _matrix(data, "projection_matrix", 3, 4, required=False) or \
        k[:3] + [0.0] + k[3:6] + [0.0] + k[6:] + [0.0]
    roi = data.get("roi") or {}
    if not isinstance(roi, dict):
        raise CalibrationFileError(f"roi must be a mapping (x_offset, y_offset, width, height), "
                                   f"got {roi!r}")
    header = _T["std_msgs/msg/Header"](stamp=_T["builtin_interfaces/msg/Time"](sec=0, nanosec=0),
                                       frame_id=str(data.get("camera_name") or ""))
    return _T[CAMERA_INFO](
        header=header, height=height, width=width, distortion_model=model,
        d=np.array(d, np.float64), k=np.array(k, np.float64), r=np.array(r, np.float64),
        p=np.array(p, np.float64), binning_x=_count(data, "binning_x", 0, 0),
        binning_y=_count(data, "binning_y", 0, 0),
        roi=_T["sensor_msgs/msg/RegionOfInterest"](
            x_offset=_count(roi, "x_offset", 0, 0, "roi."),
            y_offset=_count(roi, "y_offset", 0, 0, "roi."),
            height=_count(roi, "height", 0, 0, "roi."), width=_count(roi, "width", 0, 0, "roi."),
            do_rectify=bool(roi.get("do_rectify", False))))


def _count(data: dict, key: str, low: int, default: int | None = None, prefix: str = "") -> int:
    """An integer >= ``low`` (``default`` when absent; required when None)."""
    value = data.get(key, default)
    if value is None:
        raise CalibrationFileError(f"{prefix}{key} is missing")
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise CalibrationFileError(f"{prefix}{key} must be an integer >= {low}, got {value!r}")
    return value


def _matrix(data: dict, key: str, rows: int, cols: int | None,
            required: bool = True) -> list[float] | None:
    """``key``'s ``data`` (rows x cols finite numbers, row-major), checked against its own
    ``rows`` and ``cols``; None when absent and not required."""
    entry = data.get(key)
    if entry is None:
        if required:
            raise CalibrationFileError(f"{key} is missing")
        return None
    if not isinstance(entry, dict) or not isinstance(entry.get("data"), list):
        raise CalibrationFileError(f"{key} must be a mapping with rows, cols and a data list")
    values = entry["data"]
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
               for v in values):
        raise CalibrationFileError(f"{key} data must be finite numbers, got {values!r}")
    n_rows, n_cols = entry.get("rows", rows), entry.get("cols", len(values) if cols is None
                                                       else cols)
    if (n_rows, n_cols) != (rows, n_cols if cols is None else cols):
        want = f"{rows}x{cols}" if cols is not None else f"{rows}xN"
        raise CalibrationFileError(f"{key} is {n_rows}x{n_cols}, should be {want}")
    if not isinstance(n_cols, int) or len(values) != n_rows * n_cols:
        raise CalibrationFileError(f"{key} has {len(values)} values for {n_rows}x{n_cols}")
    return [float(v) for v in values]


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())
