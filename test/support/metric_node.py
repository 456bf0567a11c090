# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Helpers for the node's metric-scale tests: DA3 as the default model, scenes sent with their
CameraInfo (and reference depth), stamps and header matching.

Each scene's true metric depth z is known (tools/common/metric_scene.py); the frame is painted
so the DA3 test model outputs z / s for a known s != 1.
"""

import pytest

from support.common import DA3_TEST_MODEL
from support.ros_harness import camera_info
from tools.common.metric_scene import HEIGHT, WIDTH, paint

from dense_perception.ros.messages import array_to_image

STRIDE = 4


@pytest.fixture(name="harness_factory")
def da3_harness_factory(harness_factory):
    """conftest's factory with the DA3 test model as the default model_path (a test module
    imports it to use it as its ``harness_factory``)."""
    return lambda params, **kwargs: harness_factory({"model_path": DA3_TEST_MODEL, **params},
                                                    **kwargs)


def scene_info(scene):
    """The CameraInfo of ``scene``'s camera (its principal point checked)."""
    info = camera_info(WIDTH, HEIGHT, fx=scene.fx)
    assert info.k[2] == scene.cx and info.k[5] == scene.cy
    return info


def stamp_of(msg):
    """A message's header stamp in seconds."""
    return msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9


def send(h, scene, s, header, reference=None):
    """Publish the scene painted at scale s (+ its reference depth first) and its CameraInfo."""
    z, _ = scene.depth_and_surface()
    if reference is not None:
        h.ref_pub.publish(array_to_image(reference, "32FC1", header))
        h.wait_until(lambda: any(stamp_of(m) == stamp_of_header(header)
                                 for m in list(h.perception.channels[0].track.references)), 10,
                     "reference received")
    h.publish_frame(paint(z / s), header, info=scene_info(scene))


def stamp_of_header(header):
    """A header's stamp in seconds."""
    return header.stamp.sec + header.stamp.nanosec * 1e-9


def add_reference_publisher(h):
    """Give harness ``h`` a reference depth publisher (``h.ref_pub``) the node has matched."""
    from rclpy.qos import qos_profile_sensor_data
    from sensor_msgs.msg import Image
    h.ref_pub = h.client.create_publisher(Image, "reference_depth", qos_profile_sensor_data)
    h.wait_until(lambda: h.ref_pub.get_subscription_count() > 0, 10, "reference subscribed")


def for_header(header):
    """A ``where`` filter for messages stamped as ``header``."""
    return lambda m: m.header.stamp == header.stamp

