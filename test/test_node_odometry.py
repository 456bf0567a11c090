# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The node's motion input over real DDS: nav_msgs/Odometry on ``odometry`` and the camera's
mounting (``camera_in_base``) give each frame its camera pose. Bad odometry (a gap, a stamp
outside it, a quaternion that is not unit) costs the frame its motion, never the frame or the
node: a clear, throttled WARN on /rosout says why, and /diagnostics too.

The robot drives straight at a tilted wall: the camera (mounted as in support.motion_bags,
looking forward) moves 0.1 m closer between frames, so frame i sees the plane
Z = (C0 - 0.1 i) + A X + B Y, painted so the TIPSv2 test model's depth is that Z.
"""

import cv2
import numpy as np
import pytest
import yaml

pytest.importorskip("rclpy")

from nav_msgs.msg import Odometry  # noqa: E402
from rcl_interfaces.msg import Log  # noqa: E402
from rclpy.qos import QoSProfile  # noqa: E402
from support.bag_maker import read_bag  # noqa: E402
from support.camera_scenes import Scene, paint  # noqa: E402
from support.common import TIPS_TEST_MODEL, run_cli  # noqa: E402
from support.motion_bags import CAMERA_IN_BASE, write_motion_bag  # noqa: E402
from support.ros_harness import camera_info, wait_until  # noqa: E402

from dense_perception.core.conversions import image_msg_to_array  # noqa: E402

pytestmark = [pytest.mark.ros, pytest.mark.timeout(180)]
WARN = 30  # rcl_interfaces/Log.WARN
W, H, FX = 64, 48, 60.0
A, B, C0, STEP = 0.2, 0.15, 3.0, 0.1  # the wall; metres the camera moves between frames


def wall_frame(i):
    """Frame i's colours: the wall 0.1 i m nearer, as the TIPSv2 test model reads depth."""
    u, v = np.meshgrid(np.arange(W), np.arange(H))
    xn, yn = (u - (W - 1) / 2) / FX, (v - (H - 1) / 2) / FX
    return paint(Scene(a=A, b=B, c=C0 - STEP * i).z_along(xn, yn))


def odometry_msg(h, t, x, quaternion=(0.0, 0.0, 0.0, 1.0)):
    msg = Odometry()
    msg.header = h.header(frame_id="odom", sec=int(t), nanosec=int(round((t % 1) * 1e9)))
    msg.child_frame_id = "base_link"
    msg.pose.pose.position.x = float(x)
    (msg.pose.pose.orientation.x, msg.pose.pose.orientation.y, msg.pose.pose.orientation.z,
     msg.pose.pose.orientation.w) = quaternion
    return msg


class Robot:
    """The test's odometry publisher beside the harness's camera."""

    def __init__(self, h):
        self.h = h
        self.pub = h.client.create_publisher(Odometry, "odometry", QoSProfile(depth=200))
        self.sent = 0
        wait_until(lambda: self.pub.get_subscription_count() > 0, 10, "the node subscribes "
                   "to odometry")

    def send(self, samples):
        """Publish [(t, x) or (t, x, quaternion)]; wait until the node has them all."""
        for sample in samples:
            self.pub.publish(odometry_msg(self.h, *sample))
        self.sent += len(samples)
        wait_until(lambda: self.h.perception.odometry.received >= self.sent, 10,
                   f"the node received {self.sent} odometry messages")


def at(t):
    return int(t), int(round((t % 1) * 1e9))


def frame_at(h, i, t):
    """Publish wall frame ``i`` stamped ``t`` and wait for its depth."""
    sec, nanosec = at(t)
    h.publish_frame(wall_frame(i), h.header(frame_id="cam_optical", sec=sec, nanosec=nanosec),
                    info=camera_info(W, H, fx=FX))
    return h.wait_for("depth/image", timeout=30.0, where=lambda m: (
        m.header.stamp.sec, m.header.stamp.nanosec) == (sec, nanosec))[0]


def warnings(h, text):
    return [m.msg for m in list(h.received["/rosout"])
            if m.level == WARN and m.name.endswith("dense_perception") and text in m.msg]


def pose_note(h, text):
    return h.diagnostics(lambda d: text in d[2].get("camera pose note", ""), timeout=15.0)


def test_bad_odometry_costs_the_frame_its_motion_and_says_why(harness_factory):
    h = harness_factory({"model_path": TIPS_TEST_MODEL, "output_resolution": "input",
                         "camera_in_base": CAMERA_IN_BASE, "odometry_max_gap": 0.5,
                         "odometry_tolerance": 0.05, "diagnostics_period": 0.2},
                        subscribe=("depth/image", "/diagnostics"))
    h.subscribe("/rosout", Log, transient=True)  # the WARN may come before it matches
    h.wait_matched(("depth/image",))
    robot = Robot(h)
    # 10.0-10.4 s and 12.0-12.4 s at 20 Hz (a 1.6 s gap between), then a bad quaternion.
    robot.send([(10.0 + k / 20, 0.05 * k) for k in range(9)]
               + [(12.0 + k / 20, 0.05 * k) for k in range(9)])
    frame_at(h, 0, 10.2)
    level, _, values = h.diagnostics(lambda d: d[2].get("frames processed") == "1")
    assert values["camera pose"] == "yes" and values["camera pose note"] == "-", values

    # A gap: three frames in it, all published, one WARN (throttled) naming the gap.
    for k, t in enumerate((11.0, 11.2, 11.4)):
        depth = image_msg_to_array(frame_at(h, 1 + k, t))
        assert np.isfinite(depth).mean() >= 0.75  # fit crop: the 48x48 middle of 64x48
    wait_until(lambda: warnings(h, "gap of 1.600 s"), 10, "a WARN on the gap")
    _, _, values = pose_note(h, "odometry has a gap of 1.600 s")
    assert values["camera pose"] == "no"

    # A stamp far past the odometry: its own WARN (another kind), the frame published.
    frame_at(h, 0, 20.0)
    wait_until(lambda: warnings(h, "is 7.600 s after the newest odometry"), 10,
               "a WARN on the stamp out of range")
    # /rosout is ordered: every WARN on the gap frames came before this one, and was throttled.
    assert len(warnings(h, "gap of")) == 1, warnings(h, "gap of")
    pose_note(h, "never the newest's: more than odometry_wait + odometry_max_gap")

    # A quaternion of length 2: the message is refused (WARN), a frame beside it has no
    # motion (WARN), the node keeps going.
    robot.send([(12.9, 0.0), (13.0, 0.0, (0.0, 0.0, 0.0, 2.0)), (13.1, 0.0)])
    wait_until(lambda: warnings(h, "odometry message ignored"), 10, "a WARN on the message")
    assert "length 2.0000, not 1" in warnings(h, "odometry message ignored")[0]
    frame_at(h, 0, 13.05)
    wait_until(lambda: warnings(h, "odometry at 13.000 s next to the image stamp was "
                                   "refused"), 10, "a WARN on the frame beside it")
    _, _, values = h.diagnostics(lambda d: d[2].get("odometry refused") == "1")
    assert "length 2.0000" in values["odometry last refusal"]

    # Good odometry again: motion again.
    frame_at(h, 0, 12.2)
    h.diagnostics(lambda d: d[2].get("camera pose") == "yes" and d[2].get(
        "camera pose note") == "-", timeout=15.0)


def test_without_a_mounting_frames_have_no_motion_and_the_node_says_how_to_give_one(
        harness_factory):
    h = harness_factory({"model_path": TIPS_TEST_MODEL, "output_resolution": "input",
                         "diagnostics_period": 0.2}, subscribe=("depth/image", "/diagnostics"))
    h.subscribe("/rosout", Log, transient=True)  # the WARN may come before it matches
    h.wait_matched(("depth/image",))
    Robot(h).send([(5.0 + k / 20, 0.0) for k in range(5)])
    for t in (5.05, 5.1):
        frame_at(h, 0, t)
    wait_until(lambda: warnings(h, "set camera_in_base"), 10, "a WARN on the mounting")
    assert len(warnings(h, "set camera_in_base")) == 1  # said once: it lasts
    _, _, values = pose_note(h, "mounting is not known")
    assert values["camera mounting from"] in ("none", "TF")


def test_a_camera_in_base_that_does_not_fit_the_cameras_stops_the_start(harness_factory):
    from dense_perception.ros.node import StartupError
    with pytest.raises(StartupError, match="camera_in_base holds 1 mounting"):
        harness_factory({"model_path": TIPS_TEST_MODEL, "cameras": ["front", "rear"],
                         "camera_in_base": CAMERA_IN_BASE})


def test_the_node_with_odometry_gives_the_depth_process_gives_with_the_same_poses(
        harness_factory, tmp_path, capsys):
    """Five frames of the drive: the node (Odometry over DDS, camera_in_base), ``process`` on a
    folder with the camera's poses written out as a TUM file, and ``process`` on a bag with
    the same odometry and /tf_static publish the same depth, and it is the wall's."""
    times = [100.0 + 0.2 * i for i in range(5)]
    frames = [wall_frame(i) for i in range(5)]
    # the base at x = 0.5 (t - 100): 0.1 m a frame, odometry at 20 Hz from 99.9 s to 101.0 s
    odometry = [(99.9 + k / 20, 0.5 * (k / 20 - 0.1)) for k in range(23)]
    info = camera_info(W, H, fx=FX)
    info.p = [FX, 0.0, (W - 1) / 2, 0.0, 0.0, FX, (H - 1) / 2, 0.0, 0.0, 0.0, 1.0, 0.0]

    h = harness_factory({"model_path": TIPS_TEST_MODEL, "output_resolution": "input",
                         "camera_in_base": CAMERA_IN_BASE, "diagnostics_period": 0.2},
                        subscribe=("depth/image", "/diagnostics"))
    h.wait_matched(("depth/image",))
    Robot(h).send(odometry)
    node = []
    for i, t in enumerate(times):
        sec, nanosec = at(t)
        h.publish_frame(frames[i], h.header(frame_id="cam_optical", sec=sec, nanosec=nanosec),
                        info=info)
        node.append(image_msg_to_array(h.wait_for("depth/image", timeout=30.0, where=lambda m: (
            m.header.stamp.sec, m.header.stamp.nanosec) == (sec, nanosec))[0]))
    _, _, values = h.diagnostics(lambda d: d[2].get("frames processed") == "5")
    assert values["camera pose"] == "yes" and values["temporal alignment"] == "aligned", values
    assert float(values["temporal TAE"]) < 0.01  # a still wall, moved by the true motion

    # process on a folder, with the camera's poses written out: the optical frame at
    # (x + 0.1, 0, 0.5) in odom, turned as the mounting turns it (REP 103)
    folder = tmp_path / "frames"
    folder.mkdir()
    lines = []
    for i, (t, frame) in enumerate(zip(times, frames)):
        cv2.imwrite(str(folder / f"frame_{i:03d}.png"), frame[:, :, ::-1])
        lines.append(f"{t:.6f} {0.5 * (t - 100.0) + 0.1:.9f} 0 0.5 -0.5 0.5 -0.5 0.5")
    (tmp_path / "poses.tum").write_text("\n".join(lines) + "\n")
    (tmp_path / "camera.yaml").write_text(yaml.safe_dump({
        "image_width": W, "image_height": H, "camera_name": "cam",
        "camera_matrix": {"rows": 3, "cols": 3, "data": [float(v) for v in info.k]},
        "distortion_model": "plumb_bob",
        "distortion_coefficients": {"rows": 1, "cols": 5, "data": [0.0] * 5},
        "rectification_matrix": {"rows": 3, "cols": 3, "data": [1.0, 0, 0, 0, 1.0, 0, 0, 0, 1.0]},
        "projection_matrix": {"rows": 3, "cols": 4, "data": [float(v) for v in info.p]}}))
    common = ["--model", TIPS_TEST_MODEL, "--outputs", "depth", "--output-resolution", "input"]
    code, _, err = run_cli(["process", folder, "--out", tmp_path / "from_poses", *common,
                            "--poses", tmp_path / "poses.tum",
                            "--camera-info-yaml", tmp_path / "camera.yaml"], capsys)
    assert code == 0, err
    from_poses = [np.load(tmp_path / "from_poses" / "depth" / f"frame_{i:03d}.npy")
                  for i in range(5)]

    # process on a bag with the same odometry and the mounting in /tf_static
    bag = write_motion_bag(tmp_path / "bag", [t - 100.0 for t in times],
                           [(t - 100.0, x) for t, x in odometry], frames=frames, fx=FX)
    code, _, err = run_cli(["process", bag, "--out", tmp_path / "from_bag", *common,
                            "--odometry-topic", "/odom"], capsys)
    assert code == 0, err
    from_bag = [image_msg_to_array(m) for _, m in read_bag(tmp_path / "from_bag")[0][
        "/cam/depth/image"]]

    u, v = np.meshgrid(np.arange(W), np.arange(H))
    xn, yn = (u - (W - 1) / 2) / FX, (v - (H - 1) / 2) / FX
    for i in range(5):
        np.testing.assert_allclose(from_poses[i], node[i], rtol=1e-6, equal_nan=True)
        np.testing.assert_allclose(from_bag[i], node[i], rtol=1e-6, equal_nan=True)
        seen = np.isfinite(node[i])
        truth = Scene(a=A, b=B, c=C0 - STEP * i).z_along(xn, yn)
        assert np.median(np.abs(node[i][seen] - truth[seen])) < 0.01


def test_a_bag_played_to_the_node_gives_the_depth_process_gives(harness_factory, tmp_path,
                                                                 capsys):
    """``dense-perception play`` feeds the node a recording over DDS (no ROS install): the
    drive's bag (images, CameraInfo, odometry, /tf_static), its topics remapped to the node's,
    at a quarter of its pace; the node publishes, frame for frame, the depth ``process`` writes
    from the same bag."""
    times = [0.2 * i for i in range(5)]
    frames = [wall_frame(i) for i in range(5)]
    odometry = [(-0.1 + k / 20, 0.5 * (k / 20 - 0.1)) for k in range(23)]
    bag = write_motion_bag(tmp_path / "bag", times, odometry, frames=frames, fx=FX)
    h = harness_factory({"model_path": TIPS_TEST_MODEL, "output_resolution": "input",
                         "camera_in_base": CAMERA_IN_BASE}, subscribe=("depth/image",))
    h.wait_matched(("depth/image",))
    code, out, err = run_cli(["play", bag, "--rate", "0.25",
                              "--remap", "/cam/image_raw:=/image",
                              "--remap", "/cam/camera_info:=/camera_info",
                              "--remap", "/odom:=/odometry", "--wait-for-subscriber", "/image"],
                             capsys)
    assert code == 0, err
    # 5 images, 5 CameraInfo, 23 odometry; /tf_static's tf2_msgs is not on pip: said, left out
    assert "played 33 messages on 3 topics" in out
    assert "not played: no Python messages for tf2_msgs/msg/TFMessage" in err
    node = {(m.header.stamp.sec, m.header.stamp.nanosec): image_msg_to_array(m)
            for m in h.wait_for("depth/image", count=5, timeout=30.0)}
    code, _, err = run_cli(["process", bag, "--out", tmp_path / "processed", "--model",
                            TIPS_TEST_MODEL, "--outputs", "depth", "--output-resolution",
                            "input", "--odometry-topic", "/odom"], capsys)
    assert code == 0, err
    processed = read_bag(tmp_path / "processed")[0]["/cam/depth/image"]
    assert len(processed) == len(node) == 5
    for _, msg in processed:
        stamp = (msg.header.stamp.sec, msg.header.stamp.nanosec)
        np.testing.assert_allclose(image_msg_to_array(msg), node[stamp], rtol=1e-6,
                                   equal_nan=True)
