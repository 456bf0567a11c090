# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Bags with a robot's motion, for the odometry tests: images (bag_maker's uniform colours),
``nav_msgs/Odometry`` of a robot driving along its x axis, and ``/tf_static`` with the camera's
mounting as a robot's URDF gives it (``base_link`` -> ``camera_link`` -> ``cam_optical``).

The mounting, written out: ``camera_link`` is 0.1 m ahead of and 0.5 m above ``base_link``,
axes alike; ``cam_optical`` turns them into the optical frame (z forward, x right, y down:
quaternion x y z w = -0.5 0.5 -0.5 0.5, REP 103). A point 1 m ahead of the camera is at
(1.1, 0, 0.5) in base_link.
"""

from __future__ import annotations

import numpy as np
from rosbags.rosbag2 import StoragePlugin, Writer

from dense_perception.core.geometry.intrinsics import Intrinsics
from dense_perception.offline.inputs import bag_io
from support.bag_maker import COLOURS, STAMP0, image_msg

TS = bag_io.TYPESTORE
T = TS.types
ODOMETRY = "nav_msgs/msg/Odometry"
TF_MESSAGE = "tf2_msgs/msg/TFMessage"
OPTICAL_Q = (-0.5, 0.5, -0.5, 0.5)
CAMERA_IN_BASE = [0.1, 0.0, 0.5, *OPTICAL_Q]  # the chain below, as one camera_in_base


def stamp_of(t: float):
    sec = int(np.floor(t))
    return T["builtin_interfaces/msg/Time"](sec=STAMP0 + sec,
                                            nanosec=int(round((t - sec) * 1e9)))


def header_at(t: float, frame_id: str):
    return T["std_msgs/msg/Header"](stamp=stamp_of(t), frame_id=frame_id)


def odometry_msg(t: float, x: float, quaternion=(0.0, 0.0, 0.0, 1.0), y: float = 0.0):
    v3, q = T["geometry_msgs/msg/Vector3"], T["geometry_msgs/msg/Quaternion"]
    pose = T["geometry_msgs/msg/Pose"](position=T["geometry_msgs/msg/Point"](x=x, y=y, z=0.0),
                                       orientation=q(*quaternion))
    twist = T["geometry_msgs/msg/Twist"](linear=v3(x=0.0, y=0.0, z=0.0),
                                         angular=v3(x=0.0, y=0.0, z=0.0))
    return T[ODOMETRY](
        header=header_at(t, "odom"), child_frame_id="base_link",
        pose=T["geometry_msgs/msg/PoseWithCovariance"](pose=pose, covariance=np.zeros(36)),
        twist=T["geometry_msgs/msg/TwistWithCovariance"](twist=twist, covariance=np.zeros(36)))


def transform(parent: str, child: str, xyz, quaternion):
    return T["geometry_msgs/msg/TransformStamped"](
        header=header_at(0.0, parent), child_frame_id=child,
        transform=T["geometry_msgs/msg/Transform"](
            translation=T["geometry_msgs/msg/Vector3"](*xyz),
            rotation=T["geometry_msgs/msg/Quaternion"](*quaternion)))


MOUNTING_CHAIN = [transform("base_link", "camera_link", (0.1, 0.0, 0.5), (0.0, 0.0, 0.0, 1.0)),
                  transform("camera_link", "cam_optical", (0.0, 0.0, 0.0), OPTICAL_Q)]


def write_motion_bag(path, image_times, odometry, *, tf_static=True,
                     odometry_topic="/odom", size=(64, 48), frames=None, fx=None):
    """A bag with images at ``image_times`` (s after STAMP0, frame ``cam_optical``) on
    /cam/image_raw (``frames``, rgb8, or bag_maker's colours), ``odometry`` [(t, x) or (t, x,
    quaternion)] on ``odometry_topic``, with ``tf_static`` the mounting chain and with ``fx``
    a CameraInfo per image (K = P, no distortion, the centre in the middle). Each message is
    logged at its stamp."""
    with Writer(path, version=9, storage_plugin=StoragePlugin.MCAP) as w:
        img = w.add_connection("/cam/image_raw", bag_io.IMAGE, typestore=TS)
        odo = w.add_connection(odometry_topic, ODOMETRY, typestore=TS)
        info = None if fx is None else \
            w.add_connection("/cam/camera_info", bag_io.CAMERA_INFO, typestore=TS)
        messages = []
        for i, t in enumerate(image_times):
            msg = image_msg(i, COLOURS[i % len(COLOURS)], "rgb8", size) if frames is None \
                else bag_io.array_to_image(frames[i], "rgb8", header_at(t, "cam_optical"))
            msg.header = header_at(t, "cam_optical")
            messages.append((t, img, TS.serialize_cdr(msg, bag_io.IMAGE)))
            if info is not None:
                k = Intrinsics(fx=fx, fy=fx, cx=(size[0] - 1) / 2, cy=(size[1] - 1) / 2,
                               width=size[0], height=size[1])
                messages.append((t, info, TS.serialize_cdr(bag_io.intrinsics_to_camera_info(
                    k, header_at(t, "cam_optical")), bag_io.CAMERA_INFO)))
        for sample in odometry:
            msg = odometry_msg(sample[0], sample[1], *sample[2:])
            messages.append((sample[0], odo, TS.serialize_cdr(msg, ODOMETRY)))
        if tf_static:
            tf = w.add_connection("/tf_static", TF_MESSAGE, typestore=TS)
            messages.append((-1.0, tf, TS.serialize_cdr(
                T[TF_MESSAGE](transforms=MOUNTING_CHAIN), TF_MESSAGE)))
        for t, conn, data in sorted(messages, key=lambda m: m[0]):
            w.write(conn, int((STAMP0 + t) * 1e9) + 10_000_000, data)
    return path


def driving(t0: float, t1: float, rate: float = 20.0, speed: float = 1.0):
    """Odometry of a robot driving along x at ``speed`` m/s, x = speed (t - t0)."""
    n = int(round((t1 - t0) * rate)) + 1
    return [(t0 + i / rate, speed * i / rate) for i in range(n)]
