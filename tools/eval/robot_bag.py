# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""A robot's bag from a stretch of ``7scenes-redkitchen-sfm``: what docs/robot-bag-in-metres.md
processes into metres.

The stretch's colour frames become ``/camera/image_raw`` (sensor_msgs/Image, rgb8) with
``/camera/camera_info`` (its camera.yaml), stamped as the trajectory stamps them; the colour
camera's SfM trajectory becomes the odometry of a robot base the camera is mounted on
(``/odom``, nav_msgs/Odometry ``odom -> base_link`` at :data:`ODOMETRY_HZ`, interpolated between
the frames), and the mounting ``/tf_static`` (``base_link -> camera_link -> camera_optical``,
the camera :data:`MOUNT_XYZ` from the base, looking along the base's x). Each message is logged
at its stamp.

    python -m tools.eval.robot_bag STRETCH_FOLDER OUT_BAG [--frames N]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import cv2
import numpy as np
from rosbags.rosbag2 import StoragePlugin, Writer

from dense_perception.core.motion.pose import interpolate, pose_matrix, quaternion_from_rotation
from dense_perception.offline.inputs import bag_io
from dense_perception.offline.inputs.bag_record import transform_message
from tools.eval.sequence import read_sequence

ODOMETRY_HZ = 50.0
MOUNT_XYZ = (0.2, 0.0, 0.4)        # m: camera_link in base_link (forward, left, up)
OPTICAL_Q = (-0.5, 0.5, -0.5, 0.5)  # camera_link (x forward) -> optical (z forward, REP 103)
ODOMETRY = "nav_msgs/msg/Odometry"
TF_MESSAGE = "tf2_msgs/msg/TFMessage"
T = bag_io.TYPESTORE.types


BASE_FROM_CAMERA = pose_matrix(MOUNT_XYZ, (0, 0, 0, 1)) @ pose_matrix((0, 0, 0), OPTICAL_Q)


def _header(t: float, frame_id: str):
    sec = int(np.floor(t))
    return T["std_msgs/msg/Header"](
        stamp=T["builtin_interfaces/msg/Time"](sec=sec, nanosec=int(round((t - sec) * 1e9))),
        frame_id=frame_id)


def _odometry(t: float, world_from_base: np.ndarray):
    x, y, z = (float(v) for v in world_from_base[:3, 3])
    qx, qy, qz, qw = (float(v) for v in quaternion_from_rotation(world_from_base[:3, :3]))
    pose = T["geometry_msgs/msg/Pose"](
        position=T["geometry_msgs/msg/Point"](x=x, y=y, z=z),
        orientation=T["geometry_msgs/msg/Quaternion"](x=qx, y=qy, z=qz, w=qw))
    zero = T["geometry_msgs/msg/Vector3"](x=0.0, y=0.0, z=0.0)
    return T[ODOMETRY](
        header=_header(t, "odom"), child_frame_id="base_link",
        pose=T["geometry_msgs/msg/PoseWithCovariance"](pose=pose, covariance=np.zeros(36)),
        twist=T["geometry_msgs/msg/TwistWithCovariance"](
            twist=T["geometry_msgs/msg/Twist"](linear=zero, angular=zero),
            covariance=np.zeros(36)))


def write_robot_bag(stretch: Path, out: Path, frames: int = 0) -> int:
    """The bag of ``stretch`` (its first ``frames``, 0 = all) at ``out``; the frame count."""
    seq = read_sequence(stretch, stretch / "trajectory.tum", stretch / "camera.yaml")
    count = len(seq.colour) if frames <= 0 else min(frames, len(seq.colour))
    stamps, poses, k = seq.stamps[:count], seq.poses[:count], seq.k
    messages = []  # (t, topic, message)
    for t, path in zip(stamps, seq.colour[:count]):
        rgb = cv2.cvtColor(cv2.imread(str(path), cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB)
        messages.append((t, "/camera/image_raw",
                         bag_io.array_to_image(rgb, "rgb8", _header(t, "camera_optical"))))
        messages.append((t, "/camera/camera_info",
                         bag_io.intrinsics_to_camera_info(k, _header(t, "camera_optical"))))
    camera_from_base = np.linalg.inv(BASE_FROM_CAMERA)
    for t in np.arange(stamps[0], stamps[-1] + 1e-9, 1.0 / ODOMETRY_HZ):
        j = int(np.clip(np.searchsorted(stamps, t, side="right") - 1, 0, max(count - 2, 0)))
        span = stamps[j + 1] - stamps[j] if count > 1 else 1.0
        alpha = float(np.clip((t - stamps[j]) / span, 0.0, 1.0)) if count > 1 else 0.0
        world_from_camera = interpolate(poses[j], poses[min(j + 1, count - 1)], alpha)
        messages.append((float(t), "/odom",
                         _odometry(float(t), world_from_camera @ camera_from_base)))
    mount = [transform_message(_header(stamps[0], "base_link"), "camera_link",
                               pose_matrix(MOUNT_XYZ, (0, 0, 0, 1))),
             transform_message(_header(stamps[0], "camera_link"), "camera_optical",
                               pose_matrix((0, 0, 0), OPTICAL_Q))]
    messages.append((stamps[0] - 0.001, "/tf_static", T[TF_MESSAGE](transforms=mount)))
    types = {"/camera/image_raw": bag_io.IMAGE, "/camera/camera_info": bag_io.CAMERA_INFO,
             "/odom": ODOMETRY, "/tf_static": TF_MESSAGE}
    with Writer(out, version=9, storage_plugin=StoragePlugin.MCAP) as writer:
        conns = {topic: writer.add_connection(
            topic, msgtype, typestore=bag_io.TYPESTORE,
            offered_qos_profiles=[bag_io.LATCHED_QOS] if topic == "/tf_static" else [])
            for topic, msgtype in types.items()}
        for t, topic, msg in sorted(messages, key=lambda m: m[0]):
            writer.write(conns[topic], int(round(t * 1e9)),
                         bag_io.TYPESTORE.serialize_cdr(msg, types[topic]))
    return count


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("stretch", type=Path, help="a folder of 7scenes-redkitchen-sfm")
    parser.add_argument("out", type=Path, help="the bag to write (a new folder)")
    parser.add_argument("--frames", type=int, default=0, help="only the first N frames")
    args = parser.parse_args(argv)
    count = write_robot_bag(args.stretch, args.out, args.frames)
    print(f"{args.out}: {count} frames, /camera/image_raw, /camera/camera_info, /odom, "
          "/tf_static")
    return 0


if __name__ == "__main__":
    sys.exit(main())
