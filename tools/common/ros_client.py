# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The client side of every run against the node (demo, load generator, tests): a camera
stand-in that plays frames, and the one decoding of the node's /diagnostics status."""

from __future__ import annotations

import threading
import time
from typing import Any, Callable

import numpy as np
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy, qos_profile_sensor_data
from sensor_msgs.msg import CameraInfo, CompressedImage, Image
from std_msgs.msg import Header

from dense_perception.ros.messages import array_to_image, intrinsics_to_camera_info
from tools.common.scene import make_sample_scene, scene_intrinsics

FRAME_ID = "camera_optical_frame"
LEVEL_NAMES = {0: "OK", 1: "WARN", 2: "ERROR", 3: "STALE"}


def camera_qos(reliable: bool) -> QoSProfile:
    """A camera driver's publisher QoS: sensor data (best effort, depth 5) or reliable."""
    if not reliable:
        return qos_profile_sensor_data
    return QoSProfile(depth=5, reliability=ReliabilityPolicy.RELIABLE)


class ScenePlayer:
    """Publishes frames + matching CameraInfo on ``image`` / ``camera_info`` of ``client``.

    ``publish_frame`` sends one frame now; ``start`` plays one frame (the sample scene by
    default), re-stamped, at ``fps`` from a background thread until ``stop``. ``on_sent`` is
    called with each played header.
    """

    def __init__(self, client: Node, *, fps: float = 30.0, size: tuple[int, int] = (1280, 720),
                 frame: np.ndarray | None = None, info: CameraInfo | None = None,
                 reliable: bool = False, on_sent: Callable[[Header], None] | None = None,
                 encoding: str = "rgb8") -> None:
        self.client = client
        self._encoding = encoding  # of the played frames: rgb8 or bgr8 (channels swapped here)
        qos = camera_qos(reliable)
        self.image_pub = client.create_publisher(Image, "image", qos)
        self.compressed_pub = client.create_publisher(CompressedImage, "image/compressed", qos)
        self.info_pub = client.create_publisher(CameraInfo, "camera_info", qos)
        self._period = 1.0 / fps
        self._size = size
        self._frame, self._info = frame, info
        self._on_sent = on_sent
        self.last_header: Header | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.frames = 0

    def header(self, frame_id: str = FRAME_ID, sec: int | None = None,
               nanosec: int = 0) -> Header:
        """A header stamped now (or at ``sec``.``nanosec``)."""
        header = Header(frame_id=frame_id)
        if sec is None:
            header.stamp = self.client.get_clock().now().to_msg()
        else:
            header.stamp.sec, header.stamp.nanosec = sec, nanosec
        return header

    def publish_frame(self, frame: np.ndarray | Image, header: Header, encoding: str = "rgb8",
                      info: CameraInfo | None = None) -> None:
        """Publish ``info`` (if given, with ``header``) and then the frame with ``header``."""
        if info is not None:
            info.header = header
            self.info_pub.publish(info)
        msg = frame if isinstance(frame, Image) else array_to_image(frame, encoding, header)
        msg.header = header
        self.image_pub.publish(msg)

    def start(self, frame: np.ndarray | None = None, fps: float | None = None) -> "ScenePlayer":
        """Play (``frame`` instead of the one given at construction, at ``fps`` if given) from
        a background thread."""
        if frame is not None:
            self._frame, self._size = frame, (frame.shape[1], frame.shape[0])
        if fps is not None:
            self._period = 1.0 / fps
        self._stop.clear()
        self._thread = threading.Thread(target=self._play, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)

    def _play(self) -> None:
        width, height = self._size
        # One message, re-stamped: the player spends no CPU on copying frames.
        rgb = make_sample_scene(width, height) if self._frame is None else self._frame
        if self._encoding == "bgr8":
            rgb = np.ascontiguousarray(rgb[:, :, ::-1])
        frame = array_to_image(rgb, self._encoding, Header())
        info = self._info or intrinsics_to_camera_info(scene_intrinsics(width, height), Header())
        next_t = time.monotonic()
        while not self._stop.is_set():
            header = self.header()
            if self._on_sent is not None:  # before publishing: outputs may come back at once
                self._on_sent(header)
            self.publish_frame(frame, header, info=info)
            self.frames += 1
            self.last_header = header
            next_t += self._period
            time.sleep(max(0.0, next_t - time.monotonic()))


def decode_status(status: Any) -> tuple[int, str, dict[str, str]]:
    """A DiagnosticStatus as (level as int, message, {key: value})."""
    level = status.level
    level = int.from_bytes(level, "little") if isinstance(level, bytes) else int(level)
    return level, status.message, {kv.key: kv.value for kv in status.values}


def node_status(msg: Any, node_name: str) -> Any | None:
    """The DiagnosticStatus of the node whose fully qualified name is ``node_name``, or None."""
    return next((s for s in msg.status if s.name == node_name), None)
