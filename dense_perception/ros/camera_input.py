# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The camera subscriptions (``image`` or ``image/compressed``, and ``camera_info``).

They exist only while the node is active and an output has a subscriber, so an idle node
receives (and deserialises) no frames, as depth_image_proc does. Their QoS follows
``input_qos``: ``auto`` matches the camera publisher's reliability with history depth 1 (as
image_proc does: https://github.com/ros-perception/image_pipeline/issues/814) and is checked
again when a publisher appears: a best-effort subscription to a reliable 1280x720 camera loses
most frames in Fast DDS.

``camera_info`` follows ``camera_info_qos``: ``auto`` is as ``input_qos``, except that when every
camera_info publisher is transient-local (a driver that latches its CameraInfo once, maybe long
before the node subscribes) it subscribes transient-local too, so that sample is delivered.
"""

from __future__ import annotations

import copy
from typing import Any, Callable

from rclpy.node import Node
from rclpy.qos import (DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy,
                       qos_profile_sensor_data)
from sensor_msgs.msg import CameraInfo, CompressedImage, Image

from .compat import GraphWatch
from .outputs import prefixed

# The subscribed topics (relative, remappable): image or its compressed sibling, camera_info.
IMAGE_TOPIC = "image"
COMPRESSED_TOPIC = "image/compressed"
INFO_TOPIC = "camera_info"
REFERENCE_TOPIC = "reference_depth"  # metric depth for depth_scale_source: reference_depth


def input_qos(mode: str, offered: list[ReliabilityPolicy]) -> QoSProfile:
    """The subscription QoS for ``input_qos`` = ``mode`` when the topic's publishers offer
    ``offered`` reliabilities.

    ``auto``: reliable (depth 1) when every publisher is reliable; otherwise, or with no
    publisher yet, best effort (depth 1), which matches either kind.
    """
    if mode == "sensor_data":
        return qos_profile_sensor_data
    reliable = mode == "reliable" or (
        mode == "auto" and bool(offered) and all(r == ReliabilityPolicy.RELIABLE for r in offered))
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1,
                      reliability=ReliabilityPolicy.RELIABLE if reliable
                      else ReliabilityPolicy.BEST_EFFORT)


def camera_info_qos(mode: str, input_mode: str, offered: list[QoSProfile]) -> QoSProfile:
    """The camera_info subscription QoS for ``camera_info_qos`` = ``mode`` (and ``input_qos`` =
    ``input_mode``) when the topic's publishers offer ``offered``.

    A transient-local subscription matches only transient-local publishers, so ``auto`` asks for
    it only when every publisher offers it, and then with the publishers' reliability (history
    depth 1: the latched CameraInfo).
    """
    latched = bool(offered) and all(
        p.durability == DurabilityPolicy.TRANSIENT_LOCAL for p in offered)
    if mode == "transient_local" or (mode == "auto" and latched):
        reliable = mode == "transient_local" or all(
            p.reliability == ReliabilityPolicy.RELIABLE for p in offered)
        return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1,
                          durability=DurabilityPolicy.TRANSIENT_LOCAL,
                          reliability=ReliabilityPolicy.RELIABLE if reliable
                          else ReliabilityPolicy.BEST_EFFORT)
    return input_qos(input_mode if mode == "auto" else mode, [p.reliability for p in offered])


def _describe(qos: QoSProfile) -> str:
    return f"{qos.reliability.name.lower()}, {qos.durability.name.lower()}"


class CameraInput:
    """Subscribes to the camera while :meth:`update` is told it is wanted."""

    def __init__(self, node: Node, *, compressed: bool, mode: str,
                 on_image: Callable[[Any], None], on_info: Callable[[Any], None],
                 watch: GraphWatch, on_reference: Callable[[Any], None] | None = None,
                 info_mode: str = "auto", prefix: str = "") -> None:
        """``mode``: ``input_qos``; ``info_mode``: ``camera_info_qos``. ``on_reference``: also
        subscribe to ``reference_depth`` (Image) with the camera. ``prefix``: the camera's name
        (``cameras``): its topics are ``<prefix>/image`` etc."""
        self._node, self._mode, self._watch = node, mode, watch
        self._info_mode = info_mode
        image = (COMPRESSED_TOPIC, CompressedImage) if compressed else (IMAGE_TOPIC, Image)
        # topic -> (message type, callback); the subscriptions and the QoS each was made with.
        self._image_topic = prefixed(prefix, image[0])
        self._info_topic = prefixed(prefix, INFO_TOPIC)
        self._topics = {self._image_topic: (image[1], on_image),
                        self._info_topic: (CameraInfo, on_info)}
        if on_reference is not None:
            self._topics[prefixed(prefix, REFERENCE_TOPIC)] = (Image, on_reference)
        self._subs: dict[str, tuple[Any, QoSProfile]] = {}

    @property
    def subscribed(self) -> bool:
        return bool(self._subs)

    def reliability(self) -> str:
        """The image subscription's reliability ('-' when not subscribed), for diagnostics."""
        subs = [qos for topic, (_, qos) in self._subs.items()
                if topic == self._image_topic]
        return subs[0].reliability.name.lower() if subs else "-"

    def update(self, wanted: bool) -> None:
        """Subscribe or unsubscribe; while subscribed with ``auto``, follow the publishers."""
        if not wanted:
            self.close()
            return
        for topic, (msg_type, callback) in self._topics.items():
            qos = self._qos(topic)
            current = self._subs.get(topic)
            if current is not None and _describe(current[1]) == _describe(qos):
                continue
            if current is not None:
                self._node.destroy_subscription(current[0])
                self._node.get_logger().info(
                    f"{topic}: the camera publishes {_describe(qos)}; "
                    "subscribing again to match it")
            elif qos.durability == DurabilityPolicy.TRANSIENT_LOCAL:
                self._node.get_logger().info(f"{topic}: subscribing {_describe(qos)} "
                                             "(camera_info_qos)")
            # No qos_overriding_options: input_qos is the knob. (Override parameters are
            # declared read-only with the first subscription's values and would force those
            # on every later one.)
            sub = self._node.create_subscription(
                msg_type, topic, callback, copy.copy(qos), **self._watch.subscription_kwargs())
            self._subs[topic] = (sub, qos)

    def _qos(self, topic: str) -> QoSProfile:
        """The QoS ``topic`` should be subscribed with now."""
        if topic == self._info_topic:
            offered = self._offered(topic) if self._info_mode == "auto" else []
            return camera_info_qos(self._info_mode, self._mode, offered)
        offered = self._offered(topic) if self._mode == "auto" else []
        return input_qos(self._mode, [p.reliability for p in offered])

    def _offered(self, topic: str) -> list[QoSProfile]:
        name = self._node.resolve_topic_name(topic)
        return [info.qos_profile for info in self._node.get_publishers_info_by_topic(name)]

    def close(self) -> None:
        for sub, _ in self._subs.values():
            self._node.destroy_subscription(sub)
        self._subs = {}
