# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The node's parameters over real DDS: runtime changes apply, restart-only ones are read-only."""

import numpy as np
import pytest

pytest.importorskip("rclpy")

from support.common import DA3_TEST_MODEL, TIPS_TEST_MODEL  # noqa: E402
from support.ros_harness import wait_until  # noqa: E402

pytestmark = [pytest.mark.ros, pytest.mark.timeout(90)]


def test_runtime_parameters(harness_factory):
    from rclpy.parameter import Parameter
    h = harness_factory({"model_path": TIPS_TEST_MODEL}, subscribe=("depth/image",))
    h.wait_matched(("depth/image",))
    results = h.node.set_parameters([Parameter("output_resolution", value="input")])
    assert results[0].successful
    h.publish_frame(np.zeros((480, 640, 3), np.uint8), h.header())
    msg = h.wait_for("depth/image")[0]
    assert (msg.width, msg.height) == (640, 480)
    refused = h.node.set_parameters([Parameter("backend", value="cpu")])[0]
    assert not refused.successful and "read-only" in refused.reason
    bad = h.node.set_parameters([Parameter("fit", value="letterbox")])[0]
    assert not bad.successful and "crop, stretch, rotate" in bad.reason


def test_restart_only_parameters_are_read_only_over_dds(harness_factory):
    """What ``ros2 param describe`` / ``ros2 param set`` see: the parameter services."""
    from rcl_interfaces.msg import Parameter as ParameterMsg, ParameterValue, ParameterType
    from rcl_interfaces.srv import DescribeParameters, SetParameters
    h = harness_factory({"model_path": DA3_TEST_MODEL}, subscribe=())
    describe = h.client.create_client(DescribeParameters, "/dense_perception/describe_parameters")
    setter = h.client.create_client(SetParameters, "/dense_perception/set_parameters")

    def call(client, request):
        assert client.wait_for_service(timeout_sec=10)
        future = client.call_async(request)
        wait_until(future.done, 10, f"{client.srv_name} answers")
        return future.result()
    names = ["backend", "model_path", "input_qos", "use_lifecycle", "fit", "points_stride"]
    descriptors = call(describe, DescribeParameters.Request(names=names)).descriptors
    assert [d.read_only for d in descriptors] == [True, True, True, True, False, False]
    assert "restart the node" in descriptors[0].description
    value = ParameterValue(type=ParameterType.PARAMETER_STRING, string_value="gpu")
    result = call(setter, SetParameters.Request(
        parameters=[ParameterMsg(name="backend", value=value)])).results[0]
    assert not result.successful and "read-only" in result.reason
    value = ParameterValue(type=ParameterType.PARAMETER_STRING, string_value="stretch")
    assert call(setter, SetParameters.Request(
        parameters=[ParameterMsg(name="fit", value=value)])).results[0].successful
    # Applied in the post-set callback: the pipeline now stretches.
    wait_until(lambda: h.perception.pipeline.config.fit == "stretch", 5, "fit applied")


def test_parameters_without_post_set_callback(harness_factory, monkeypatch):
    """Where rclpy has no post-set callback (Humble), changes are applied once validated."""
    from rclpy.parameter import Parameter
    from dense_perception.ros import compat
    monkeypatch.setattr(compat, "HAS_POST_SET_CALLBACK", False)
    h = harness_factory({"model_path": DA3_TEST_MODEL}, subscribe=())
    assert h.node.set_parameters([Parameter("fit", value="stretch")])[0].successful
    assert h.perception.pipeline.config.fit == "stretch"
    refused = h.node.set_parameters([Parameter("fit", value="letterbox")])[0]  # our check
    assert not refused.successful and h.perception.pipeline.config.fit == "stretch"

