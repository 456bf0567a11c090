# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""use_lifecycle: the managed node's transitions, driven over DDS with the lifecycle services."""

import gc

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy")

from support.common import DA3_TEST_MODEL, GRAPH_TIMEOUT, TIPS_TEST_MODEL  # noqa: E402
from lifecycle_msgs.msg import State, Transition  # noqa: E402
from rcl_interfaces.srv import DescribeParameters, SetParameters  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from support.ros_harness import Harness, LifecycleClient, wait_until  # noqa: E402

from dense_perception.ros.lifecycle import LifecycleDensePerceptionNode  # noqa: E402

pytestmark = [pytest.mark.ros, pytest.mark.timeout(90)]


S = State
T = Transition


def test_lifecycle_transitions_over_dds():
    loads = []

    def hook(runner):
        loads.append(runner)
        return runner
    h = Harness({"model_path": DA3_TEST_MODEL}, runner_hook=hook,
                subscribe=("depth/image", "/diagnostics"), node_class=LifecycleDensePerceptionNode)
    try:
        lifecycle = LifecycleClient(h.client)
        state = lifecycle.state
        targets = {T.TRANSITION_CONFIGURE: S.PRIMARY_STATE_INACTIVE,
                   T.TRANSITION_ACTIVATE: S.PRIMARY_STATE_ACTIVE,
                   T.TRANSITION_DEACTIVATE: S.PRIMARY_STATE_INACTIVE,
                   T.TRANSITION_CLEANUP: S.PRIMARY_STATE_UNCONFIGURED}

        def transition(tid):
            assert lifecycle.change(tid, targets[tid])

        def depth_publisher_exists():
            return "/depth/image" in dict(h.client.get_publisher_names_and_types_by_node(
                "dense_perception", "/"))

        def frame_gives_output():
            header = h.header()
            h.publish_frame(np.zeros((48, 64, 3), np.uint8), header)
            h.wait_for("depth/image", where=lambda m: m.header.stamp == header.stamp)

        # Unconfigured: nothing loaded, no outputs.
        assert state() == State.PRIMARY_STATE_UNCONFIGURED
        assert h.node.perception is None and not loads and not depth_publisher_exists()

        # configure: the model is loaded, outputs exist, but no camera subscription yet.
        transition(Transition.TRANSITION_CONFIGURE)
        assert state() == State.PRIMARY_STATE_INACTIVE and len(loads) == 1
        wait_until(depth_publisher_exists, GRAPH_TIMEOUT, "depth/image advertised")
        wait_until(lambda: h.perception.channels[0].outputs.listened(), GRAPH_TIMEOUT,
                   "our subscription matched")
        h.diagnostics(lambda d: d[1].startswith("inactive"))
        assert not h.camera_subscribed()

        # activate: it subscribes to the camera and publishes.
        transition(Transition.TRANSITION_ACTIVATE)
        assert state() == State.PRIMARY_STATE_ACTIVE
        wait_until(h.camera_subscribed, GRAPH_TIMEOUT, "the node subscribes to the camera")
        frame_gives_output()

        # deactivate: no camera, no inference, the model stays loaded.
        transition(Transition.TRANSITION_DEACTIVATE)
        assert state() == State.PRIMARY_STATE_INACTIVE
        wait_until(lambda: not h.camera_subscribed(), GRAPH_TIMEOUT, "the node unsubscribes")
        runner = h.perception.pipeline.runner
        assert runner is loads[0]

        # activate again: the same model, no reload.
        transition(Transition.TRANSITION_ACTIVATE)
        wait_until(h.camera_subscribed, GRAPH_TIMEOUT, "the node subscribes again")
        frame_gives_output()
        assert len(loads) == 1

        # deactivate + cleanup: the model and the publishers are freed.
        transition(Transition.TRANSITION_DEACTIVATE)
        transition(Transition.TRANSITION_CLEANUP)
        assert state() == State.PRIMARY_STATE_UNCONFIGURED and h.node.perception is None
        wait_until(lambda: not depth_publisher_exists(), GRAPH_TIMEOUT, "depth/image withdrawn")

        # configure again loads the model again.
        transition(Transition.TRANSITION_CONFIGURE)
        assert state() == State.PRIMARY_STATE_INACTIVE and len(loads) == 2
    finally:
        h.close()


def test_configure_fails_cleanly_on_a_bad_model(tmp_path):
    h = Harness({"model_path": str(tmp_path / "missing.tflite")}, subscribe=(),
                node_class=LifecycleDensePerceptionNode)
    try:
        lifecycle = LifecycleClient(h.client)
        assert not lifecycle.change(T.TRANSITION_CONFIGURE, S.PRIMARY_STATE_INACTIVE)
        assert lifecycle.state() == S.PRIMARY_STATE_UNCONFIGURED
        assert h.node.perception is None
    finally:
        h.close()


def test_a_destroyed_lifecycle_node_leaves_the_graph_at_once():
    """destroy_node() takes the managed node off the graph without waiting for Python's
    garbage collector (rclpy's LifecycleNode alone leaves its state machine holding the node,
    so it stayed listed, transition_event and all, until a collection)."""
    observer_context = rclpy.Context()
    rclpy.init(context=observer_context)
    observer = rclpy.create_node("graph_observer", context=observer_context)

    def listed() -> bool:
        return ("dense_perception", "/") in observer.get_node_names_and_namespaces()
    gc.disable()  # no collection may hide a node that only a collection would free
    try:
        h = Harness({"model_path": DA3_TEST_MODEL}, subscribe=("depth/image",),
                    node_class=LifecycleDensePerceptionNode)
        try:
            assert LifecycleClient(h.client).change(T.TRANSITION_CONFIGURE,
                                                    S.PRIMARY_STATE_INACTIVE)
            wait_until(listed, GRAPH_TIMEOUT, "the managed node in the graph")
        finally:
            h.close()
        wait_until(lambda: not listed(), 10, "the destroyed node gone from the graph")
    finally:
        gc.enable()
        observer.destroy_node()
        rclpy.shutdown(context=observer_context)


def _service_call(client, srv_type, name, request):
    service = client.create_client(srv_type, f"/dense_perception/{name}")
    try:
        assert service.wait_for_service(timeout_sec=10)
        future = service.call_async(request)
        wait_until(future.done, 10, f"{name} answers")
        return future.result()
    finally:
        client.destroy_client(service)


def set_over_dds(client, name, value):
    """What ``ros2 param set /dense_perception NAME VALUE`` gets back: (successful, reason)."""
    msg = Parameter(name, value=value).to_parameter_msg()
    result = _service_call(client, SetParameters, "set_parameters",
                           SetParameters.Request(parameters=[msg])).results[0]
    return result.successful, result.reason


def test_restart_only_parameters_are_set_while_unconfigured():
    """Navigation2's pattern: cleanup -> set model_path -> configure loads the new model; while
    configured the change is refused with the state and the way out."""
    h = Harness({"model_path": DA3_TEST_MODEL}, subscribe=("/diagnostics",),
                node_class=LifecycleDensePerceptionNode)
    try:
        lifecycle = LifecycleClient(h.client)

        def advertises(topic):
            return topic in dict(h.client.get_publisher_names_and_types_by_node(
                "dense_perception", "/"))
        described = _service_call(h.client, DescribeParameters, "describe_parameters",
                                  DescribeParameters.Request(names=["model_path", "use_lifecycle"]))
        assert [d.read_only for d in described.descriptors] == [False, True]
        assert "while unconfigured" in described.descriptors[0].description

        # Unconfigured: set, then configure loads TIPSv2 (normals) instead of DA3.
        assert set_over_dds(h.client, "model_path", TIPS_TEST_MODEL) == (True, "")
        assert lifecycle.change(T.TRANSITION_CONFIGURE, S.PRIMARY_STATE_INACTIVE)
        assert h.diagnostics(lambda d: d[1].startswith("inactive"))[2]["model kind"] == "tipsv2"
        wait_until(lambda: advertises("/normals/image"), GRAPH_TIMEOUT, "normals advertised")

        # Configured: refused, saying the state and what to do; the model stays.
        ok, reason = set_over_dds(h.client, "model_path", DA3_TEST_MODEL)
        assert not ok and "it is inactive: cleanup first" in reason, reason
        assert lifecycle.change(T.TRANSITION_ACTIVATE, S.PRIMARY_STATE_ACTIVE)
        ok, reason = set_over_dds(h.client, "backend", "auto")
        assert not ok and "it is active: deactivate and cleanup first" in reason, reason
        assert h.node.get_parameter("model_path").value == TIPS_TEST_MODEL

        # deactivate, cleanup, set, configure: DA3 again (no normals).
        assert lifecycle.change(T.TRANSITION_DEACTIVATE, S.PRIMARY_STATE_INACTIVE)
        assert lifecycle.change(T.TRANSITION_CLEANUP, S.PRIMARY_STATE_UNCONFIGURED)
        assert set_over_dds(h.client, "model_path", DA3_TEST_MODEL) == (True, "")
        ok, reason = set_over_dds(h.client, "use_lifecycle", False)  # chose the node's class
        assert not ok
        assert lifecycle.change(T.TRANSITION_CONFIGURE, S.PRIMARY_STATE_INACTIVE)
        assert h.diagnostics(lambda d: d[2]["model kind"] == "da3")
        assert not advertises("/normals/image")
    finally:
        h.close()
