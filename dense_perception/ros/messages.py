"""rclpy messages from numpy products (no cv_bridge, no sensor_msgs_py).

The layouts live in :mod:`dense_perception.core.conversions` (ROS-free, also used to read messages);
this module only builds rclpy message objects from them.
"""

from __future__ import annotations

import array

import numpy as np
from sensor_msgs.msg import CameraInfo, Image, PointCloud2, PointField
from std_msgs.msg import Header, String

from ..core.conversions import camera_info_fields, cloud_fields, image_fields
from ..core.intrinsics import Intrinsics

# rclpy message classes by the type names of products.OUTPUTS.
MESSAGE_CLASSES: dict[str, type] = {
    "sensor_msgs/msg/Image": Image, "sensor_msgs/msg/CameraInfo": CameraInfo,
    "sensor_msgs/msg/PointCloud2": PointCloud2, "std_msgs/msg/String": String}


def _byte_array(data: np.ndarray) -> array.array:
    # array.array('B') is the fast path of rclpy's uint8[] setter (a list would be checked
    # element by element); frombytes copies straight from the numpy buffer (one copy).
    out = array.array("B")
    out.frombytes(data)
    return out


def array_to_image(image: np.ndarray, encoding: str, header: Header) -> Image:
    """An Image message holding ``image`` (H x W [x C])."""
    fields = image_fields(image, encoding)
    data = fields.pop("data")
    msg = Image(header=header, **fields)
    msg.data = _byte_array(data)
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
    msg.data = _byte_array(data)
    return msg


def string(text: str) -> String:
    """A std_msgs/String."""
    return String(data=text)
