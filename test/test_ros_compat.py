# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The distro-dependent pieces (dense_perception/ros/compat.py) over real DDS, on whichever ROS 2
the venv has: Kilted in .venv (make test), Jazzy in .venv-jazzy (make test-jazzy)."""

import importlib.metadata
import re
import threading

import pytest

pytest.importorskip("rclpy")

import rclpy  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from rclpy.qos import QoSProfile, ReliabilityPolicy, qos_profile_sensor_data  # noqa: E402
from rcl_interfaces.srv import DescribeParameters  # noqa: E402
from rclpy.exceptions import InvalidHandle  # noqa: E402
from sensor_msgs.msg import Image  # noqa: E402
from std_msgs.msg import String  # noqa: E402

from support.common import DA3_TEST_MODEL  # noqa: E402
from support.ros_harness import RaceTolerantExecutor, wait_until  # noqa: E402
from dense_perception.ros import compat  # noqa: E402
from dense_perception.ros.node import DensePerceptionNode  # noqa: E402

pytestmark = pytest.mark.ros
TIMEOUT = 15.0


@pytest.fixture
def context():
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    yield ctx
    rclpy.shutdown(context=ctx)


def make_node(context, **params):
    overrides = [Parameter(k, value=v) for k, v in
                 {"model_path": DA3_TEST_MODEL, "backend": "cpu", **params}.items()]
    return DensePerceptionNode(context=context, parameter_overrides=overrides)


def test_ros_distro_names_the_installed_wheels(monkeypatch):
    monkeypatch.delenv("ROS_DISTRO", raising=False)
    # The pip wheels' meta-package says which distribution this is (ros-kilted-rclpy, ...).
    wheels = {m.group(1) for d in importlib.metadata.distributions()
              if (m := re.fullmatch(r"ros-([a-z]+)-rclpy", (d.metadata["Name"] or "").lower()))}
    if len(wheels) != 1:
        pytest.skip(f"not a pip-wheel ROS 2 install (found {sorted(wheels)})")
    assert compat.ros_distro() == wheels.pop()
    monkeypatch.setenv("ROS_DISTRO", "humble")
    assert compat.ros_distro() == "humble"


def test_qos_overrides_reach_only_their_own_topic(context):
    """The parameters file's qos_overrides (REP 2003) change the QoS DDS really uses (read back
    from the graph by a probe), for that topic alone: rclpy writes overrides into the profile it
    is given, and a shared profile once carried one topic's override to the others. (The camera
    subscriptions follow ``input_qos`` instead; see test_node_subscriptions.)"""
    node = make_node(context, **{"qos_overrides./depth/image.publisher.reliability": "best_effort"})
    probe = rclpy.create_node("compat_probe", context=context)

    def reliability(topic: str, publisher: bool) -> ReliabilityPolicy:
        info = probe.get_publishers_info_by_topic if publisher \
            else probe.get_subscriptions_info_by_topic
        wait_until(lambda: info(topic), TIMEOUT, f"{topic} in the graph")
        (endpoint,) = info(topic)
        return endpoint.qos_profile.reliability

    try:
        assert reliability("/depth/image", publisher=True) == ReliabilityPolicy.BEST_EFFORT
        assert reliability("/depth/colored", publisher=True) == ReliabilityPolicy.RELIABLE
        assert qos_profile_sensor_data.reliability == ReliabilityPolicy.BEST_EFFORT
    finally:
        node.stop()
        node.destroy_node()
        probe.destroy_node()


def test_parameter_descriptors_over_the_describe_service(context):
    node = make_node(context)
    client_node = rclpy.create_node("describe_client", context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    executor.add_node(client_node)
    try:
        client = client_node.create_client(DescribeParameters,
                                           "/dense_perception/describe_parameters")
        wait_until(client.service_is_ready, TIMEOUT, "describe_parameters service", executor)
        future = client.call_async(DescribeParameters.Request(
            names=["num_threads", "relative_depth_scale", "fit", "publish_depth"]))
        wait_until(future.done, TIMEOUT, "describe_parameters answer", executor)
        threads, scale, fit, publish = future.result().descriptors
        # The values of core/settings/table.py's table, written out.
        assert [(r.from_value, r.to_value, r.step) for r in threads.integer_range] == \
            [(-1, 256, 1)]
        assert not threads.floating_point_range
        assert [(r.from_value, r.to_value) for r in scale.floating_point_range] == [(1e-9, 1e9)]
        assert fit.additional_constraints == "one of: crop, stretch, rotate"
        assert not fit.integer_range and not fit.floating_point_range
        assert not publish.integer_range and not publish.floating_point_range
        assert "XNNPACK" in threads.description
    finally:
        node.stop()
        executor.shutdown(timeout_sec=1.0)
        node.destroy_node()
        client_node.destroy_node()


def test_incompatible_qos_event_callback(context):
    """A reliable subscription and a best-effort publisher never match: the event says so."""
    events = []
    seen = threading.Event()

    def on_incompatible(event):
        events.append(event)
        seen.set()

    node = rclpy.create_node("compat_events", context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    try:
        node.create_subscription(Image, "compat_events_image", lambda m: None,
                                 QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE),
                                 **compat.subscription_events(on_incompatible))
        node.create_publisher(Image, "compat_events_image", qos_profile_sensor_data)
        wait_until(seen.is_set, TIMEOUT, "incompatible QoS event", executor)
        assert events[0].total_count >= 1
        assert compat.subscription_events(None) == {}
    finally:
        executor.shutdown(timeout_sec=1.0)
        node.destroy_node()


def test_best_available_is_there_from_iron_on():
    major = int(importlib.metadata.version("rclpy").split(".")[0])
    assert (compat.BEST_AVAILABLE is not None) == (major >= 4)  # Humble's rclpy is 3.x


def test_harness_executor_survives_a_waitable_destroyed_after_collection(context):
    """https://github.com/ros2/rclpy/issues/1284, made deterministic: a QoS event handler whose
    destruction was requested while it is still in its node's list (as when another thread
    destroys the subscription between the executor's collection and its wait). A plain executor raises out of spin_once;
    the harness's executor carries on and still delivers messages afterwards."""
    node = rclpy.create_node("compat_race", context=context)
    got = threading.Event()
    sub = node.create_subscription(String, "compat_race", lambda m: None, 10)
    sub.event_handlers[0].destroy()
    plain = SingleThreadedExecutor(context=context)
    plain.add_node(node)
    try:
        plain.spin_once(timeout_sec=0.01)
        rclpy_has_the_race = False
    except InvalidHandle:
        rclpy_has_the_race = True
    finally:
        plain.shutdown(timeout_sec=1.0)
    if not rclpy_has_the_race:
        node.destroy_node()
        pytest.skip("this rclpy leaves destroyed waitables out itself (rclpy 1284 fixed)")
    tolerant = RaceTolerantExecutor(context=context)
    tolerant.add_node(node)
    try:
        tolerant.spin_once(timeout_sec=0.01)  # the same wait set: no exception escapes
        node.destroy_subscription(sub)  # what the other thread was doing
        node.create_subscription(String, "compat_race", lambda m: got.set(), 10)
        pub = node.create_publisher(String, "compat_race", 10)
        wait_until(lambda: pub.get_subscription_count() > 0, TIMEOUT, "matched")
        pub.publish(String(data="x"))
        wait_until(got.is_set, TIMEOUT, "the message after the race", tolerant)
    finally:
        tolerant.shutdown(timeout_sec=1.0)
        node.destroy_node()
