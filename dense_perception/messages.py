"""Conversions between ROS 2 messages and numpy arrays (no cv_bridge, no sensor_msgs_py)."""

from __future__ import annotations

import array

import cv2
import numpy as np
from sensor_msgs.msg import CameraInfo, CompressedImage, Image, PointCloud2, PointField
from std_msgs.msg import Header

from .intrinsics import Intrinsics
from .preprocess import PIXEL_FORMATS

_POINT_FIELD_TYPES = {np.dtype(np.float32): PointField.FLOAT32}


class BadImageError(ValueError):
    """The Image message cannot be read as a frame; the message says why."""


def image_to_array(msg: Image) -> np.ndarray:
    """A H x W [x C] uint8 view of an Image's data (no copy); BadImageError if malformed."""
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


def compressed_to_array(msg: CompressedImage) -> tuple[np.ndarray, str]:
    """Decode a JPEG/PNG CompressedImage with OpenCV into (bgr8 array, 'bgr8')."""
    data = np.frombuffer(msg.data, np.uint8)
    frame = cv2.imdecode(data, cv2.IMREAD_COLOR) if data.size else None
    if frame is None:
        raise BadImageError(f"could not decode compressed image (format '{msg.format}', "
                            f"{data.size} bytes)")
    return frame, "bgr8"


def array_to_image(image: np.ndarray, encoding: str, header: Header) -> Image:
    """An Image message holding ``image`` (H x W [x C], contiguous copy made if needed)."""
    image = np.ascontiguousarray(image)
    msg = Image()
    msg.header = header
    msg.height, msg.width = int(image.shape[0]), int(image.shape[1])
    msg.encoding = encoding
    msg.is_bigendian = 0  # numpy arrays here are native little-endian (x86_64, aarch64)
    msg.step = int(image.strides[0])
    msg.data = array.array("B", image.tobytes())
    return msg


def camera_info_to_intrinsics(msg: CameraInfo) -> Intrinsics:
    """Intrinsics from a CameraInfo's K and size."""
    return Intrinsics.from_k(msg.k, msg.width, msg.height)


def intrinsics_to_camera_info(k: Intrinsics, header: Header,
                              source: CameraInfo | None = None) -> CameraInfo:
    """CameraInfo for the published grid; distortion is copied from ``source`` (it is defined in
    normalised coordinates, so cropping and scaling leave it valid)."""
    msg = CameraInfo()
    msg.header = header
    msg.width, msg.height = int(k.width), int(k.height)
    msg.k = [float(v) for v in k.k()]
    msg.p = [k.fx, 0.0, k.cx, 0.0, 0.0, k.fy, k.cy, 0.0, 0.0, 0.0, 1.0, 0.0]
    msg.r = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
    if source is not None:
        msg.distortion_model = source.distortion_model
        msg.d = list(source.d)
        msg.r = list(source.r)
    else:
        msg.distortion_model = "plumb_bob"
        msg.d = [0.0] * 5
    return msg


def points_to_cloud(points: np.ndarray, header: Header) -> PointCloud2:
    """A PointCloud2 from a structured float32 array (organised if 2-D, else 1 x N)."""
    msg = PointCloud2()
    msg.header = header
    if points.ndim == 2:
        msg.height, msg.width = int(points.shape[0]), int(points.shape[1])
    else:
        msg.height, msg.width = 1, int(points.shape[0])
    msg.fields = [PointField(name=name, offset=int(points.dtype.fields[name][1]),
                             datatype=_POINT_FIELD_TYPES[points.dtype.fields[name][0]], count=1)
                  for name in points.dtype.names]
    msg.is_bigendian = False
    msg.point_step = int(points.dtype.itemsize)
    msg.row_step = msg.point_step * msg.width
    # Organised clouds keep NaN points for invalid pixels (REP 118 style); unorganised have none.
    msg.is_dense = points.ndim != 2
    msg.data = array.array("B", np.ascontiguousarray(points).tobytes())
    return msg


def cloud_to_points(msg: PointCloud2) -> np.ndarray:
    """Read a PointCloud2 of float32 fields back into a structured array (height x width)."""
    dtype = np.dtype({"names": [f.name for f in msg.fields],
                      "formats": [np.float32] * len(msg.fields),
                      "offsets": [f.offset for f in msg.fields],
                      "itemsize": msg.point_step})
    data = np.frombuffer(msg.data, np.uint8).reshape(msg.height, msg.row_step)
    return data[:, :msg.width * msg.point_step].copy().view(dtype).reshape(msg.height, msg.width)
