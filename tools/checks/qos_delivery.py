# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Frames per second that DDS delivers from a 1280x720 camera publisher to a subscriber in another
process, by the two sides' reliability (not a test; figures for the README's QoS notes).

    .venv/bin/python -m tools.checks.qos_delivery [--seconds 10] [--fps 30] \\
        [--width 1280 --height 720]

For each case a subscriber process and a publisher process start on this machine's own DDS
domain (ROS_DOMAIN_ID, localhost discovery); the publisher waits until it matches, sends
``fps x seconds`` rgb8 frames at a steady rate, and the subscriber counts the distinct frames it
got. Cases: a reliable and a best-effort camera into a best-effort subscription (the node's
sensor-data QoS), and a reliable camera into a reliable subscription (what matching the
publisher's reliability gives).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

CASES = [("reliable", "best_effort"), ("best_effort", "best_effort"), ("reliable", "reliable")]
TOPIC = "qos_delivery/image"


def _profile(reliability: str, depth: int):
    from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
    return QoSProfile(depth=depth, history=HistoryPolicy.KEEP_LAST,
                      reliability=ReliabilityPolicy.RELIABLE if reliability == "reliable"
                      else ReliabilityPolicy.BEST_EFFORT)


def run_subscriber(reliability: str, seconds: float) -> None:
    """Count distinct frames (header.frame_id carries the index) until ``seconds`` after the
    first one, or 'done' from the publisher; print a JSON line."""
    import rclpy
    from sensor_msgs.msg import Image
    rclpy.init()
    node = rclpy.create_node("qos_delivery_sub")
    seen: set[str] = set()
    first = last = None

    def on_image(msg):
        nonlocal first, last
        last = time.monotonic()
        first = first or last
        seen.add(msg.header.frame_id)
    # Sensor-data QoS: best effort, keep last 5 (rclpy's qos_profile_sensor_data).
    node.create_subscription(Image, TOPIC, on_image, _profile(reliability, 5))
    print("READY", flush=True)
    deadline = time.monotonic() + seconds + 30
    while time.monotonic() < deadline:
        rclpy.spin_once(node, timeout_sec=0.05)
        if first is not None and time.monotonic() - first > seconds + 2:
            break
    print(json.dumps({"received": len(seen),
                      "span_s": (last - first) if first else 0.0}), flush=True)
    node.destroy_node()
    rclpy.shutdown()


def run_publisher(reliability: str, seconds: float, fps: float, width: int, height: int) -> None:
    """Publish ``fps x seconds`` frames at a steady rate once a subscriber matched."""
    import numpy as np
    import rclpy
    from sensor_msgs.msg import Image
    rclpy.init()
    node = rclpy.create_node("qos_delivery_pub")
    # A camera driver's default: reliable keep-last 10, or sensor data (best effort, 5).
    pub = node.create_publisher(Image, TOPIC, _profile(reliability, 10 if reliability ==
                                                        "reliable" else 5))
    msg = Image(height=height, width=width, encoding="rgb8", step=width * 3)
    msg.data = np.random.default_rng(0).integers(0, 255, width * height * 3, np.uint8).tobytes()
    deadline = time.monotonic() + 30
    while pub.get_subscription_count() == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(1.0)  # let the match settle on both sides
    frames = int(round(fps * seconds))
    start = time.monotonic()
    late = 0
    for i in range(frames):
        due = start + i / fps
        wait = due - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        else:
            late += 1
        msg.header.frame_id = str(i)
        msg.header.stamp = node.get_clock().now().to_msg()
        pub.publish(msg)
    elapsed = time.monotonic() - start
    print(json.dumps({"published": frames, "publish_s": elapsed, "late": late}), flush=True)
    time.sleep(1.0)  # reliable: let the last samples go out
    node.destroy_node()
    rclpy.shutdown()


def measure(pub_rel: str, sub_rel: str, args) -> dict:
    """One case: both processes, their JSON lines merged, frames/s delivered."""
    me = [sys.executable, "-m", "tools.checks.qos_delivery"]
    common = ["--seconds", str(args.seconds)]
    sub = subprocess.Popen([*me, "--role", "sub", "--reliability", sub_rel, *common],
                           stdout=subprocess.PIPE, text=True)
    assert sub.stdout.readline().strip() == "READY"
    pub = subprocess.run([*me, "--role", "pub", "--reliability", pub_rel, *common,
                          "--fps", str(args.fps), "--width", str(args.width),
                          "--height", str(args.height)],
                         capture_output=True, text=True, timeout=args.seconds + 90)
    out, _ = sub.communicate(timeout=args.seconds + 60)
    result = {"publisher": pub_rel, "subscriber": sub_rel,
              **json.loads(pub.stdout.strip().splitlines()[-1]),
              **json.loads(out.strip().splitlines()[-1])}
    result["delivered_fps"] = round(result["received"] / result["publish_s"], 2)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--role", choices=["sub", "pub"])
    parser.add_argument("--reliability", choices=["reliable", "best_effort"])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--fps", type=float, default=30.0)
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=720)
    parser.add_argument("--rounds", type=int, default=1, help="repeat every case this often")
    args = parser.parse_args()
    if args.role == "sub":
        return run_subscriber(args.reliability, args.seconds)
    if args.role == "pub":
        return run_publisher(args.reliability, args.seconds, args.fps, args.width, args.height)
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from dense_perception.ros.compat import ros_distro
    print(f"ROS 2 {ros_distro()}, {os.environ.get('RMW_IMPLEMENTATION', 'default rmw')}, "
          f"{args.width}x{args.height} rgb8 at {args.fps:g} fps for {args.seconds:g} s, "
          f"load average {os.getloadavg()[0]:.1f}", flush=True)
    print(f"{'publisher':>12} {'subscriber':>12} {'sent':>6} {'received':>9} {'fps':>7}")
    for _ in range(args.rounds):
        for pub_rel, sub_rel in CASES:
            r = measure(pub_rel, sub_rel, args)
            print(f"{pub_rel:>12} {sub_rel:>12} {r['published']:>6} {r['received']:>9} "
                  f"{r['delivered_fps']:>7}", flush=True)


if __name__ == "__main__":
    main()
