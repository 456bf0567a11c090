# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Runs the real node in-process over real DDS, with a client node that plays and records."""

from __future__ import annotations

import threading
import time
from collections import defaultdict, deque
from typing import Any, Callable

import rclpy
from rclpy.exceptions import InvalidHandle
from rclpy.executors import SingleThreadedExecutor
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, QoSProfile
from diagnostic_msgs.msg import DiagnosticArray
from sensor_msgs.msg import CameraInfo

from dense_perception.core.geometry.camera_info_choice import MATCHED, stamp_ns
from dense_perception.core.products import OUTPUTS
from dense_perception.ros.messages import MESSAGE_CLASSES
from dense_perception.ros.node import DensePerceptionNode
from tools.common.ros_client import ScenePlayer, decode_status

# Every output the client can watch (the latched class list is subscribed on demand).
OUTPUT_TOPICS = {topic: MESSAGE_CLASSES[msgtype] for key, (topic, msgtype, _) in OUTPUTS.items()
                 if key != "classes"}
OUTPUT_TOPICS["/diagnostics"] = DiagnosticArray
TOPIC_KEYS = {topic: key for key, (topic, _, _) in OUTPUTS.items()}


def wait_until(predicate: Callable[[], bool], timeout: float, what: str,
               executor: Any = None) -> None:
    """Poll ``predicate`` (graph state has no callback to wait on) until true or ``timeout``,
    spinning ``executor`` meanwhile when the caller has no executor thread of its own."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for: {what}")
        if executor is not None:
            executor.spin_once(timeout_sec=0.05)
        else:
            time.sleep(0.02)


class RaceTolerantExecutor(SingleThreadedExecutor):
    """A single-threaded executor that survives https://github.com/ros2/rclpy/issues/1284.

    rclpy collects the nodes' waitables (every publisher and subscription carries QoS event
    handlers) and then adds each to the wait set, also one whose destruction was requested
    after it was collected; that raises ``InvalidHandle`` out of ``spin_once`` and ends a
    ``spin()`` thread. Tests destroy the client's publishers and subscriptions from the test
    thread while this executor spins, so the wait is simply started again: the destroyed entity
    has already left its node's lists and is not collected the next time.
    """

    def spin_once(self, timeout_sec: float | None = None) -> None:
        try:
            super().spin_once(timeout_sec=timeout_sec)
        except InvalidHandle:
            pass


class Harness:
    """The node under test plus a client that publishes frames and records every output.

    ``node_class`` may be the lifecycle node (then nothing is configured yet); ``reliable``
    makes the client's camera publisher reliable.
    """

    def __init__(self, params: dict[str, Any], runner_hook: Callable | None = None,
                 subscribe: tuple[str, ...] = tuple(OUTPUT_TOPICS), keep: int = 1000,
                 node_class: type = DensePerceptionNode, reliable: bool = False) -> None:
        """``keep``: how many messages per topic to remember (bounds the client's memory)."""
        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        params = {"backend": "cpu", **params}  # tests that want "auto" say so
        overrides = [Parameter(k, value=v) for k, v in params.items()]
        self.node = node_class(context=self.context, parameter_overrides=overrides,
                               runner_hook=runner_hook)
        self.client = rclpy.create_node("test_client", context=self.context)
        self.received: dict[str, deque] = defaultdict(lambda: deque(maxlen=keep))
        self._cond = threading.Condition()
        self.subscriptions: dict[str, Any] = {}
        for topic in subscribe:
            self.subscribe(topic)
        self.player = ScenePlayer(self.client, reliable=reliable)
        self.image_pub = self.player.image_pub
        self.compressed_pub = self.player.compressed_pub
        self.info_pub = self.player.info_pub
        self.header = self.player.header
        # The node spins alone on one thread, as ``dense_perception_node`` spins it, so its
        # callbacks never run beside each other; the client spins on a thread of its own.
        self.executor = RaceTolerantExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.client_executor = RaceTolerantExecutor(context=self.context)
        self.client_executor.add_node(self.client)
        self._spins = [threading.Thread(target=ex.spin, daemon=True)
                       for ex in (self.executor, self.client_executor)]
        for spin in self._spins:
            spin.start()

    @property
    def perception(self):
        return self.node.perception

    def subscribe(self, topic: str, msg_type: type | None = None, transient: bool = False) -> None:
        qos = QoSProfile(depth=50, durability=DurabilityPolicy.TRANSIENT_LOCAL) if transient \
            else QoSProfile(depth=50)

        def record(msg, topic=topic):
            with self._cond:
                self.received[topic].append(msg)
                self._cond.notify_all()
        self.subscriptions[topic] = self.client.create_subscription(
            msg_type or OUTPUT_TOPICS[topic], topic, record, qos)

    def unsubscribe(self, topic: str) -> None:
        self.client.destroy_subscription(self.subscriptions.pop(topic))

    def camera_subscribed(self) -> bool:
        """Whether the node subscribes to the camera now (as the client's publishers see it)."""
        return (self.image_pub.get_subscription_count() > 0
                or self.compressed_pub.get_subscription_count() > 0) \
            and self.info_pub.get_subscription_count() > 0

    def wait_matched(self, topics: tuple[str, ...], timeout: float = 10.0) -> None:
        """Wait until the node's publishers for ``topics`` see the client's subscriptions and,
        as a result, the node subscribes to the camera."""
        pubs = [self.perception.channels[0].outputs.pubs[TOPIC_KEYS[t]] for t in topics
                if TOPIC_KEYS.get(t) in self.perception.channels[0].outputs.pubs]
        wait_until(lambda: all(p.get_subscription_count() > 0 for p in pubs), timeout,
                   "outputs matched")
        wait_until(self.camera_subscribed, timeout, "the node subscribes to the camera")

    wait_until = staticmethod(wait_until)

    def publish_frame(self, frame: Any, header: Any, encoding: str = "rgb8",
                      info: CameraInfo | None = None) -> None:
        """The player's publish_frame, waiting for the node to hold ``info`` first: image and
        CameraInfo travel on separate topics and the executor may take either first, so
        without this wait the image can be processed first, with the pinhole guess
        (fallback_hfov_deg) instead of this CameraInfo."""
        if info is not None:
            info.header = header
            self.info_pub.publish(info)
            stamp = stamp_ns(header.stamp)
            infos = self.perception.channels[0].camera_infos
            wait_until(lambda: infos.choose(stamp)[1] == MATCHED, 10,
                       "the node holds the frame's CameraInfo")
        self.player.publish_frame(frame, header, encoding)

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
        """The newest status of this node (as (level, message, values dict)) that satisfies
        ``where``, waiting for new /diagnostics messages up to ``timeout``."""
        name = self.node.get_fully_qualified_name()
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                statuses = [s for msg in self.received["/diagnostics"] for s in msg.status
                            if s.name == name]
                for status in reversed(statuses):
                    entry = decode_status(status)
                    if where(entry):
                        return entry
                left = deadline - time.monotonic()
                if left <= 0:
                    last = statuses[-1].message if statuses else "none"
                    raise TimeoutError(f"no matching diagnostics (last: {last})")
                self._cond.wait(left)

    def close(self) -> None:
        self.node.stop()
        for executor, spin in zip((self.executor, self.client_executor), self._spins):
            executor.shutdown(timeout_sec=2.0)
            spin.join(timeout=2.0)
        self.node.destroy_node()
        self.client.destroy_node()
        rclpy.shutdown(context=self.context)


class LifecycleClient:
    """Drives a lifecycle node through its ``get_state`` / ``change_state`` services from
    ``client`` (a node some executor spins).

    A request sent just after discovery can go unanswered (the service's reply path is not
    matched yet, or the graph still lists an earlier node of the same name), so each call is
    retried; a transition whose reply is lost is confirmed by the state it leads to.
    """

    def __init__(self, client: Any, node_name: str = "/dense_perception") -> None:
        from lifecycle_msgs.srv import ChangeState, GetState
        self._get = client.create_client(GetState, f"{node_name}/get_state")
        self._change = client.create_client(ChangeState, f"{node_name}/change_state")
        self._types = GetState, ChangeState

    @staticmethod
    def _call(service: Any, request: Any, timeout: float) -> Any | None:
        if not service.wait_for_service(timeout_sec=timeout):
            return None
        future = service.call_async(request)
        deadline = time.monotonic() + timeout
        while not future.done() and time.monotonic() < deadline:
            time.sleep(0.01)
        if not future.done():
            future.cancel()
            return None
        return future.result()

    def state(self, timeout: float = 30.0) -> int:
        """The node's current state id (lifecycle_msgs/State)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            reply = self._call(self._get, self._types[0].Request(), 2.0)
            if reply is not None:
                return reply.current_state.id
        raise TimeoutError(f"{self._get.srv_name} did not answer within {timeout:.0f} s")

    def change(self, transition: int, expected_state: int, timeout: float = 30.0) -> bool:
        """Trigger ``transition``: True when the node reached ``expected_state``, False when it
        refused (e.g. configure failed)."""
        from lifecycle_msgs.msg import Transition
        request = self._types[1].Request(transition=Transition(id=transition))
        reply = self._call(self._change, request, timeout / 2)
        if reply is not None:
            return bool(reply.success) and self.state() == expected_state
        return self.state() == expected_state  # the reply was lost: look at the state


def camera_info(width: int, height: int, fx: float = 500.0) -> CameraInfo:
    info = CameraInfo()
    info.width, info.height = width, height
    info.k = [fx, 0.0, (width - 1) / 2, 0.0, fx, (height - 1) / 2, 0.0, 0.0, 1.0]
    info.distortion_model = "plumb_bob"
    info.d = [0.0] * 5
    return info
