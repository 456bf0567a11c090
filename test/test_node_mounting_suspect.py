# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""A wrong mounting names itself, over real DDS: an identity ``camera_in_base`` on a camera that
looks forward gives the motion scale camera motion along the wrong axes, and the node's log
says both why its first frame had no scale (too little baseline) and why the later ones have
none (the image motion is off the epipolar lines), naming ``camera_in_base`` as the suspect:
each kind of reason has its own throttle.

The frames are the painted world of support.moving_scene (a textured wall and floor rendered
exactly for each pose) along its hand-held path; the robot's odometry is that path seen from
the base, with the camera truly mounted as in support.motion_bags (looking forward).
"""

import cv2
import numpy as np
import pytest

pytest.importorskip("rclpy")

from nav_msgs.msg import Odometry  # noqa: E402
from rcl_interfaces.msg import Log  # noqa: E402
from rclpy.qos import QoSProfile  # noqa: E402
from support.common import DA3_TEST_MODEL  # noqa: E402
from support.motion_bags import CAMERA_IN_BASE  # noqa: E402
from support.moving_scene import HEIGHT, WIDTH, K, path, render  # noqa: E402
from support.ros_harness import camera_info, wait_until  # noqa: E402

from dense_perception.core.motion.odometry import mounting_matrix  # noqa: E402
from dense_perception.core.motion.pose import invert, quaternion_from_rotation  # noqa: E402

pytestmark = [pytest.mark.ros, pytest.mark.timeout(180)]
WARN = 30  # rcl_interfaces/Log.WARN
IDENTITY = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]
FRAMES = 20  # at most: the identity mounting stops once the reason is said


def odometry_msg(h, t, odom_from_base):
    msg = Odometry()
    msg.header = h.header(frame_id="odom", sec=int(t), nanosec=int(round((t % 1) * 1e9)))
    msg.child_frame_id = "base_link"
    p, q = msg.pose.pose.position, msg.pose.pose.orientation
    p.x, p.y, p.z = (float(v) for v in odom_from_base[:3, 3])
    q.x, q.y, q.z, q.w = (float(v) for v in quaternion_from_rotation(odom_from_base[:3, :3]))
    return msg


def warnings(h, text):
    return [m.msg for m in list(h.received["/rosout"])
            if m.level == WARN and m.name.endswith("dense_perception") and text in m.msg]


@pytest.mark.parametrize("mounting", [IDENTITY, CAMERA_IN_BASE], ids=["identity", "true"])
def test_an_identity_mounting_on_a_forward_camera_is_named_as_the_suspect(harness_factory,
                                                                          mounting):
    h = harness_factory({"model_path": DA3_TEST_MODEL, "output_resolution": "input",
                         "depth_scale_source": "motion", "motion_scale_min_baseline": 0.02,
                         "camera_in_base": mounting, "diagnostics_period": 0.2},
                        subscribe=("depth/image", "/diagnostics"))
    h.subscribe("/rosout", Log, transient=True)
    h.wait_matched(("depth/image",))
    pub = h.client.create_publisher(Odometry, "odometry", QoSProfile(depth=50))
    wait_until(lambda: pub.get_subscription_count() > 0, 10, "odometry subscribed")
    # The true mounting: odom_from_base = world_from_camera @ camera_from_base.
    base_from_camera = mounting_matrix(CAMERA_IN_BASE)
    poses = path(FRAMES + 1, step=0.05)  # 5 cm a frame: image motion well above the flow's noise
    times = [70.0 + i / 10 for i in range(FRAMES + 1)]
    for t, pose in zip(times, poses):
        pub.publish(odometry_msg(h, t, pose @ invert(base_from_camera)))
    wait_until(lambda: h.perception.odometry.received == FRAMES + 1, 10, "odometry held")
    info = camera_info(WIDTH, HEIGHT, fx=K.fx)
    for i, (t, pose) in enumerate(zip(times[:FRAMES], poses)):
        grey, _ = render(pose)
        sec, nanosec = int(t), int(round((t % 1) * 1e9))
        h.publish_frame(cv2.cvtColor(grey, cv2.COLOR_GRAY2RGB),
                        h.header(frame_id="cam_optical", sec=sec, nanosec=nanosec), info=info)
        # depth/image is withheld without a scale: the frame is done when it is counted
        h.diagnostics(lambda d: d[2].get("frames processed") == str(i + 1), timeout=30.0)
        # A measurement lands on a frame after the one it measured, when the worker (which
        # never holds a frame) has finished it: frames go on until one has landed.
        if mounting == IDENTITY and warnings(h, "off the epipolar lines"):
            break
    first = warnings(h, "too little baseline")
    assert len(first) == 1, first  # the first frame has no partner yet
    if mounting != IDENTITY:  # the true mounting: the image motion fits the camera motion
        assert not warnings(h, "epipolar") and not warnings(h, "suspect")
        return
    wait_until(lambda: warnings(h, "off the epipolar lines"), 10, "the epipolar reason said")
    said = warnings(h, "off the epipolar lines")
    assert len(said) == 1, said  # said once in 10 s, though every later frame has it
    assert "suspect the camera's mounting first: camera_in_base 0 0 0 0 0 0 1" in said[0]
    assert "base_link" in said[0] and "-0.5 0.5 -0.5 0.5" in said[0]
