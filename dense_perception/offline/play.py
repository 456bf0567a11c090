# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""``dense-perception play BAG``: a recording's messages published over DDS at their recorded
pace, so the node can be fed a bag on a machine with ROS 2 from pip only (no ``ros2 bag play``).

Each topic is published with its recorded type (the message classes rclpy's packages have;
a topic of a type not installed is left out, said once), reliable, in the order and at the
pace of the messages' log times (``--rate`` scales it). ``/tf_static`` is latched
(transient local), as tf2 expects. ``--clock`` also publishes ``/clock`` (rosgraph_msgs/Clock)
at each message's log time, for a node run with ``use_sim_time``. ``--topic`` (repeatable)
plays only those topics, ``--remap FROM:=TO`` publishes a topic under another name (the node's
relative ``image``, ``camera_info`` and ``odometry`` from a robot's names), and
``--wait-for-subscriber TOPIC`` holds the start until that topic has a subscriber: the node
subscribes to its camera only once someone watches its outputs.
"""

from __future__ import annotations

import argparse
import importlib
import time
from pathlib import Path
from typing import Any

from .console import PROG, CliError, warn

LATCHED = ("/tf_static",)


def add_play_parser(sub: Any) -> None:
    """The ``play`` sub-command."""
    p = sub.add_parser("play", help="publish a bag's topics over DDS at the recorded pace",
                       description="Publish a recording's messages over DDS at their recorded "
                       "pace, so the node can be fed a bag on a machine with ROS 2 from pip "
                       "only (no ros2 bag play).")
    p.add_argument("bag", help="a rosbag2 folder or .mcap/.db3 file")
    p.add_argument("--rate", type=float, default=1.0,
                   help="pace relative to the recording (default 1.0; 0.5 = half speed)")
    p.add_argument("--clock", action="store_true",
                   help="also publish /clock with each message's log time (use_sim_time)")
    p.add_argument("--topic", action="append", help="play only this topic (repeatable)")
    p.add_argument("--remap", action="append", metavar="FROM:=TO",
                   help="publish topic FROM as TO (repeatable)")
    p.add_argument("--wait-for-subscriber", metavar="TOPIC",
                   help="start once TOPIC (a played one, after --remap: e.g. /image, which the "
                   "node subscribes to once its outputs are watched) has a subscriber, "
                   "waiting at most 30 s")
    p.set_defaults(func=cmd_play)


def message_class(msgtype: str) -> Any:
    """The rclpy message class of a bag's type name (``sensor_msgs/msg/Image``)."""
    package, kind, name = msgtype.split("/")
    return getattr(importlib.import_module(f"{package}.{kind}"), name)


def _remaps(pairs: list[str] | None) -> dict[str, str]:
    out = {}
    for pair in pairs or []:
        source, sep, target = pair.partition(":=")
        if not sep or not source or not target:
            raise CliError(f"--remap {pair}: give FROM:=TO, e.g. /cam/image_raw:=/image")
        out[source] = target
    return out


def cmd_play(args: argparse.Namespace) -> int:
    """``play``: publish the bag, then say what was played."""
    if not args.rate > 0:
        raise CliError(f"--rate must be > 0, got {args.rate}")
    path = Path(args.bag)
    if not path.exists():
        raise CliError(f"{path} does not exist")
    count, topics, seconds = play(path, args.rate, args.clock, args.topic or (),
                                  _remaps(args.remap), args.wait_for_subscriber)
    print(f"{PROG}: played {count} messages on {topics} topics in {seconds:.1f} s", flush=True)
    return 0


def play(bag: Path, rate: float = 1.0, clock: bool = False, topics: tuple[str, ...] = (),
         remap: dict[str, str] | None = None, wait_for: str | None = None
         ) -> tuple[int, int, float]:
    """Publish ``bag``'s messages; (messages, topics, seconds)."""
    import rclpy
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
    from rclpy.serialization import deserialize_message
    from rosbags.rosbag2 import Reader
    from rosgraph_msgs.msg import Clock
    remap = remap or {}
    context = rclpy.Context()
    rclpy.init(context=context)
    node = rclpy.create_node("dense_perception_play", context=context)
    try:
        with Reader(bag) as reader:
            publishers, missing = {}, set()
            wanted = [c for c in reader.connections if not topics or c.topic in topics]
            for conn in wanted:
                try:
                    cls = message_class(conn.msgtype)
                except (ImportError, AttributeError, ValueError):
                    missing.add(conn.msgtype)
                    continue
                latched = conn.topic in LATCHED
                qos = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE,
                                 durability=DurabilityPolicy.TRANSIENT_LOCAL if latched
                                 else DurabilityPolicy.VOLATILE)
                publishers[conn.id] = (node.create_publisher(
                    cls, remap.get(conn.topic, conn.topic), qos), cls)
            for msgtype in sorted(missing):
                warn(f"not played: no Python messages for {msgtype} here "
                     "(pip install its ros-<distro>-<package> wheel)")
            clock_pub = node.create_publisher(Clock, "/clock", 10) if clock else None
            if wait_for:
                _wait_for_subscriber(node, wait_for)
            count, start, first = 0, time.monotonic(), None
            for conn, log_time, raw in reader.messages(
                    connections=[c for c in wanted if c.id in publishers]):
                first = log_time if first is None else first
                time.sleep(max(0.0, start + (log_time - first) / 1e9 / rate - time.monotonic()))
                publisher, cls = publishers[conn.id]
                if clock_pub is not None:
                    stamp = Clock()
                    stamp.clock.sec, stamp.clock.nanosec = divmod(int(log_time), 10**9)
                    clock_pub.publish(stamp)
                publisher.publish(deserialize_message(raw, cls))
                count += 1
            return count, len({c.topic for c in wanted if c.id in publishers}), \
                time.monotonic() - start
    finally:
        node.destroy_node()
        rclpy.shutdown(context=context)


def _wait_for_subscriber(node: Any, topic: str, timeout: float = 30.0) -> None:
    """Until ``topic`` has a subscriber."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if node.count_subscribers(topic):
            return
        time.sleep(0.05)
    raise CliError(f"--wait-for-subscriber {topic}: nobody subscribed within {timeout:g} s")
