"""Runs the real node in-process over real DDS, with a client node that plays and records."""

from __future__ import annotations

import threading
import time
from collections import defaultdict, deque
from typing import Any, Callable

import numpy as np
import rclpy
from rclpy.executors import MultiThreadedExecutor
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, QoSProfile, qos_profile_sensor_data
from diagnostic_msgs.msg import DiagnosticArray
from sensor_msgs.msg import CameraInfo, CompressedImage, Image
from std_msgs.msg import Header

from dense_perception.core.camera_info_choice import MATCHED, stamp_ns
from dense_perception.core.products import OUTPUTS
from dense_perception.ros.messages import MESSAGE_CLASSES, array_to_image
from dense_perception.ros.node import DensePerceptionNode

# Every output the client can watch (the latched class list is subscribed on demand).
OUTPUT_TOPICS = {topic: MESSAGE_CLASSES[msgtype] for key, (topic, msgtype, _) in OUTPUTS.items()
                 if key != "classes"}
OUTPUT_TOPICS["/diagnostics"] = DiagnosticArray
TOPIC_KEYS = {topic: key for key, (topic, _, _) in OUTPUTS.items()}


class Harness:
    """The node under test plus a client that publishes frames and records every output."""

    def __init__(self, params: dict[str, Any], runner_hook: Callable | None = None,
                 subscribe: tuple[str, ...] = tuple(OUTPUT_TOPICS), keep: int = 1000) -> None:
        """``keep``: how many messages per topic to remember (bounds the client's memory)."""
        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        params = {"backend": "cpu", **params}  # tests that want "auto" say so
        overrides = [Parameter(k, value=v) for k, v in params.items()]
        self.node = DensePerceptionNode(context=self.context, parameter_overrides=overrides,
                                        runner_hook=runner_hook)
        self.client = rclpy.create_node("test_client", context=self.context)
        self.received: dict[str, deque] = defaultdict(lambda: deque(maxlen=keep))
        self._cond = threading.Condition()
        for topic in subscribe:
            self.subscribe(topic)
        self.image_pub = self.client.create_publisher(Image, "image", qos_profile_sensor_data)
        self.compressed_pub = self.client.create_publisher(CompressedImage, "image/compressed",
                                                           qos_profile_sensor_data)
        self.info_pub = self.client.create_publisher(CameraInfo, "camera_info",
                                                     qos_profile_sensor_data)
        self.executor = MultiThreadedExecutor(num_threads=2, context=self.context)
        self.executor.add_node(self.node)
        self.executor.add_node(self.client)
        self._spin = threading.Thread(target=self.executor.spin, daemon=True)
        self._spin.start()
        self.wait_until(lambda: (self.image_pub.get_subscription_count() > 0
                                 or self.compressed_pub.get_subscription_count() > 0)
                        and self.info_pub.get_subscription_count() > 0, 10, "node subscribes")

    def subscribe(self, topic: str, msg_type: type | None = None, transient: bool = False) -> None:
        qos = QoSProfile(depth=50, durability=DurabilityPolicy.TRANSIENT_LOCAL) if transient \
            else QoSProfile(depth=50)

        def record(msg, topic=topic):
            with self._cond:
                self.received[topic].append(msg)
                self._cond.notify_all()
        self.client.create_subscription(msg_type or OUTPUT_TOPICS[topic], topic, record, qos)

    def wait_matched(self, topics: tuple[str, ...], timeout: float = 10.0) -> None:
        """Wait until the node's publishers for ``topics`` see the client's subscriptions."""
        pubs = [self.node._pubs[TOPIC_KEYS[t]] for t in topics
                if TOPIC_KEYS.get(t) in self.node._pubs]
        self.wait_until(lambda: all(p.get_subscription_count() > 0 for p in pubs), timeout,
                        "outputs matched")

    @staticmethod
    def wait_until(predicate: Callable[[], bool], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                raise TimeoutError(f"timed out waiting for: {what}")
            time.sleep(0.02)

    def header(self, frame_id: str = "camera_optical_frame", sec: int | None = None,
               nanosec: int = 0) -> Header:
        h = Header()
        h.frame_id = frame_id
        if sec is None:
            h.stamp = self.client.get_clock().now().to_msg()
        else:
            h.stamp.sec, h.stamp.nanosec = sec, nanosec
        return h

    def publish_frame(self, rgb: np.ndarray, header: Header, encoding: str = "rgb8",
                      info: CameraInfo | None = None) -> None:
        if info is not None:
            info.header = header
            self.info_pub.publish(info)
            # Image and CameraInfo travel on separate topics and are taken by separate executor
            # threads: without this wait the image can be processed first, with the pinhole
            # guess (fallback_hfov_deg) instead of this CameraInfo.
            stamp = stamp_ns(header.stamp)
            self.wait_until(lambda: self.node._camera_infos.choose(stamp)[1] == MATCHED, 10,
                            "the node holds the frame's CameraInfo")
        self.image_pub.publish(array_to_image(rgb, encoding, header))

    def wait_for(self, topic: str, count: int = 1, timeout: float = 10.0,
                 where: Callable[[Any], bool] = lambda m: True) -> list:
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                msgs = [m for m in self.received[topic] if where(m)]
                if len(msgs) >= count:
                    return msgs
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"{topic}: got {len(msgs)} of {count} messages")
                self._cond.wait(left)

    def diagnostics(self, where: Callable[[Any], bool] = lambda s: True, timeout: float = 10.0):
        """The next DiagnosticStatus (as (level, message, values dict)) that satisfies ``where``."""
        deadline = time.monotonic() + timeout
        while True:
            msgs = list(self.received["/diagnostics"])
            for msg in reversed(msgs):
                s = msg.status[0]
                entry = (int.from_bytes(s.level, "little") if isinstance(s.level, bytes)
                         else int(s.level), s.message, {kv.key: kv.value for kv in s.values})
                if where(entry):
                    return entry
            if time.monotonic() > deadline:
                last = msgs[-1].status[0].message if msgs else "none"
                raise TimeoutError(f"no matching diagnostics (last: {last})")
            time.sleep(0.05)

    def close(self) -> None:
        self.node.stop()
        self.executor.shutdown(timeout_sec=2.0)
        self._spin.join(timeout=2.0)
        self.node.destroy_node()
        self.client.destroy_node()
        rclpy.shutdown(context=self.context)


def camera_info(width: int, height: int, fx: float = 500.0) -> CameraInfo:
    info = CameraInfo()
    info.width, info.height = width, height
    info.k = [fx, 0.0, (width - 1) / 2, 0.0, fx, (height - 1) / 2, 0.0, 0.0, 1.0]
    info.distortion_model = "plumb_bob"
    info.d = [0.0] * 5
    return info
