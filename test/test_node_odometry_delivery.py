# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The node's odometry subscription over real DDS keeps what a publisher sends: it follows the
publishers' reliability (reliable while none is best effort, so a reliable publisher's messages
are all kept, as a best-effort subscription does not: a third were lost beside images), a
best-effort publisher is matched too, and /diagnostics counts the messages lost on the way
(from each publisher's sequence numbers)."""

import numpy as np
import pytest

pytest.importorskip("rclpy")

from nav_msgs.msg import Odometry  # noqa: E402
from rcl_interfaces.msg import Log  # noqa: E402
from rclpy.qos import QoSProfile, ReliabilityPolicy, qos_profile_sensor_data  # noqa: E402
from support.common import TIPS_TEST_MODEL  # noqa: E402
from support.motion_bags import CAMERA_IN_BASE  # noqa: E402
from support.ros_harness import camera_info, wait_until  # noqa: E402

from dense_perception.ros.odometry_input import SequenceGaps  # noqa: E402

pytestmark = [pytest.mark.ros, pytest.mark.timeout(120)]
W, H = 640, 480
SENT = 100


def odometry_msg(h, t, x=0.0):
    msg = Odometry()
    msg.header = h.header(frame_id="odom", sec=int(t), nanosec=int(round((t % 1) * 1e9)))
    msg.child_frame_id = "base_link"
    msg.pose.pose.position.x = float(x)
    msg.pose.pose.orientation.w = 1.0
    return msg


def node_subscription(h):
    """The node's subscription to odometry as the graph shows it (its QoS), or None."""
    subs = [i for i in h.client.get_subscriptions_info_by_topic("/odometry")
            if i.node_name == h.node.get_name()]
    return subs[0] if len(subs) == 1 else None


def node(harness_factory):
    h = harness_factory({"model_path": TIPS_TEST_MODEL, "camera_in_base": CAMERA_IN_BASE,
                         "diagnostics_period": 0.2}, subscribe=("depth/image", "/diagnostics"))
    h.subscribe("/rosout", Log, transient=True)
    h.wait_matched(("depth/image",))
    return h


def test_a_reliable_publishers_odometry_all_arrives_beside_images(harness_factory):
    h = node(harness_factory)
    pub = h.client.create_publisher(Odometry, "odometry", QoSProfile(depth=SENT))
    wait_until(lambda: pub.get_subscription_count() > 0, 10, "the node subscribes to odometry")
    sub = node_subscription(h)
    assert sub is not None and sub.qos_profile.reliability == ReliabilityPolicy.RELIABLE
    frame = np.random.default_rng(0).integers(0, 255, (H, W, 3), np.uint8)
    info = camera_info(W, H)
    for i in range(SENT):  # each message at the same instant as a 640x480 image
        t = 50.0 + i / 30
        header = h.header(frame_id="cam_optical", sec=int(t), nanosec=int(round((t % 1) * 1e9)))
        h.player.publish_frame(frame, header, info=info)
        pub.publish(odometry_msg(h, t, 0.01 * i))
    wait_until(lambda: h.perception.odometry.received >= SENT, 20, "every odometry message")
    _, _, values = h.diagnostics(lambda d: d[2].get("odometry received") == str(SENT))
    assert values["odometry lost"] == "0"
    assert values["odometry qos"].startswith("reliable")


def test_a_best_effort_publisher_is_matched_and_said(harness_factory):
    h = node(harness_factory)
    pub = h.client.create_publisher(Odometry, "odometry", qos_profile_sensor_data)
    # A reliable subscription does not match it: the node subscribes again, best effort.
    wait_until(lambda: (sub := node_subscription(h)) is not None
               and sub.qos_profile.reliability == ReliabilityPolicy.BEST_EFFORT
               and pub.get_subscription_count() == 1, 10, "a best-effort subscription")
    for i in range(5):
        pub.publish(odometry_msg(h, 60.0 + i / 10))
    wait_until(lambda: h.perception.odometry.received == 5, 10, "the messages")
    said = lambda: [m.msg for m in list(h.received["/rosout"])  # noqa: E731
                    if "subscribing again" in m.msg]
    wait_until(said, 10, "the node says it subscribes again")
    assert "a publisher is best effort" in said()[0]
    h.diagnostics(lambda d: d[2].get("odometry qos", "").startswith("best effort"))


def gid(n):
    return {"implementation_identifier": "rmw", "data": bytes([n] * 16)}


def test_lost_messages_are_counted_from_each_publishers_sequence_numbers():
    gaps = SequenceGaps()
    assert gaps.seen(None) == 0 and not gaps.known  # no MessageInfo: nothing is known
    # publisher 1 sends 1..6, 3 and 4 are lost; publisher 2 sends 1..3, 2 is lost
    seen = [(1, 1), (2, 1), (1, 2), (1, 5), (2, 3), (1, 6)]
    assert [gaps.seen({"publisher_gid": gid(p), "publication_sequence_number": n})
            for p, n in seen] == [0, 0, 0, 2, 1, 0]
    assert gaps.known and gaps.lost == 3
    # an RMW without sequence numbers (0 or the all-ones "unsupported") is not counted
    assert gaps.seen({"publisher_gid": gid(3), "publication_sequence_number": 2 ** 64 - 1}) == 0
    assert gaps.lost == 3
    # an rclpy without the publisher's gid (before Kilted): counted while one publisher is
    # matched, and a new publisher (counting from 1 again) is no loss
    alone = SequenceGaps()
    assert [alone.seen({"publication_sequence_number": n}, alone=True) for n in (1, 2, 4)] == \
        [0, 0, 1]
    assert alone.seen({"publication_sequence_number": 1}, alone=True) == 0
    assert alone.seen({"publication_sequence_number": 3}, alone=True) == 1 and alone.lost == 2
    assert SequenceGaps().seen({"publication_sequence_number": 5}) == 0  # several: unknown
