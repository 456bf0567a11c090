# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The robot's motion in: ``nav_msgs/Odometry`` on the relative topic ``odometry`` (REP 105:
``odom`` -> the odometry's ``child_frame_id``, e.g. ``base_link``), and each camera's mounting on
the robot (that base frame -> the image's ``header.frame_id``, the camera's optical frame).

The mounting is the ``camera_in_base`` parameter when it is set (7 numbers per camera), else TF
where ``tf2_ros`` imports (a robot's ROS install; it is not on pip, so the pip-wheel test
environment never takes that path), else unknown: then no frame gets a pose, and diagnostics
say how to give one. The pose at an image's stamp is interpolated between the odometry messages
around it (:class:`~dense_perception.core.motion.odometry.OdometryBuffer`, ROS-free); a frame
stamped past the newest message waits up to ``odometry_wait`` after it came for the next one
(on the worker that finishes frames, never the executor). A message the buffer refuses (a
quaternion that is not unit) is logged, throttled, and never ends the node.

The subscription follows the publishers' reliability: reliable (history 500) while no publisher
is best effort, so a reliable publisher's messages are all kept; best effort as soon as one is
(a reliable subscription would not match it), said in the log. Messages lost on the way are
counted from each publisher's sequence numbers, where rclpy passes them.

Messages in another frame pair (``frame_id`` -> ``child_frame_id``) than the one the mounting is
given in (the first seen) are kept apart, counted and said, never mixed in; the motion moves to
another pair only when the first one has stopped (nothing for ``odometry_max_gap``).
"""

from __future__ import annotations

import copy
import threading
from typing import Any, Callable

import numpy as np
from nav_msgs.msg import Odometry
from rclpy.node import Node
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.subscription import Subscription

from ..core.geometry.camera_info_choice import stamp_ns
from ..core.motion.odometry import CameraPose, OdometryBuffer, transform_matrix
from ..core.wiring.derived import OdometrySetup
from .compat import SubscriptionEventCallbacks

try:  # a robot's ROS install (apt); pip has no tf2_ros
    import tf2_ros
except ImportError:  # pragma: no cover - depends on the install
    tf2_ros = None

ODOMETRY_TOPIC = "odometry"
# A deep history keeps a burst (5 s of 100 Hz odometry) while the executor is busy: a reliable
# subscription's history that overflows drops its oldest messages as best effort would.
ODOMETRY_DEPTH = 500
MAX_FRAME_PAIRS = 4  # frame pairs (frame_id, child_frame_id) held apart at once
# rclpy passes each message's sequence number to a two-argument callback (Iron and later).
WITH_MESSAGE_INFO = hasattr(Subscription, "CallbackType")
NO_MOUNTING = ("the camera's mounting is not known: set camera_in_base (x y z qx qy qz qw of the "
               "camera's optical frame in the odometry's child frame) or run where tf2_ros is "
               "installed, with the robot's TF (robot_state_publisher)")

NO_BASE = "no odometry received yet (its child_frame_id names the base frame for TF)"
Warn = Callable[[str, str], None]  # (throttle key, text)


def odometry_qos(offered: list[ReliabilityPolicy]) -> QoSProfile:
    """The subscription's QoS when the publishers offer ``offered``: best effort when one of
    them is (only that matches it), else reliable (also with none yet: the usual odometry
    publisher is reliable, and a reliable one's messages are then all kept)."""
    best_effort = ReliabilityPolicy.BEST_EFFORT in offered
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=ODOMETRY_DEPTH,
                      reliability=ReliabilityPolicy.BEST_EFFORT if best_effort
                      else ReliabilityPolicy.RELIABLE)


class SequenceGaps:
    """Messages lost on the way, from each publisher's sequence numbers (rclpy's MessageInfo:
    ``publication_sequence_number``, each publisher counting from 1, told apart by
    ``publisher_gid``; an rclpy without the gid, as before Kilted, is counted only while one
    publisher is matched)."""

    KEPT = 16  # publishers remembered (they come and go)

    def __init__(self) -> None:
        self._last: dict[Any, int] = {}
        self.lost = 0
        self.known = False  # whether any message was counted

    def seen(self, info: dict | None, alone: bool = False) -> int:
        """Count one message's ``info`` (``alone``: its publisher is the only one matched);
        how many of its publisher's went missing before it."""
        number = None if info is None else info.get("publication_sequence_number")
        gid = None if info is None else info.get("publisher_gid")
        if not number or number >= 2 ** 63 or (gid is None and not alone):
            return 0  # not given, not supported, or not told apart
        self.known = True
        key = bytes(gid.get("data", b"")) if isinstance(gid, dict) else repr(gid)
        last = self._last.pop(key, None)
        self._last[key] = number
        while len(self._last) > self.KEPT:
            self._last.pop(next(iter(self._last)))
        if last is None or number <= last:  # a new publisher (it counts from 1 again)
            return 0
        self.lost += number - last - 1
        return number - last - 1


class OdometryInput:
    """The node's odometry subscription and the cameras' mountings; answers each frame's
    camera pose (:meth:`pose_at`). Made with the node's parts, closed with them."""

    def __init__(self, node: Node, setup: OdometrySetup, warn: Warn) -> None:
        """``setup``: the odometry's configuration (``core.wiring.derived.node_setup``: the
        cameras' mountings, one per camera, and the limits); ``warn(key, text)``: a throttled
        warning."""
        self._node, self._warn = node, warn
        self.mountings = setup.mountings
        self._setup = setup
        self._buffers: dict[tuple[str, str], OdometryBuffer] = {}
        self._idle = self._new_buffer()  # answers "no odometry received yet"
        self.frames = ("", "")  # the pair the motion comes from: (frame_id, child_frame_id)
        self.other_frames: dict[tuple[str, str], int] = {}  # messages in other pairs
        self.generation = 0  # one more at each restart or change of pair
        self.received = 0
        self.last_refusal = ""  # why the last refused message was refused
        self.gaps = SequenceGaps()
        self._lock = threading.Lock()
        self._tf_mountings: dict[str, np.ndarray] = {}  # camera frame -> its mounting (static)
        self.source = "camera_in_base" if setup.given else \
            "TF" if tf2_ros is not None else "none"
        self._tf_buffer = self._tf_listener = None
        if self.source == "TF":  # pragma: no cover - needs tf2_ros (a robot's install)
            self._tf_buffer = tf2_ros.Buffer()
            self._tf_listener = tf2_ros.TransformListener(self._tf_buffer, node)
        # A publisher the subscription does not match (incompatible QoS) or a new match: look
        # again from a guard condition (not inside the subscription's own event callback).
        self._guard = node.create_guard_condition(self.update)
        self._sub: Any = None
        self._closed = False
        self._publishers = 0  # on the topic, when last looked (sequence numbers without a gid)
        self.qos = odometry_qos([])
        self.update()

    @property
    def buffer(self) -> OdometryBuffer:
        """The history the cameras' poses come from (that of :attr:`frames`)."""
        return self._buffers.get(self.frames, self._idle)

    def _new_buffer(self) -> OdometryBuffer:
        setup = self._setup
        return OdometryBuffer(setup.tolerance, setup.max_gap, wait_s=setup.wait)

    def update(self) -> None:
        """Subscribe with the QoS the publishers need now (executor thread)."""
        if self._closed:
            return
        name = self._node.resolve_topic_name(ODOMETRY_TOPIC)
        publishers = self._node.get_publishers_info_by_topic(name)
        self._publishers = len(publishers)
        qos = odometry_qos([i.qos_profile.reliability for i in publishers])
        if self._sub is not None and qos.reliability == self.qos.reliability:
            return
        if self._sub is not None:
            self._node.destroy_subscription(self._sub)
            self._node.get_logger().info(
                f"{name}: a publisher is {qos.reliability.name.lower().replace('_', ' ')}; "
                f"subscribing again to match it (history {ODOMETRY_DEPTH})")
        poke = lambda _info: self._guard.trigger()  # noqa: E731
        try:
            events = SubscriptionEventCallbacks(incompatible_qos=poke, matched=poke)
        except TypeError:  # pragma: no cover - Humble: no matched events (diagnostics look)
            events = SubscriptionEventCallbacks(incompatible_qos=poke)
        # rclpy passes MessageInfo only to a callback that cannot be called with one argument
        callback = (lambda msg, info: self._on_odometry(msg, info)) if WITH_MESSAGE_INFO \
            else self._on_odometry
        self.qos = qos
        self._sub = self._node.create_subscription(Odometry, ODOMETRY_TOPIC, callback,
                                                   copy.copy(qos), event_callbacks=events)

    def configure(self, setup: OdometrySetup) -> None:
        """Runtime parameter changes (the tolerance, the gap limit and the wait)."""
        self._setup = setup
        for buffer in [*self._buffers.values(), self._idle]:
            buffer.configure(setup.tolerance, setup.max_gap, setup.wait)

    def close(self) -> None:
        self._closed = True
        for buffer in self._buffers.values():
            buffer.close()  # a frame waiting for odometry stops waiting
        if self._sub is not None:
            self._node.destroy_subscription(self._sub)
            self._sub = None
        self._node.destroy_guard_condition(self._guard)
        if self._tf_listener is not None:  # pragma: no cover - needs tf2_ros
            self._tf_listener.unregister()

    def _on_odometry(self, msg: Odometry, info: dict | None = None) -> None:
        """One odometry message (executor thread): kept, or refused with a throttled WARN."""
        self.received += 1
        self.gaps.seen(info, alone=self._publishers == 1)
        frames = (msg.header.frame_id, msg.child_frame_id)
        buffer = self._buffer_for(frames)
        restarts = buffer.restarts
        p, q = msg.pose.pose.position, msg.pose.pose.orientation
        stamp = stamp_ns(msg.header.stamp)
        problem = buffer.add(stamp, (p.x, p.y, p.z), (q.x, q.y, q.z, q.w))
        if buffer.restarts != restarts and frames == self.frames:
            self.generation += 1
            self._warn("odometry restarted", buffer.restart_note)
        if problem:
            self.last_refusal = problem
            self._warn("odometry refused", f"odometry message ignored ({ODOMETRY_TOPIC}, "
                       f"stamp {stamp * 1e-9:.3f} s): {problem}")
        if frames != self.frames:
            self._other_pair(frames, buffer)

    def _buffer_for(self, frames: tuple[str, str]) -> OdometryBuffer:
        """The history of the frame pair ``frames``; the first pair seen is the motion's."""
        with self._lock:
            if not self.frames[0] and not self.frames[1]:
                self.frames = frames
            if frames not in self._buffers:
                while len(self._buffers) >= MAX_FRAME_PAIRS:  # the oldest other pair goes
                    oldest = next(k for k in self._buffers if k != self.frames)
                    self._buffers.pop(oldest).close()
                self._buffers[frames] = self._new_buffer()
            return self._buffers[frames]

    def _other_pair(self, frames: tuple[str, str], buffer: OdometryBuffer) -> None:
        """A message in another frame pair than the motion's: counted and said; the motion
        moves to it once the motion's own pair has stopped."""
        self.other_frames[frames] = self.other_frames.get(frames, 0) + 1
        ours, theirs = self.buffer.newest_ns(), buffer.newest_ns()
        new, old = " -> ".join(frames), " -> ".join(self.frames)
        if ours is None or (theirs is not None and
                            theirs - ours > self._setup.max_gap * 1e9):
            with self._lock:
                self.frames = frames
                self.generation += 1
                self._tf_mountings.clear()
            self._warn(f"odometry frames {new}", f"odometry frames changed to {new} (nothing in "
                       f"{old} for more than odometry_max_gap): the motion starts again from "
                       "here")
            return
        base = "camera_in_base" if self.source == "camera_in_base" else "the mounting"
        self._warn(f"odometry frames {new}", (
            f"odometry in {new} beside {old}: {base} is taken in {self.frames[1]} (the first "
            f"child_frame_id), so these messages are kept apart, not used for the camera's pose "
            f"({self.other_frames[frames]} so far); publish one child frame, or remap the other "
            "topic away"))

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

    def mounting_suspect(self, index: int, camera_frame: str) -> str:
        """What to check when the image motion does not fit camera ``index``'s motion from
        odometry: its mounting (an identity ``camera_in_base`` on a forward-looking camera has
        the motion along the wrong axes, and nothing else says so)."""
        base = self.frames[1] or "the odometry's child frame"
        if self.source == "camera_in_base":
            values = self._setup.given[7 * index:7 * index + 7]
            return (f"with odometry, suspect the camera's mounting first: camera_in_base "
                    f"{' '.join(f'{v:g}' for v in values)} must be the camera's optical frame "
                    f"(z forward, x right, y down) in {base}; a camera looking along {base}'s x "
                    "axis has the quaternion -0.5 0.5 -0.5 0.5 (an identity looks straight up)")
        return (f"with odometry, suspect the camera's mounting first: TF's {base} -> "
                f"{camera_frame} must end in the camera's optical frame (z forward, x right, "
                "y down)")

    def pose_at(self, index: int, header: Any, received: float | None = None,
                generation: int | None = None) -> CameraPose:
        """Camera ``index``'s pose (world_from_camera, world: the odometry's frame) at the
        image ``header``'s stamp, or None with the reason. ``received``: when the frame came
        (monotonic s): a stamp past the newest odometry waits until ``odometry_wait`` after
        it for the next message (None: no wait). ``generation``: :attr:`generation` when it
        came: a restart since then (time went back, another frame pair) leaves it no pose,
        as it cannot tell which run it belongs to."""
        mount, reason = self.mounting(index, header.frame_id)
        if mount is None:
            return CameraPose(None, reason, "no odometry" if reason == NO_BASE else "no mounting")
        restarted = CameraPose(None, "the odometry started again after this frame came (time "
                                     "went back, or another frame pair): it cannot tell which "
                                     "run the frame belongs to", "restarted")
        if generation is not None and generation != self.generation:
            return restarted
        buffer = self.buffer
        deadline = None if received is None else received + buffer.wait_s
        found = buffer.pose_at(stamp_ns(header.stamp), mount, deadline)
        return restarted if generation is not None and generation != self.generation \
            else found

    def values(self) -> dict[str, str]:
        """Diagnostics values on the odometry input."""
        buffer = self.buffer
        frames = " -> ".join(self.frames) if self.frames[0] or self.frames[1] else "-"
        others = "; ".join(f"{' -> '.join(k)}: {n} messages not used"
                           for k, n in self.other_frames.items())
        return {"odometry received": str(self.received),
                "odometry lost": str(self.gaps.lost) if self.gaps.known else
                "unknown (no sequence numbers)",
                "odometry late": str(sum(b.late for b in self._buffers.values())),
                "odometry waited for": str(sum(b.waited for b in self._buffers.values())),
                "odometry refused": str(sum(b.refused for b in self._buffers.values())),
                "odometry last refusal": self.last_refusal or "-",
                "odometry restarts": str(sum(b.restarts for b in self._buffers.values())),
                "odometry last restart": buffer.restart_note or "-",
                "odometry frames": frames + (f" (other pairs: {others})" if others else ""),
                "odometry qos": f"{self.qos.reliability.name.lower().replace('_', ' ')}, "
                                f"history {ODOMETRY_DEPTH}",
                "camera mounting from": self.source}


def rclpy_time_zero() -> Any:  # pragma: no cover - needs tf2_ros
    """Time 0: TF's "the latest" (a mounting is static)."""
    from rclpy.time import Time
    return Time()
