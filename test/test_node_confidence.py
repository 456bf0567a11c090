# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""depth/confidence and points_min_confidence through the node, over real DDS."""

import numpy as np
import pytest

pytest.importorskip("rclpy")

from support.common import DA3_CONFIDENCE_TEST_MODEL, DA3_TEST_MODEL, GRAPH_TIMEOUT  # noqa: E402
from support.model_truth import da3_confidence_of, da3_depth_of  # noqa: E402

from dense_perception.core.conversions import cloud_to_points, image_msg_to_array  # noqa: E402

pytestmark = [pytest.mark.ros, pytest.mark.timeout(90)]
W, H = 504, 896  # the DA3 test models' input: frames of this size reach the model unchanged


def advertised(h):
    return {name for name, _ in h.node.get_publisher_names_and_types_by_node(
        "dense_perception", "/")}


def painted_frame():
    """Red paints depth (left half near, right half far), blue paints confidence (rising down
    the frame, 40..255)."""
    frame = np.empty((H, W, 3), np.uint8)
    frame[:, :W // 2, 0], frame[:, W // 2:, 0] = 30, 220
    frame[..., 1] = 90
    frame[..., 2] = np.linspace(40, 255, H).astype(np.uint8)[:, None]
    return frame


def test_depth_confidence_is_published_with_the_depths_header_and_grid(harness_factory):
    h = harness_factory({"model_path": DA3_CONFIDENCE_TEST_MODEL, "depth_scale_source": "fixed"},
                        subscribe=("depth/image", "depth/confidence"))
    h.wait_until(lambda: "/depth/confidence" in advertised(h), GRAPH_TIMEOUT,
                 "depth/confidence in the graph")
    h.wait_matched(("depth/image", "depth/confidence"))
    frame = painted_frame()
    header = h.header(sec=77, nanosec=88)
    h.publish_frame(frame, header)
    msg = h.wait_for("depth/confidence")[0]
    depth_msg = h.wait_for("depth/image")[0]
    assert msg.encoding == "32FC1" and msg.header == depth_msg.header == header
    assert (msg.width, msg.height) == (depth_msg.width, depth_msg.height) == (W, H)
    # 1 + exp((b / 255 - 0.406) / 0.225), the painted blue written out
    expected = 1.0 + np.exp((frame[..., 2] / 255.0 - 0.406) / 0.225)
    np.testing.assert_allclose(image_msg_to_array(msg), expected, rtol=1e-5)
    np.testing.assert_allclose(image_msg_to_array(msg), da3_confidence_of(frame.astype(float)),
                               rtol=1e-5)
    np.testing.assert_allclose(image_msg_to_array(depth_msg), da3_depth_of(frame.astype(float)),
                               rtol=1e-5)


def test_card_style_da3_advertises_no_confidence(harness_factory):
    h = harness_factory({"model_path": DA3_TEST_MODEL, "depth_scale_source": "fixed"},
                        subscribe=("depth/image",))
    h.wait_until(lambda: "/depth/image" in advertised(h), GRAPH_TIMEOUT, "depth/image")
    assert "/depth/confidence" not in advertised(h)
    assert "depth_confidence" not in h.perception.channels[0].outputs.pubs
    h.wait_matched(("depth/image",))
    h.publish_frame(painted_frame(), h.header())
    np.testing.assert_allclose(image_msg_to_array(h.wait_for("depth/image")[0]),
                               da3_depth_of(painted_frame().astype(float)), rtol=1e-5)


def test_points_min_confidence_at_runtime_drops_the_least_confident_rows(harness_factory):
    """The painted confidence rises down the frame, so a quantile q drops the top rows: the
    cloud (organised, stride 1) has NaN exactly in the rows whose painted blue is under the
    q-quantile of the frame's."""
    h = harness_factory({"model_path": DA3_CONFIDENCE_TEST_MODEL, "depth_scale_source": "fixed",
                         "points_stride": 1, "points_organized": True,
                         "points_min_confidence": 0.0}, subscribe=("points",))
    h.wait_matched(("points",))
    frame = painted_frame()
    h.publish_frame(frame, h.header(sec=1))
    cloud = cloud_to_points(h.wait_for("points")[0])
    assert np.isfinite(cloud["z"]).all()
    from rclpy.parameter import Parameter
    assert h.node.set_parameters([Parameter("points_min_confidence", value=0.3)])[0].successful
    h.publish_frame(frame, h.header(sec=2))
    msg = h.wait_for("points", where=lambda m: m.header.stamp.sec == 2)[0]
    dropped = ~np.isfinite(cloud_to_points(msg)["z"]).reshape(H, W)
    blue = frame[..., 2].astype(int)
    cut = np.sort(blue.ravel())[int(0.3 * (blue.size - 1))]  # the 0.3 quantile, counted out
    np.testing.assert_array_equal(dropped, blue < cut)


@pytest.mark.parametrize("args,level", [([], "[INFO]"),
                                        (["-p", "points_min_confidence:=0.4"], "[WARN]")])
def test_card_style_da3_says_once_that_there_is_nothing_to_filter(args, level):
    """The card's one-output DA3 file: the default points_min_confidence is said once at INFO
    (nothing to filter); a value the user asked for is a WARN (it cannot act)."""
    from tools.common.node_process import NodeProcess
    node = NodeProcess(["-p", "backend:=cpu", "-p", f"model_path:={DA3_TEST_MODEL}",
                        "-p", "depth_scale_source:=fixed", *args]).start()
    try:
        node.wait_for_line("has no confidence output", 60)
        node.wait_for_line(" on ", 10)  # the start line, logged just before it
    finally:
        node.stop()
    lines = [line for line in node.output().splitlines() if "has no confidence output" in line]
    assert len(lines) == 1 and level in lines[0], lines
    assert "[dense_perception]" in lines[0]


def test_points_min_confidence_on_a_file_without_confidence_is_refused_at_runtime(
        harness_factory):
    """Setting a filter the model cannot apply is refused with the reason, never accepted and
    ignored; 0 (off) is accepted."""
    from rclpy.parameter import Parameter
    h = harness_factory({"model_path": DA3_TEST_MODEL, "depth_scale_source": "fixed"},
                        subscribe=())
    result = h.node.set_parameters([Parameter("points_min_confidence", value=0.3)])[0]
    assert not result.successful and "has no confidence output" in result.reason
    assert h.node.get_parameter("points_min_confidence").value == 0.1
    # its own value again changes nothing and is accepted (ros2 param load of the same YAML)
    assert h.node.set_parameters([Parameter("points_min_confidence", value=0.1)])[0].successful
    assert h.node.set_parameters([Parameter("points_min_confidence", value=0.0)])[0].successful
    assert h.perception.settings.points_min_confidence == 0.0
