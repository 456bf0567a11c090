# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""A bag's camera motion for ``dense-perception process --odometry-topic``: the robot's odometry
(``nav_msgs/Odometry``) and each camera's mounting on the robot, as the node takes them.

The mounting is ``--camera-in-base`` when given (7 numbers per ``--topic``), else the bag's
``/tf_static``: the chain of static transforms from the odometry's ``child_frame_id`` (e.g.
``base_link``) to the image's ``header.frame_id`` (e.g. ``camera_color_optical_frame``).
A second reader walks the odometry topic alongside the images, reading only a little past each
image's stamp, so memory stays bounded whatever the bag's length. The pose at an image's stamp is
the node's (:class:`~dense_perception.core.motion.odometry.OdometryBuffer`): interpolated between
the messages around it; a frame without one (a gap, a stamp outside the odometry, a refused
message) is processed without motion, and the first frame of each such kind is said on stderr.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import numpy as np

from ...core.geometry.camera_info_choice import stamp_ns
from ...core.motion.odometry import (CameraPose, OdometryBuffer, camera_mountings,
                                    given_mountings, transform_matrix)
from ...core.motion.pose import invert
from ...core.settings.table import Settings
from .bag_io import BagError, BagReader
from ..console import CliError, warn
from ..options.settings_args import OFFLINE

ODOMETRY = "nav_msgs/msg/Odometry"
TF_MESSAGE = "tf2_msgs/msg/TFMessage"
TF_STATIC = "/tf_static"
HISTORY_S = 60.0  # odometry kept behind the newest read: several cameras' frames interleave


def static_frames(bag: BagReader) -> dict[str, tuple[str, np.ndarray]]:
    """The bag's ``/tf_static``: child frame -> (parent frame, parent_from_child 4x4). A
    transform whose rotation is not a unit quaternion is left out (it is no mounting)."""
    conns = [c for c in bag.connections if c.topic == TF_STATIC and c.msgtype == TF_MESSAGE]
    tree: dict[str, tuple[str, np.ndarray]] = {}
    for conn, _, data in (bag.messages(conns) if conns else ()):
        for t in bag.decode(conn, data).transforms:
            try:
                tree[t.child_frame_id.lstrip("/")] = (t.header.frame_id.lstrip("/"),
                                                      transform_matrix(t.transform))
            except ValueError:
                continue
    return tree


def frame_transform(tree: dict[str, tuple[str, np.ndarray]], target: str,
                    source: str) -> np.ndarray | None:
    """target_from_source through the static tree (both frames up to a shared ancestor), or
    None when they are not connected."""
    def to_root(frame: str) -> dict[str, np.ndarray]:
        chain, pose = {frame: np.eye(4)}, np.eye(4)
        while frame in tree and len(chain) <= len(tree):
            frame, parent_from_child = tree[frame][0], tree[frame][1]
            pose = parent_from_child @ pose
            chain[frame] = pose  # ancestor_from_start
        return chain
    up_target, up_source = to_root(target.lstrip("/")), to_root(source.lstrip("/"))
    shared = next((f for f in up_source if f in up_target), None)
    if shared is None:
        return None
    return invert(up_target[shared]) @ up_source[shared]


class OdometryStream:
    """The bag's odometry topic read alongside its images: :meth:`pose_at` answers the camera
    pose at an image stamp, reading ahead just past it."""

    def __init__(self, path: Path, topic: str, tolerance_s: float, max_gap_s: float) -> None:
        self._bag = BagReader(path)
        topic = "/" + topic.lstrip("/")
        conns = [c for c in self._bag.connections if c.topic == topic]
        if not conns or any(c.msgtype != ODOMETRY for c in conns):
            listed = sorted({c.topic for c in self._bag.connections if c.msgtype == ODOMETRY})
            what = "is not in the bag" if not conns else f"is {conns[0].msgtype}, not {ODOMETRY}"
            self._bag.close()
            raise CliError(f"--odometry-topic {topic} {what}; the bag's Odometry topics: "
                           f"{', '.join(listed) or 'none'}")
        self.topic = topic
        self.buffer = OdometryBuffer(tolerance_s, max_gap_s, history_s=HISTORY_S)
        self._messages: Iterator[tuple[Any, str]] = self._bag.decoded(conns)
        self._done = False
        self.frames = ("", "")  # (odometry frame_id, child_frame_id) of the first message
        self.refused: dict[str, int] = {}
        self._read_one()
        if not len(self.buffer) and not self.refused:
            self.close()
            raise CliError(f"--odometry-topic {topic} has no readable message")

    def _read_one(self) -> None:
        item = next(self._messages, None)
        if item is None:
            self._done = True
            return
        msg, problem = item
        if msg is None:  # a message that cannot be read is counted
            self._refuse(problem)
            return
        if not self.frames[0]:
            self.frames = (msg.header.frame_id, msg.child_frame_id)
        p, q = msg.pose.pose.position, msg.pose.pose.orientation
        problem = self.buffer.add(stamp_ns(msg.header.stamp), (p.x, p.y, p.z),
                                  (q.x, q.y, q.z, q.w))
        if problem:
            self._refuse(problem)

    def _refuse(self, problem: str) -> None:
        if not self.refused:
            warn(f"{self.topic}: odometry message ignored: {problem}")
        self.refused[problem] = self.refused.get(problem, 0) + 1

    def pose_at(self, stamp: int, base_from_camera: np.ndarray) -> CameraPose:
        """The camera's world_from_camera at ``stamp`` (ns), or None with the reason."""
        ahead = stamp + int(self.buffer.tolerance_s * 1e9)
        while not self._done and ((newest := self.buffer.newest_ns()) is None
                                  or newest <= ahead):
            self._read_one()
        return self.buffer.pose_at(stamp, base_from_camera)

    def close(self) -> None:
        self._bag.close()


class BagMotion:
    """The cameras' poses of a bag (``--odometry-topic``), with a tally for summary.json."""

    def __init__(self, path: Path, bag: BagReader, topic: str, settings: Settings,
                 cameras: list[Any]) -> None:
        """``cameras``: the bag's (``bag_cameras.BagCamera``), in the order of ``--topic``.
        CliError when the odometry topic or a camera's mounting cannot be had."""
        self.stream = OdometryStream(path, topic, settings.odometry_tolerance,
                                     settings.odometry_max_gap)
        try:
            self.mountings = self._mountings(bag, settings, cameras)
        except BaseException:
            self.stream.close()
            raise
        self.tally: dict[str, Any] = {"odometry_topic": self.stream.topic,
                                      "odometry_frames": list(self.stream.frames),
                                      "camera_mounting": {c.topic: self.mountings[c.topic][1]
                                                          for c in cameras},
                                      "frames_with_motion": 0, "frames_without_motion": {},
                                      "odometry_refused": self.stream.refused}

    def _mountings(self, bag: BagReader, settings: Settings, cameras: list[Any]
                   ) -> dict[str, tuple[np.ndarray, str]]:
        """Each camera's (base_from_camera, where it came from)."""
        if given_mountings(settings.camera_in_base):
            try:
                given = camera_mountings(settings.camera_in_base, len(cameras), OFFLINE)
            except ValueError as exc:
                raise CliError(f"{exc} (one per --topic)") from None
            return {c.topic: (m, "--camera-in-base") for c, m in zip(cameras, given)}
        tree = static_frames(bag)
        base = self.stream.frames[1]
        found = {}
        for cam in cameras:
            frame = _camera_frame(bag, cam.image_conns)
            mount = frame_transform(tree, base, frame)
            if mount is None:
                known = ", ".join(sorted(set(tree) | {p for p, _ in tree.values()})) or "none"
                raise CliError(f"--odometry-topic: the camera's mounting is not in the bag: "
                               f"{TF_STATIC} has no transform from {base or '?'} (the "
                               f"odometry's child_frame_id) to {frame or '?'} ({cam.topic}'s "
                               f"frame_id; its frames: {known}); give it with --camera-in-base "
                               "x y z qx qy qz qw")
            found[cam.topic] = (mount, f"{TF_STATIC} {base} -> {frame}")
        return found

    def given_mountings(self, bag: BagReader, cameras: list[Any]
                        ) -> list[tuple[str, str, np.ndarray]]:
        """(the odometry's child frame, the camera's frame, base_from_camera) of each camera
        whose mounting ``--camera-in-base`` gave: what the output bag's /tf_static holds, so a
        viewer places the camera on the robot as this run did."""
        base = self.stream.frames[1] or "base_link"
        return [(base, _camera_frame(bag, cam.image_conns) or f"camera{i}", mount)
                for i, cam in enumerate(cameras)
                for mount, source in [self.mountings[cam.topic]] if source == "--camera-in-base"]

    def pose_for(self, camera: str, header: Any) -> np.ndarray | None:
        """The world_from_camera pose of the frame of ``camera`` (its image topic) with this
        ``header``, or None (counted, the first of each kind said on stderr)."""
        found = self.stream.pose_at(stamp_ns(header.stamp), self.mountings[camera][0])
        if found.pose is not None:
            self.tally["frames_with_motion"] += 1
            return found.pose
        without = self.tally["frames_without_motion"]
        if found.kind not in without:
            warn(f"{camera}: a frame without motion (processed as it is): {found.reason}")
        without[found.kind] = without.get(found.kind, 0) + 1
        return None

    def close(self) -> None:
        self.stream.close()


def _camera_frame(bag: BagReader, image_conns: list[Any]) -> str:
    """The camera's frame: the ``header.frame_id`` of its first image message."""
    messages = bag.messages(image_conns)
    try:
        for conn, _, data in messages:
            try:
                return bag.decode(conn, data).header.frame_id
            except Exception:  # noqa: BLE001 - a bad image: the next one names the frame
                continue
    except BagError:
        return ""
    finally:
        messages.close()
    return ""


def open_motion(path: Path, bag: BagReader, options: Any, settings: Settings,
                cameras: list[Any]) -> BagMotion | None:
    """The bag's motion for ``--odometry-topic`` (``options``: the ``ProcessOptions``), or None
    without it; CliError when what was asked needs it. Several cameras each get their
    mounting, and their frames their own camera's track (scale filter and motion state)."""
    if not options.odometry_topic:
        defaults = Settings()
        given = [OFFLINE.name(name) for name in MOTION_SETTINGS
                 if getattr(settings, name) != getattr(defaults, name)]
        if settings.depth_scale_source == "motion":
            given.insert(0, "--depth-scale-source motion")
        if given:
            raise CliError(f"{given[0]} needs the robot's motion on a bag: add --odometry-topic "
                           "TOPIC (its nav_msgs/Odometry)")
        return None
    return BagMotion(path, bag, options.odometry_topic, settings, cameras)


# The settings read only with --odometry-topic on a bag.
MOTION_SETTINGS = ("camera_in_base", "odometry_tolerance", "odometry_max_gap")
