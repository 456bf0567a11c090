# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""PyD-Net++ (``model_type: depth``) in the node over DDS on real frames: the RGB image, a
CameraInfo with the frame's intrinsics and a reference depth in (NYU: 1 % of the measured pixels,
32FC1, LiDAR-like; TUM: the raw Kinect depth as a depth camera publishes it, 16UC1 millimetres
with 0 in its holes); metres on depth/image against the measured depth out."""

import numpy as np
import pytest

from tools.eval.real_scenes import (FRAMES, PYDNET, REAL_SCENES, available, depth_errors,
                               oracle_scale, sparse_reference)

pytest.importorskip("rclpy")
pytestmark = [pytest.mark.ros,
              pytest.mark.skipif(not available(), reason=f"{REAL_SCENES} is absent (real RGB-D "
                                 "frames and PyD-Net++; see docs/accuracy.md)")]

from rclpy.qos import qos_profile_sensor_data  # noqa: E402
from sensor_msgs.msg import Image  # noqa: E402

from support.real_info import frame_info  # noqa: E402

from dense_perception.core.conversions import image_msg_to_array  # noqa: E402
from dense_perception.ros.messages import array_to_image  # noqa: E402

OK = 0


def raw_millimetres(truth):
    """16UC1 millimetres, 0 where the sensor measured nothing (REP 118)."""
    return np.where(np.isfinite(truth), np.rint(truth * 1000.0), 0).astype(np.uint16)


# (frame, its reference, its encoding, the largest AbsRel: the oracle's on the core path
# (docs/accuracy.md: nyu_00050 0.204, tum 0.306) + the reference's 0.03 bound, rounded up)
CASES = {"nyu_00050_sparse": (FRAMES[1], lambda t: sparse_reference(t, 0.01, seed=0), "32FC1",
                              0.25),
         "tum_raw_with_holes": (FRAMES[3], raw_millimetres, "16UC1", 0.35)}


@pytest.mark.parametrize("case", CASES)
def test_node_publishes_metres_from_a_reference_on_a_real_frame(harness_factory, case):
    frame, make_reference, encoding, max_absrel = CASES[case]
    rgb, truth = frame.rgb(), frame.depth()
    h = harness_factory({"model_path": str(PYDNET), "model_type": "depth",
                         "depth_scale_source": "reference_depth", "output_resolution": "input"},
                        subscribe=("depth/image", "/diagnostics"))
    h.wait_matched(("depth/image",))
    ref_pub = h.client.create_publisher(Image, "reference_depth", qos_profile_sensor_data)
    h.wait_until(lambda: ref_pub.get_subscription_count() > 0, 10, "reference subscribed")

    header = h.header(sec=30)
    header.frame_id = "camera_optical_frame"
    ref_pub.publish(array_to_image(make_reference(truth), encoding, header))
    h.wait_until(lambda: len(h.perception.channels[0].track.references) > 0, 10,
                 "the node holds the reference")
    h.publish_frame(rgb, header, "rgb8", info=frame_info(frame, rgb.shape[1], rgb.shape[0]))

    msg = h.wait_for("depth/image", where=lambda m: m.header.stamp == header.stamp,
                     timeout=30)[0]
    assert msg.encoding == "32FC1" and (msg.width, msg.height) == (640, 480)
    depth = image_msg_to_array(msg)
    seen = depth[17:463]  # the rows the centred crop to 640x448 keeps, less the edge rows
    assert np.isfinite(seen).mean() > 0.99 and (seen[np.isfinite(seen)] > 0).all()
    published = depth_errors(truth, depth)
    # Scale-free: the published depth at its best single scale is the model's own shape error.
    best = depth_errors(truth, depth * np.float32(oracle_scale(truth, depth)))
    # test_real_model's bounds for the reference.
    assert abs(published["scale_error"]) < 0.06, published
    assert published["absrel"] <= best["absrel"] + 0.03, (published, best)
    assert published["absrel"] < max_absrel and published["coverage"] > 0.9, published

    level, message, values = h.diagnostics(lambda d: d[2].get("frames processed") == "1")
    assert level == OK, message
    assert values["depth units"] == "metres (scale from reference_depth)"
