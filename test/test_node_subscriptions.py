# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The node over real DDS: its camera subscription follows its listeners and the camera's QoS,
and its publishers' QoS can be overridden."""

import numpy as np
import pytest

pytest.importorskip("rclpy")

from support.common import DA3_TEST_MODEL, GRAPH_TIMEOUT  # noqa: E402
from support.node_hooks import HookedRunner  # noqa: E402
from support.ros_harness import wait_until  # noqa: E402
from rclpy.qos import ReliabilityPolicy  # noqa: E402
from sensor_msgs.msg import Image  # noqa: E402
from tools.common.ros_client import camera_qos  # noqa: E402

pytestmark = [pytest.mark.ros, pytest.mark.timeout(90)]


def test_camera_is_subscribed_only_while_an_output_is(harness_factory):
    hooks = []
    h = harness_factory({"model_path": DA3_TEST_MODEL},
                        runner_hook=lambda r: hooks.append(HookedRunner(r)) or hooks[0],
                        subscribe=("/diagnostics",))
    h.diagnostics()  # the node is up and spinning
    # Nobody listens: the node does not even subscribe, so frames cost it nothing. (The graph
    # is checked with a wait: it may still list an earlier test's node for a moment.)
    assert not h.perception.channels[0].camera.subscribed
    wait_until(lambda: not h.camera_subscribed(), GRAPH_TIMEOUT, "no camera subscription in the graph")
    h.subscribe("depth/image")
    h.wait_matched(("depth/image",))
    h.publish_frame(np.zeros((48, 64, 3), np.uint8), h.header())
    h.wait_for("depth/image")
    assert hooks[0].runs == 1
    h.unsubscribe("depth/image")
    wait_until(lambda: not h.camera_subscribed(), GRAPH_TIMEOUT, "the node unsubscribes from the camera")
    # Diagnostics go on: the frame processed, and no camera subscription now.
    h.diagnostics(lambda d: d[2]["input QoS"] == "-" and d[2]["frames processed"] == "1")


def test_graph_polling_fallback_without_matched_events(harness_factory, monkeypatch):
    """Where rclpy has no matched events (Humble), a timer watches the graph instead."""
    from dense_perception.ros import compat
    monkeypatch.setattr(compat, "HAS_MATCHED_EVENTS", False)
    h = harness_factory({"model_path": DA3_TEST_MODEL}, subscribe=())
    assert not h.perception.watch.matched_events
    h.subscribe("depth/image")
    h.wait_matched(("depth/image",))
    h.publish_frame(np.zeros((48, 64, 3), np.uint8), h.header())
    h.wait_for("depth/image")
    h.unsubscribe("depth/image")
    wait_until(lambda: not h.camera_subscribed(), GRAPH_TIMEOUT, "the node unsubscribes from the camera")


def image_subscription_reliability(h, topic="/image"):
    """The reliability of the node's subscription to ``topic`` as the graph shows it (None
    when there is none, "several" while an old one is still listed)."""
    kinds = {i.qos_profile.reliability for i in h.client.get_subscriptions_info_by_topic(topic)
             if i.node_name == "dense_perception"}
    return kinds.pop() if len(kinds) == 1 else (None if not kinds else "several")


@pytest.mark.parametrize("mode,reliable_camera,expected", [
    ("auto", True, ReliabilityPolicy.RELIABLE), ("auto", False, ReliabilityPolicy.BEST_EFFORT),
    ("sensor_data", True, ReliabilityPolicy.BEST_EFFORT),
    ("reliable", True, ReliabilityPolicy.RELIABLE)])
def test_input_qos(harness_factory, mode, reliable_camera, expected):
    h = harness_factory({"model_path": DA3_TEST_MODEL, "input_qos": mode},
                        subscribe=("depth/image",), reliable=reliable_camera)
    h.wait_matched(("depth/image",))
    wait_until(lambda: image_subscription_reliability(h) == expected
               and image_subscription_reliability(h, "/camera_info") == expected, 10,
               f"subscriptions {expected}")
    frame = h.header()
    h.publish_frame(np.zeros((48, 64, 3), np.uint8), frame)
    h.wait_for("depth/image", where=lambda m: m.header.stamp == frame.stamp)


def test_camera_publisher_going_away_and_coming_back_reliable(harness_factory):
    """input_qos auto follows the camera: best effort first, reliable when it comes back so."""
    h = harness_factory({"model_path": DA3_TEST_MODEL}, subscribe=("depth/image",))
    h.wait_matched(("depth/image",))
    wait_until(lambda: image_subscription_reliability(h) == ReliabilityPolicy.BEST_EFFORT, 10,
               "a best-effort subscription")
    first = h.header()
    h.publish_frame(np.zeros((48, 64, 3), np.uint8), first)
    h.wait_for("depth/image", where=lambda m: m.header.stamp == first.stamp)
    h.client.destroy_publisher(h.player.image_pub)
    wait_until(lambda: h.node.count_publishers("/image") == 0, GRAPH_TIMEOUT, "the camera is gone")
    h.player.image_pub = h.client.create_publisher(Image, "image", camera_qos(reliable=True))
    wait_until(lambda: image_subscription_reliability(h) == ReliabilityPolicy.RELIABLE, 10,
               "the node subscribes reliably")
    wait_until(lambda: h.player.image_pub.get_subscription_count() > 0, GRAPH_TIMEOUT, "re-matched")
    again = h.header()
    h.publish_frame(np.zeros((48, 64, 3), np.uint8), again)
    assert h.wait_for("depth/image", where=lambda m: m.header.stamp == again.stamp)


def test_publisher_qos_override(harness_factory):
    """config/*.yaml's example: a best-effort point cloud through qos_overrides."""
    h = harness_factory({"model_path": DA3_TEST_MODEL,
                         "qos_overrides./points.publisher.reliability": "best_effort"},
                        subscribe=())

    def reliability(topic):
        infos = [i for i in h.client.get_publishers_info_by_topic(topic)
                 if i.node_name == "dense_perception"]
        return infos[0].qos_profile.reliability if infos else None
    wait_until(lambda: reliability("/points") is not None, GRAPH_TIMEOUT, "points advertised")
    assert reliability("/points") == ReliabilityPolicy.BEST_EFFORT
    assert reliability("/depth/image") == ReliabilityPolicy.RELIABLE

