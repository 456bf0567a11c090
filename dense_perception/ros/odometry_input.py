"""The robot's motion in: ``nav_msgs/Odometry`` on the relative topic ``odometry`` (REP 105:
``odom`` -> the odometry's ``child_frame_id``, e.g. ``base_link``), and each camera's mounting on
the robot (that base frame -> the image's ``header.frame_id``, the camera's optical frame).

The mounting is the ``camera_in_base`` parameter when it is set (7 numbers per camera), else TF
where ``tf2_ros`` imports (a robot's ROS install; it is not on pip, so the pip-wheel test
environment never takes that path), else unknown: then no frame gets a pose, and diagnostics
say how to give one. The pose at an image's stamp is interpolated between the odometry messages
around it (:class:`~dense_perception.core.motion.odometry.OdometryBuffer`, ROS-free); a message
the buffer refuses (a quaternion that is not unit) is logged, throttled, and never ends the node.
"""

from __future__ import annotations

import copy
import threading
from typing import Any, Callable

import numpy as np
from nav_msgs.msg import Odometry
from rclpy.node import Node
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy

from ..core.geometry.camera_info_choice import stamp_ns
from ..core.motion.odometry import (CameraPose, OdometryBuffer, camera_mountings,
                                    given_mountings, transform_matrix)
from ..core.settings.table import Settings
from .parameters import StartupError

try:  # a robot's ROS install (apt); pip has no tf2_ros
    import tf2_ros
except ImportError:  # pragma: no cover - depends on the install
    tf2_ros = None

ODOMETRY_TOPIC = "odometry"
# Best effort matches a reliable or a best-effort publisher; a deep history keeps a burst of
# 100 Hz odometry while the executor is busy with an image.
ODOMETRY_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=100,
                          reliability=ReliabilityPolicy.BEST_EFFORT)
NO_MOUNTING = ("the camera's mounting is not known: set camera_in_base (x y z qx qy qz qw of the "
               "camera's optical frame in the odometry's child frame) or run where tf2_ros is "
               "installed, with the robot's TF (robot_state_publisher)")

NO_BASE = "no odometry received yet (its child_frame_id names the base frame for TF)"
Warn = Callable[[str, str], None]  # (throttle key, text)


class OdometryInput:
    """The node's odometry subscription and the cameras' mountings; answers each frame's
    camera pose (:meth:`pose_at`). Made with the node's parts, closed with them."""

    def __init__(self, node: Node, settings: Settings, cameras: int, warn: Warn) -> None:
        """``cameras``: how many cameras (the entries of ``camera_in_base``); ``warn(key,
        text)``: a throttled warning. StartupError when ``camera_in_base`` does not fit."""
        self._node, self._warn = node, warn
        try:
            self.mountings = camera_mountings(settings.camera_in_base, cameras)
        except ValueError as exc:
            raise StartupError(f"{exc}. Fix it in the config YAML.") from None
        self.buffer = OdometryBuffer(settings.odometry_tolerance, settings.odometry_max_gap)
        self.frames = ("", "")  # (the odometry's frame_id, its child_frame_id)
        self.received = 0
        self._lock = threading.Lock()
        self._tf_mountings: dict[str, np.ndarray] = {}  # camera frame -> its mounting (static)
        self.source = "camera_in_base" if given_mountings(settings.camera_in_base) else \
            "TF" if tf2_ros is not None else "none"
        self._tf_buffer = self._tf_listener = None
        if self.source == "TF":  # pragma: no cover - needs tf2_ros (a robot's install)
            self._tf_buffer = tf2_ros.Buffer()
            self._tf_listener = tf2_ros.TransformListener(self._tf_buffer, node)
        self._sub = node.create_subscription(Odometry, ODOMETRY_TOPIC, self._on_odometry,
                                             copy.copy(ODOMETRY_QOS))  # rclpy may alter it

    def configure(self, settings: Settings) -> None:
        """Runtime parameter changes (the tolerance and the gap limit)."""
        self.buffer.configure(settings.odometry_tolerance, settings.odometry_max_gap)

    def close(self) -> None:
        self._node.destroy_subscription(self._sub)
        if self._tf_listener is not None:  # pragma: no cover - needs tf2_ros
            self._tf_listener.unregister()

    def _on_odometry(self, msg: Odometry) -> None:
        """One odometry message (executor thread): kept, or refused with a throttled WARN."""
        self.received += 1
        frames = (msg.header.frame_id, msg.child_frame_id)
        with self._lock:
            changed, self.frames = self.frames != frames and self.frames != ("", ""), frames
        if changed:  # another robot frame: its poses do not continue the old ones
            self.buffer.clear()
            self._tf_mountings.clear()
            self._warn("odometry frames", f"odometry frames changed to {frames[0]} -> "
                       f"{frames[1]}: the motion starts again from here")
        p, q = msg.pose.pose.position, msg.pose.pose.orientation
        problem = self.buffer.add(stamp_ns(msg.header.stamp), (p.x, p.y, p.z),
                                  (q.x, q.y, q.z, q.w))
        if problem:
            self._warn("odometry refused", f"odometry message ignored ({ODOMETRY_TOPIC}, "
                       f"stamp {stamp_ns(msg.header.stamp) * 1e-9:.3f} s): {problem}")

    def mounting(self, index: int, camera_frame: str) -> tuple[np.ndarray | None, str]:
        """Camera ``index``'s base_from_camera pose (its image's ``camera_frame``), or None with
        the reason."""
        if self.source == "camera_in_base":
            return self.mountings[index], ""
        if self.source == "none":
            return None, NO_MOUNTING
        return self._tf_mounting(camera_frame)  # pragma: no cover - needs tf2_ros

    def _tf_mounting(self, camera_frame: str) -> tuple[np.ndarray | None, str]:  # pragma: no cover
        """The mounting from TF (base frame: the odometry's child frame), kept once found."""
        base = self.frames[1]
        if not base:
            return None, NO_BASE
        if camera_frame not in self._tf_mountings:
            try:
                t = self._tf_buffer.lookup_transform(base, camera_frame, rclpy_time_zero())
            except Exception as exc:  # noqa: BLE001 - tf2's lookup errors have no common base
                return None, f"no TF from {base} to {camera_frame}: {exc}"
            self._tf_mountings[camera_frame] = transform_matrix(t.transform)
        return self._tf_mountings[camera_frame], ""

    def pose_at(self, index: int, header: Any) -> CameraPose:
        """Camera ``index``'s pose (world_from_camera, world: the odometry's frame) at the
        image ``header``'s stamp, or None with the reason."""
        mount, reason = self.mounting(index, header.frame_id)
        if mount is None:
            return CameraPose(None, reason, "no odometry" if reason == NO_BASE else "no mounting")
        return self.buffer.pose_at(stamp_ns(header.stamp), mount)

    def values(self) -> dict[str, str]:
        """Diagnostics values on the odometry input."""
        frames = " -> ".join(self.frames) if self.frames[0] else "-"
        return {"odometry received": str(self.received),
                "odometry refused": str(self.buffer.refused),
                "odometry last refusal": self.buffer.last_problem or "-",
                "odometry frames": frames,
                "camera mounting from": self.source}


def rclpy_time_zero() -> Any:  # pragma: no cover - needs tf2_ros
    """Time 0: TF's "the latest" (a mounting is static)."""
    from rclpy.time import Time
    return Time()
