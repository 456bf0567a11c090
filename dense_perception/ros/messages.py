# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""rclpy messages from numpy products (no cv_bridge, no sensor_msgs_py).

The layouts live in :mod:`dense_perception.core.conversions` (ROS-free, also used to read messages);
this module only builds rclpy message objects from them.
"""

from __future__ import annotations

import array

import numpy as np
from sensor_msgs.msg import CameraInfo, CompressedImage, Image, PointCloud2, PointField
from std_msgs.msg import Header, String

from ..core.conversions import camera_info_fields, cloud_fields, image_fields
from ..core.geometry.intrinsics import Intrinsics

# rclpy message classes by the type names of products.OUTPUTS.
MESSAGE_CLASSES: dict[str, type] = {
    "sensor_msgs/msg/Image": Image, "sensor_msgs/msg/CameraInfo": CameraInfo,
    "sensor_msgs/msg/PointCloud2": PointCloud2, "std_msgs/msg/String": String,
    "sensor_msgs/msg/CompressedImage": CompressedImage}


def _set_data(msg: Image | PointCloud2 | CompressedImage, data: np.ndarray) -> None:
    """Give ``msg`` its ``uint8[] data`` (``data``: a flat, contiguous uint8 array).

    rclpy's conversion to the C message (at publish and at serialisation) copies any
    contiguous buffer in one memcpy: its fast path for arrays of primitives. Only the Python
    setter insists on ``array.array('B')``, which would cost one more full copy of every
    frame-sized product. So the array is stored in the field's slot as it is, where the message
    class has one (rosidl's generated ``_data``); otherwise the setter's way, with that copy.
    """
    if "_data" in getattr(type(msg), "__slots__", ()) and data.flags.c_contiguous:
        msg._data = data  # noqa: SLF001 - see above
        return
    out = array.array("B")
    out.frombytes(data)
    msg.data = out


def array_to_image(image: np.ndarray, encoding: str, header: Header) -> Image:
    """An Image message holding ``image`` (H x W [x C])."""
    fields = image_fields(image, encoding)
    data = fields.pop("data")
    msg = Image(header=header, **fields)
    _set_data(msg, data)
    return msg


def intrinsics_to_camera_info(k: Intrinsics, header: Header) -> CameraInfo:
    """CameraInfo for the published grid (see ``conversions.camera_info_fields``)."""
    return CameraInfo(header=header, **camera_info_fields(k))


def points_to_cloud(points: np.ndarray, header: Header) -> PointCloud2:
    """A PointCloud2 from a structured float32 array (organised if 2-D, else 1 x N)."""
    fields = cloud_fields(points)
    data = fields.pop("data")
    fields["fields"] = [PointField(name=name, offset=offset, datatype=PointField.FLOAT32, count=1)
                        for name, offset in fields["fields"]]
    msg = PointCloud2(header=header, **fields)
    _set_data(msg, data)
    return msg


def string(text: str) -> String:
    """A std_msgs/String."""
    return String(data=text)


def compressed_image(fmt: str, data: np.ndarray, header: Header) -> CompressedImage:
    """A sensor_msgs/CompressedImage (``data``: the flat uint8 payload, ``fmt``: its format)."""
    msg = CompressedImage(header=header, format=fmt)
    _set_data(msg, data)
    return msg
