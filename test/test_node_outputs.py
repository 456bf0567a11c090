# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The node over real DDS: every output topic of each model, its header, values and diagnostics."""

import json

import cv2
import numpy as np
import pytest

pytest.importorskip("rclpy")

from support.common import DA3_TEST_MODEL, GRAPH_TIMEOUT, TIPS_TEST_MODEL  # noqa: E402
from support.model_truth import (camera_colour_at_published, da3_depth_of, gradient_frame,  # noqa: E402
                         tips_depth_of, tips_normals_of)
from support.node_hooks import OK, WARN, same_header  # noqa: E402
from support.ros_harness import camera_info  # noqa: E402
from sensor_msgs.msg import CompressedImage  # noqa: E402
from std_msgs.msg import String  # noqa: E402

from dense_perception.core.geometry.fit import make_fit_plan  # noqa: E402
from dense_perception.core.geometry.intrinsics import Intrinsics  # noqa: E402
from dense_perception.core.conversions import cloud_to_points, image_msg_to_array  # noqa: E402

pytestmark = [pytest.mark.ros, pytest.mark.timeout(90)]


as_array = image_msg_to_array


def test_tipsv2_every_output(harness_factory):
    h = harness_factory({"model_path": TIPS_TEST_MODEL, "points_stride": 4})
    h.subscribe("segmentation/classes", String, transient=True)
    h.wait_matched(("depth/image", "normals/image", "segmentation/labels", "points"))
    exact = gradient_frame(640, 480, blue=200)
    frame = np.rint(exact).astype(np.uint8)
    info = camera_info(640, 480, fx=520.0)
    header = h.header(sec=1234, nanosec=5678)
    h.publish_frame(frame, header, info=info)
    plan = make_fit_plan(640, 480, 448, 448, "crop")
    colour = camera_colour_at_published(exact, plan, "model")

    depth_msg = h.wait_for("depth/image")[0]
    assert same_header(depth_msg, header) and depth_msg.encoding == "32FC1"
    depth = as_array(depth_msg)
    assert depth.shape == (448, 448)
    assert np.abs(depth - tips_depth_of(colour))[4:-4, 4:-4].max() < 0.02

    info_msg = h.wait_for("depth/camera_info")[0]
    expected_k = plan.published_intrinsics(Intrinsics.from_k(info.k, 640, 480), "model")
    assert same_header(info_msg, header) and (info_msg.width, info_msg.height) == (448, 448)
    np.testing.assert_allclose(info_msg.k, expected_k.k(), rtol=1e-9)

    normals_msg = h.wait_for("normals/image")[0]
    assert same_header(normals_msg, header) and normals_msg.encoding == "32FC3"
    normals = as_array(normals_msg)
    assert np.abs(normals - tips_normals_of(colour))[4:-4, 4:-4].max() < 0.02

    labels_msg = h.wait_for("segmentation/labels")[0]
    assert labels_msg.encoding == "mono8" and same_header(labels_msg, header)
    assert (as_array(labels_msg) == round(149 * 200 / 255)).all()

    for topic, encoding in [("depth/colored", "bgr8"), ("normals/colored", "rgb8"),
                            ("segmentation/colored", "rgb8")]:
        msg = h.wait_for(topic)[0]
        assert msg.encoding == encoding and same_header(msg, header)
        assert (msg.width, msg.height) == (448, 448)

    cloud_msg = h.wait_for("points")[0]
    assert same_header(cloud_msg, header)
    assert [f.name for f in cloud_msg.fields] == ["x", "y", "z", "rgb"]
    cloud = cloud_to_points(cloud_msg)
    assert cloud.shape == (1, 112 * 112)
    # A few points against the back-projection of the published depth with the published K.
    k = Intrinsics.from_k(info_msg.k, 448, 448)
    for v, u in [(0, 0), (40, 100), (111, 111)]:
        p = cloud[0, v * 112 + u]
        z = depth[v * 4, u * 4]
        assert p["z"] == pytest.approx(z)
        assert p["x"] == pytest.approx((u * 4 - k.cx) * z / k.fx, rel=1e-5)
        assert p["y"] == pytest.approx((v * 4 - k.cy) * z / k.fy, rel=1e-5)

    classes = json.loads(h.wait_for("segmentation/classes")[0].data)
    assert len(classes) == 150 and classes[0] == "wall" and classes[149] == "flag"

    level, message, values = h.diagnostics(lambda d: d[2]["frames processed"] == "1")
    assert level == OK, message
    assert values["model kind"] == "tipsv2"
    assert values["input size -> model size"] == "640x480 -> 448x448"
    assert values["camera_info"] == "matched image stamp"
    assert float(values["inference mean (ms)"]) > 0 and float(values["publish mean (ms)"]) > 0
    assert values["backend"].startswith(("cpu", "gpu"))
    status = h.received["/diagnostics"][-1].status[0]
    assert status.name == "/dense_perception"  # the node's fully qualified name
    assert status.hardware_id == "camera_optical_frame"  # the camera frame


def test_da3_publishes_depth_only_and_16uc1_millimetres(harness_factory):
    h = harness_factory({"model_path": DA3_TEST_MODEL, "depth_encoding": "16UC1",
                         "depth_scale_source": "fixed", "fit": "rotate"}, subscribe=("depth/image", "/diagnostics"))
    def published():
        return {name for name, _ in h.node.get_publisher_names_and_types_by_node(
            "dense_perception", "/")}

    def depth_only(names):
        return ({"/depth/image", "/depth/camera_info", "/depth/colored", "/points"} <= names
                and not any(t.startswith(("/normals", "/segmentation")) for t in names))
    # The graph can list an earlier test's node of the same name for a moment: wait for ours.
    h.wait_until(lambda: depth_only(published()), GRAPH_TIMEOUT, "only the DA3 outputs in the graph")
    h.wait_matched(("depth/image",))
    exact = gradient_frame(1280, 720)
    header = h.header()
    h.publish_frame(np.rint(exact).astype(np.uint8)[:, :, ::-1].copy(), header, encoding="bgr8")
    msg = h.wait_for("depth/image")[0]
    assert msg.encoding == "16UC1" and (msg.width, msg.height) == (896, 504)  # turned back
    plan = make_fit_plan(1280, 720, 504, 896, "rotate")
    expected_mm = da3_depth_of(camera_colour_at_published(exact, plan, "model")) * 1000
    assert np.abs(as_array(msg).astype(float) - expected_mm)[4:-4, 4:-4].max() < 20


def test_compressed_input(harness_factory):
    h = harness_factory({"model_path": TIPS_TEST_MODEL, "input_compressed": True},
                        subscribe=("depth/image",))
    h.wait_matched(("depth/image",))
    exact = gradient_frame(448, 448)
    frame = np.rint(exact).astype(np.uint8)
    msg = CompressedImage(format="png")
    msg.header = h.header()
    msg.data = cv2.imencode(".png", frame[:, :, ::-1])[1].tobytes()
    h.compressed_pub.publish(msg)
    depth = as_array(h.wait_for("depth/image")[0])
    assert np.abs(depth - tips_depth_of(exact)).max() < 0.02


def test_missing_camera_info_uses_fallback_and_warns(harness_factory):
    h = harness_factory({"model_path": TIPS_TEST_MODEL, "fallback_hfov_deg": 90.0},
                        subscribe=("points", "depth/camera_info", "/diagnostics"))
    h.wait_matched(("points",))
    h.publish_frame(np.full((448, 448, 3), 90, np.uint8), h.header())
    assert h.wait_for("points")
    info = h.wait_for("depth/camera_info")[0]
    assert info.k[0] == pytest.approx(224.0)  # 448 px over 90 degrees
    level, message, values = h.diagnostics(lambda d: d[2]["frames processed"] == "1")
    assert level == WARN and "guess" in message
    assert "no CameraInfo" in values["camera_info"]

