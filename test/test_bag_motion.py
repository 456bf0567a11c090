# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""``dense-perception process BAG --odometry-topic``: each frame's camera pose from the bag's
nav_msgs/Odometry and the camera's mounting from its /tf_static (or --camera-in-base), checked
against poses written out by hand (support/motion_bags.py); bad odometry costs a frame its
motion, never the frame; a set-up that cannot give motion is refused in one line (exit 2)."""

import json

import numpy as np
import pytest
from rosbags.rosbag2 import Reader

from support.bag_maker import read_bag
from support.common import TIPS_TEST_MODEL, layout_topics, run_cli
from support.motion_bags import CAMERA_IN_BASE, STAMP0, driving, write_motion_bag

from dense_perception.offline.inputs.bag_motion import (OdometryStream, frame_transform,
                                                        static_frames)
from dense_perception.offline.inputs.bag_io import BagReader

pytestmark = pytest.mark.timeout(120)


def test_the_mounting_is_the_chain_of_static_transforms(tmp_path):
    bag = BagReader(write_motion_bag(tmp_path / "b", [0.0], driving(-0.1, 0.1)))
    try:
        tree = static_frames(bag)
    finally:
        bag.close()
    mount = frame_transform(tree, "base_link", "cam_optical")
    # Written out: 1 m ahead of the camera (optical z) is 1.1 m ahead of base_link and 0.5 m
    # up; 1 m to its right (optical x) is y = -1; 1 m down (optical y) is z = 0.5 - 1.
    np.testing.assert_allclose(mount @ [0, 0, 1, 1], [1.1, 0, 0.5, 1], atol=1e-12)
    np.testing.assert_allclose(mount @ [1, 0, 0, 1], [0.1, -1, 0.5, 1], atol=1e-12)
    np.testing.assert_allclose(mount @ [0, 1, 0, 1], [0.1, 0, -0.5, 1], atol=1e-12)
    back = frame_transform(tree, "cam_optical", "base_link")
    np.testing.assert_allclose(back @ [1.1, 0, 0.5, 1], [0, 0, 1, 1], atol=1e-12)
    assert frame_transform(tree, "base_link", "lidar") is None


def test_the_odometry_is_read_alongside_the_frames_and_interpolated(tmp_path):
    path = write_motion_bag(tmp_path / "b", [0.0], driving(-0.2, 1.3, rate=20.0, speed=0.5))
    stream = OdometryStream(path, "odom", 0.05, 0.5)
    try:
        assert stream.frames == ("odom", "base_link")
        mount = frame_transform({"cam_optical": ("base_link", np.eye(4))}, "base_link",
                                "cam_optical")
        for t in (0.0, 0.33, 1.02):
            pose = stream.pose_at(STAMP0 * 10**9 + round(t * 1e9), mount).pose
            # x = 0.5 (t + 0.2): the robot's position at t, between two 20 Hz messages
            np.testing.assert_allclose(pose[:3, 3], [0.5 * (t + 0.2), 0, 0], atol=1e-9)
            # read just past t, not the whole topic: bounded, whatever the bag's length
            assert stream.buffer.newest_ns() <= STAMP0 * 10**9 + round((t + 0.1) * 1e9)
    finally:
        stream.close()


def run(tmp_path, capsys, bag, *extra):
    out = tmp_path / "out"
    code, _, err = run_cli(["process", bag, "--model", TIPS_TEST_MODEL, "--out", out,
                            "--outputs", "depth", "--output-resolution", "input", *extra],
                           capsys)
    summary = json.loads((out / "summary.json").read_text()) if code == 0 else None
    return code, err, summary, out


def test_process_gives_each_frame_its_pose_and_says_which_had_none(tmp_path, capsys):
    # Odometry at 20 Hz over 0-0.6 s and 1.6-2.0 s, a message of length 2 at 1.8 s; frames
    # at 0.2 s (motion), 1.0 s (in the gap), 1.8 s (on the refused message) and 3.0 s (past
    # the odometry's end).
    odometry = [s for s in driving(0.0, 2.0) if not 0.6 < s[0] < 1.6]
    odometry = [(t, x, (0.0, 0.0, 0.0, 2.0)) if abs(t - 1.8) < 1e-9 else (t, x)
                for t, x in odometry]
    bag = write_motion_bag(tmp_path / "b", [0.2, 1.0, 1.8, 3.0], odometry)
    code, err, summary, out = run(tmp_path, capsys, bag, "--odometry-topic", "/odom")
    assert code == 0, err
    motion = summary["motion"]
    assert motion["frames_with_motion"] == 1
    assert motion["frames_without_motion"] == {"gap": 1, "refused odometry": 1,
                                               "out of range": 1}
    assert motion["camera_mounting"] == {"/cam/image_raw": "/tf_static base_link -> "
                                                           "cam_optical"}
    assert list(motion["odometry_refused"].values()) == [1]
    assert "odometry message ignored" in err and "length 2.0000, not 1" in err
    assert "odometry has a gap of 1.000 s" in err
    assert "1.000 s after the newest odometry" in err
    # every frame is processed, with or without motion
    assert summary["frames"] == 4
    assert len(read_bag(out)[0]["/cam/depth/image"]) == 4


def test_camera_in_base_stands_for_a_missing_tf_static(tmp_path, capsys):
    bag = write_motion_bag(tmp_path / "b", [0.2, 0.4], driving(0.0, 0.6), tf_static=False)
    code, err, _, _ = run(tmp_path, capsys, bag, "--odometry-topic", "/odom")
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "/tf_static has no transform from base_link" in err and "--camera-in-base" in err
    code, err, summary, _ = run(tmp_path, capsys, bag, "--odometry-topic", "/odom",
                                "--camera-in-base", *map(str, CAMERA_IN_BASE))
    assert code == 0, err
    assert summary["motion"]["frames_with_motion"] == 2
    assert summary["motion"]["camera_mounting"] == {"/cam/image_raw": "--camera-in-base"}
    # The output bag's /tf_static holds the mounting the run used, latched, at the bag's start:
    # a viewer places the camera on the robot without the input's tf tree.
    messages, _ = read_bag(tmp_path / "out")
    [(log_time, static)] = messages["/tf_static"]
    [mount] = static.transforms
    assert (mount.header.frame_id, mount.child_frame_id) == ("base_link", "cam_optical")
    first_image = min(t for t, _ in messages["/cam/image_raw"])
    assert log_time <= first_image
    t, q = mount.transform.translation, mount.transform.rotation
    x, y, z, qx, qy, qz, qw = CAMERA_IN_BASE
    assert np.allclose([t.x, t.y, t.z], [x, y, z])
    sign = np.sign(qw) or 1.0  # q and -q are the same turn
    assert np.allclose(np.array([q.x, q.y, q.z, q.w]) * np.sign(q.w), np.array([qx, qy, qz, qw])
                       * sign, atol=1e-9)
    with Reader(tmp_path / "out") as out_bag:
        [conn] = [c for c in out_bag.connections if c.topic == "/tf_static"]
    assert "transient_local" in str(conn.ext.offered_qos_profiles).lower()


@pytest.mark.parametrize("extra, words", [
    (["--odometry-topic", "/wheel_odom"], "--odometry-topic /wheel_odom is not in the bag; "
                                          "the bag's Odometry topics: /odom"),
    (["--odometry-topic", "/cam/image_raw"], "is sensor_msgs/msg/Image, not "
                                             "nav_msgs/msg/Odometry"),
    (["--camera-in-base", *map(str, CAMERA_IN_BASE)], "--camera-in-base needs the robot's "
                                                      "motion on a bag: add --odometry-topic"),
    (["--odometry-topic", "/odom", "--camera-in-base", "0", "0", "0.5"],
     "--camera-in-base needs 7 numbers per camera"),
])
def test_a_set_up_that_cannot_give_motion_is_refused_in_one_line(tmp_path, capsys, extra,
                                                                 words):
    bag = write_motion_bag(tmp_path / "b", [0.2], driving(0.0, 0.4))
    code, err, _, out = run(tmp_path, capsys, bag, *extra)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert words in err, err
    assert not out.exists()



def test_the_output_bag_records_each_frames_status_and_the_odometry_as_tf(tmp_path, capsys):
    """The output bag carries the run: /diagnostics per frame (stamped as its image, the keys
    the node's /diagnostics use) and /tf from every odometry message copied (odom ->
    base_link, the odometry's own pose), beside the copied /tf_static mounting: a viewer
    replaying it accumulates the clouds in odom."""
    odometry = driving(-0.1, 1.0)
    bag = write_motion_bag(tmp_path / "b", [0.2, 0.4, 0.6], odometry)
    code, err, summary, out = run(tmp_path, capsys, bag, "--odometry-topic", "/odom",
                                  "--outputs", "depth,points")
    assert code == 0, err
    messages, types = read_bag(out)
    assert types["/diagnostics"] == "diagnostic_msgs/msg/DiagnosticArray"
    images = [m for _, m in messages["/cam/image_raw"]]
    statuses = [m for _, m in messages["/diagnostics"]]
    assert len(statuses) == len(images) == 3
    for image, array in zip(images, statuses):
        assert (array.header.stamp.sec, array.header.stamp.nanosec) == \
            (image.header.stamp.sec, image.header.stamp.nanosec)
        values = {kv.key: kv.value for kv in array.status[0].values}
        assert array.status[0].hardware_id == "cam_optical"
        assert values["depth units"] == "metres (metric model)"
        assert values["camera pose"] == "yes"
    tf = [m for _, m in messages["/tf"]]
    odom = [m for _, m in messages["/odom"]]
    assert len(tf) == len(odom) == len(odometry)
    for transforms, o in zip(tf, odom):
        t = transforms.transforms[0]
        assert (t.header.frame_id, t.child_frame_id) == ("odom", "base_link")
        assert t.transform.translation.x == o.pose.pose.position.x
        assert t.transform.rotation.w == o.pose.pose.orientation.w
    assert "/tf_static" in messages  # the mounting, copied
    # Its Foxglove layout names only topics the bag holds, and accumulates the cloud in odom.
    layout = json.loads((out / "foxglove_layout.json").read_text())
    named = layout_topics(layout)
    assert named == {"/cam/depth/colored", "/cam/depth/camera_info", "/cam/points",
                     "/diagnostics"}  # no normals or segmentation: not among the outputs
    assert all(messages.get(topic) for topic in named)
    cloud = layout["configById"]["3D!cloud"]
    assert cloud["followTf"] == "odom" and cloud["topics"]["/cam/points"]["decayTime"] > 0
