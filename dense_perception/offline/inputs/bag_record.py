# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""What an output bag records of the run beside the node's topics: ``/diagnostics`` per frame
(the depth's unit, its scale and claimed error, the camera's motion, under the keys the node's
/diagnostics use) and ``/tf`` from the odometry (``odom -> base_link`` for each odometry message
copied), so that a viewer replaying the bag sees each frame's scale and, with the bag's
``/tf_static`` mounting copied too (or, where ``--camera-in-base`` gave it, written as
``/tf_static``), accumulates the clouds in the odometry frame."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...core.motion.camera_motion import motion_diagnostics
from ...core.motion.pose import quaternion_from_rotation
from ...core.scale.metric_scale import scale_diagnostics
from .bag_io import LATCHED_QOS, TYPESTORE
from .bag_write import BagOutput

DIAGNOSTICS, TF, TF_STATIC = "/diagnostics", "/tf", "/tf_static"
DIAGNOSTIC_ARRAY, TF_MESSAGE = "diagnostic_msgs/msg/DiagnosticArray", "tf2_msgs/msg/TFMessage"
ODOMETRY = "nav_msgs/msg/Odometry"
_T = TYPESTORE.types
OK, WARN = 0, 1  # diagnostic_msgs/DiagnosticStatus levels
NODE_NAME = "dense_perception"


def transform_message(header: Any, child: str, parent_from_child: np.ndarray) -> Any:
    """A geometry_msgs/TransformStamped from ``header``'s frame to ``child``, of a 4x4 pose."""
    x, y, z = (float(v) for v in parent_from_child[:3, 3])
    qx, qy, qz, qw = (float(v) for v in quaternion_from_rotation(parent_from_child[:3, :3]))
    return _T["geometry_msgs/msg/TransformStamped"](
        header=header, child_frame_id=child, transform=_T["geometry_msgs/msg/Transform"](
            translation=_T["geometry_msgs/msg/Vector3"](x=x, y=y, z=z),
            rotation=_T["geometry_msgs/msg/Quaternion"](x=qx, y=qy, z=qz, w=qw)))


class RunRecord:
    """Writes the run's /diagnostics (every frame) and /tf (every odometry message) to
    ``out``; ``odometry_topic``: the input's odometry, whose copied messages become /tf."""

    def __init__(self, out: BagOutput, odometry_topic: str | None = None) -> None:
        self.out, self.odometry_topic = out, odometry_topic
        self.odometry_frame: str | None = None  # the odometry's header.frame_id, once read
        out.add(DIAGNOSTICS, DIAGNOSTIC_ARRAY)
        if odometry_topic:
            out.add(TF, TF_MESSAGE)

    def mountings(self, mounts: list[tuple[str, str, np.ndarray]], log_time: int) -> None:
        """/tf_static (latched, as tf2's static broadcaster offers it) of ``mounts``: each
        (parent frame, child frame, parent_from_child 4x4), stamped and logged at
        ``log_time`` (ns, the bag's start)."""
        if not mounts:
            return
        self.out.add(TF_STATIC, TF_MESSAGE, [LATCHED_QOS])
        stamp = _T["builtin_interfaces/msg/Time"](sec=log_time // 1_000_000_000,
                                                  nanosec=log_time % 1_000_000_000)
        transforms = [transform_message(_T["std_msgs/msg/Header"](stamp=stamp, frame_id=parent),
                                        child, mount) for parent, child, mount in mounts]
        self.out.write(TF_STATIC, _T[TF_MESSAGE](transforms=transforms), log_time)

    def frame(self, products: Any, header: Any, log_time: int, camera: str = "") -> None:
        """One frame's status, stamped with its image's header."""
        values, warning = ({}, "") if products.scale is None else \
            scale_diagnostics(products.scale)
        values.update(motion_diagnostics(products.motion))
        status = _T["diagnostic_msgs/msg/DiagnosticStatus"](
            level=WARN if warning else OK, name=f"{NODE_NAME}{camera}",
            message=warning or "running", hardware_id=header.frame_id,
            values=[_T["diagnostic_msgs/msg/KeyValue"](key=k, value=v)
                    for k, v in values.items()])
        self.out.write(DIAGNOSTICS, _T[DIAGNOSTIC_ARRAY](header=header, status=[status]),
                       log_time)

    def copied(self, topic: str, msgtype: str, data: bytes | memoryview, log_time: int
               ) -> None:
        """A copied input message: the odometry's becomes /tf (its frame to its child's)."""
        if topic != self.odometry_topic or msgtype != ODOMETRY:
            return
        odometry = TYPESTORE.deserialize_cdr(bytes(data), ODOMETRY)
        self.odometry_frame = self.odometry_frame or odometry.header.frame_id
        pose = odometry.pose.pose
        transform = _T["geometry_msgs/msg/TransformStamped"](
            header=odometry.header, child_frame_id=odometry.child_frame_id,
            transform=_T["geometry_msgs/msg/Transform"](
                translation=_T["geometry_msgs/msg/Vector3"](
                    x=pose.position.x, y=pose.position.y, z=pose.position.z),
                rotation=pose.orientation))
        self.out.write(TF, _T[TF_MESSAGE](transforms=[transform]), log_time)
