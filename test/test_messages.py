# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Message <-> array conversions (no cv_bridge): strides, validation, round trips."""

import numpy as np
import pytest

pytest.importorskip("sensor_msgs")
pytestmark = [pytest.mark.ros, pytest.mark.timeout(60)]

from sensor_msgs.msg import CompressedImage, Image  # noqa: E402
from std_msgs.msg import Header  # noqa: E402

from dense_perception.core.geometry.intrinsics import Intrinsics  # noqa: E402
from dense_perception.core.conversions import (BadImageError, cloud_to_points,  # noqa: E402
                                          compressed_to_array, image_to_array)
from dense_perception.ros.messages import (array_to_image, intrinsics_to_camera_info,  # noqa: E402
                                       points_to_cloud)
from dense_perception.core.geometry.pointcloud import depth_to_points  # noqa: E402


def test_round_trip_every_supported_layout():
    rng = np.random.default_rng(0)
    for encoding, shape in [("rgb8", (5, 7, 3)), ("bgra8", (5, 7, 4)), ("mono8", (5, 7))]:
        a = rng.integers(0, 256, shape, dtype=np.uint8)
        msg = array_to_image(a, encoding, Header(frame_id="cam"))
        assert msg.step == 7 * (shape[2] if len(shape) == 3 else 1)
        np.testing.assert_array_equal(image_to_array(msg), a)


def test_padded_rows_are_read_without_the_padding():
    a = np.arange(4 * 5 * 3, dtype=np.uint8).reshape(4, 5, 3)
    padded = np.zeros((4, 20), np.uint8)
    padded[:, :15] = a.reshape(4, 15)
    msg = Image(height=4, width=5, encoding="rgb8", step=20)
    msg.data = padded.tobytes()
    view = image_to_array(msg)
    np.testing.assert_array_equal(view, a)
    assert not view.flags.owndata  # a view, not a copy


@pytest.mark.parametrize("fields,message", [
    ({"encoding": "yuv422"}, "unsupported encoding 'yuv422'; supported: rgb8, bgr8"),
    ({"step": 10}, "step 10 is smaller than width x bytes per pixel (12)"),
    ({"data": bytes(47)}, "data has 47 bytes but step x height = 12 x 4 = 48"),
    ({"data": bytes(49)}, "data has 49 bytes"),
    ({"width": 0, "step": 0, "data": b""}, "empty image (0x4)"),
])
def test_malformed_images_are_refused(fields, message):
    msg = Image(height=4, width=4, encoding="rgb8", step=12)
    msg.data = bytes(48)
    for k, v in fields.items():
        setattr(msg, k, v)
    with pytest.raises(BadImageError) as err:
        image_to_array(msg)
    assert message in str(err.value)


def test_compressed_decoding():
    import cv2
    bgr = np.zeros((8, 8, 3), np.uint8)
    bgr[..., 2] = 255
    msg = CompressedImage(format="png")
    msg.data = cv2.imencode(".png", bgr)[1].tobytes()
    frame, encoding = compressed_to_array(msg)
    assert encoding == "bgr8" and (frame == bgr).all()
    broken = CompressedImage(format="jpeg")
    broken.data = b"\xff\xd8garbage"
    with pytest.raises(BadImageError, match="could not decode"):
        compressed_to_array(broken)


def test_point_cloud_round_trip_and_layout():
    k = Intrinsics(100.0, 100.0, 3.5, 2.5, 8, 6)
    depth = np.full((6, 8), 2.0, np.float32)
    depth[0, 0] = np.nan
    rgb = np.full((6, 8, 3), 7, np.uint8)
    organised = depth_to_points(depth, k, rgb=rgb, organized=True)
    msg = points_to_cloud(organised, Header(frame_id="cam"))
    assert (msg.height, msg.width, msg.point_step, msg.is_dense) == (6, 8, 16, False)
    assert [(f.name, f.offset, f.datatype) for f in msg.fields] == [
        ("x", 0, 7), ("y", 4, 7), ("z", 8, 7), ("rgb", 12, 7)]
    back = cloud_to_points(msg)
    np.testing.assert_array_equal(back["z"], organised["z"])
    flat = points_to_cloud(depth_to_points(depth, k), Header())
    assert (flat.height, flat.width, flat.is_dense) == (1, 47, True)


def test_camera_info_for_published_grid_is_rectified_pinhole():
    # Everything is published in the rectified frame: D zero, R identity, K = P (REP 104).
    msg = intrinsics_to_camera_info(Intrinsics(10, 11, 5, 6, 20, 30), Header())
    assert list(msg.k) == [10, 0, 5, 0, 11, 6, 0, 0, 1]
    assert list(msg.p) == [10, 0, 5, 0, 0, 11, 6, 0, 0, 0, 1, 0]
    assert list(msg.r) == [1, 0, 0, 0, 1, 0, 0, 0, 1]
    assert list(msg.d) == [0.0] * 5 and (msg.width, msg.height) == (20, 30)


def test_frame_sized_data_survives_rclpy_serialisation_without_a_python_copy():
    """The products' bytes reach the wire as they are: the message holds the product's own
    flat uint8 view (no array.array copy), and rclpy's conversion to the C message, the one
    publish uses, serialises it to the same bytes as the setter's array.array."""
    import array

    from rclpy.serialization import deserialize_message, serialize_message
    from sensor_msgs.msg import PointCloud2

    rng = np.random.default_rng(4)
    depth = rng.uniform(0.1, 9.0, (48, 64)).astype(np.float32)
    msg = array_to_image(depth, "32FC1", Header(frame_id="cam"))
    assert np.shares_memory(np.asarray(msg.data), depth)  # no copy made
    back = deserialize_message(serialize_message(msg), Image)
    assert bytes(back.data) == depth.tobytes()
    by_setter = Image(header=msg.header, height=msg.height, width=msg.width,
                      encoding=msg.encoding, step=msg.step,
                      data=array.array("B", depth.tobytes()))
    ours, setters = serialize_message(msg), serialize_message(by_setter)
    # CDR pads each field to its alignment with bytes nobody writes (after is_bigendian, before
    # step): they may differ between two serialisations. Every byte the reader reads is equal.
    assert len(ours) == len(setters) and ours.endswith(depth.tobytes())
    pads = {39}  # 4 + 8 (stamp) + 8 ("cam") + 8 (height, width) + 10 ("32FC1") + 1 (is_bigendian)
    assert [i for i, (a, b) in enumerate(zip(ours, setters)) if a != b and i not in pads] == []
    k = Intrinsics(50.0, 50.0, 31.5, 23.5, 64, 48)
    points = depth_to_points(depth, k, rgb=rng.integers(0, 256, (48, 64, 3), dtype=np.uint8))
    cloud = points_to_cloud(points, Header(frame_id="cam"))
    back = deserialize_message(serialize_message(cloud), PointCloud2)
    assert bytes(back.data) == points.tobytes()
