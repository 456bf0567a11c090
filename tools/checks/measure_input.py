# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Two figures of the node's camera input, for the README (not a test):

* ``idle``: the node's CPU (utime + stime from /proc/<pid>/stat) over a window while a 30 fps
  1280x720 camera publishes and nobody subscribes to any output;
* ``delivery``: the frames per second that reach the node's image subscription (its
  diagnostics' ``frames received``) while an output is watched, for a reliable and a
  best-effort camera publisher.

    python -m tools.checks.measure_input [--repo PATH] [--seconds 20]

``--repo`` runs the node from another checkout (e.g. an older commit unpacked with
``git archive``), so before/after figures come from one script on one machine.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

import rclpy  # noqa: E402
from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from rclpy.qos import QoSProfile  # noqa: E402
from sensor_msgs.msg import Image  # noqa: E402

from tools.common.node_process import NodeProcess  # noqa: E402
from tools.common.ros_client import ScenePlayer, decode_status  # noqa: E402

CLOCK_TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """utime + stime of ``pid`` (all its threads) in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICK


def measure(repo: Path, reliable: bool, watch: bool, seconds: float) -> dict:
    """Start the node from ``repo``, play the camera, return CPU % and frames received/s."""
    model = REPO / "models" / "test_da3_small.tflite"
    node = NodeProcess(["-p", f"model_path:={model}", "-p", "backend:=cpu",
                        "-p", "num_threads:=1", "-p", "diagnostics_period:=1.0"],
                       repo=repo).start()
    context = rclpy.Context()
    rclpy.init(context=context)
    client = rclpy.create_node("measure_input", context=context)
    latest: dict = {}

    def on_diag(msg: DiagnosticArray) -> None:
        for status in msg.status:
            if "dense_perception" in status.name:
                latest.update(decode_status(status)[2], t=time.monotonic())
    client.create_subscription(DiagnosticArray, "/diagnostics", on_diag, 10)
    if watch:
        client.create_subscription(Image, "depth/image", lambda _m: None, QoSProfile(depth=1))
    player = ScenePlayer(client, fps=30.0, size=(1280, 720), reliable=reliable)
    executor = rclpy.executors.SingleThreadedExecutor(context=context)
    executor.add_node(client)
    spin = threading.Thread(target=executor.spin, daemon=True)
    spin.start()
    try:
        deadline = time.monotonic() + 60
        while "frames received" not in latest:  # the node is up and has published diagnostics
            if time.monotonic() > deadline or not node.alive():
                raise RuntimeError(f"node did not come up: {node.output_tail()}")
            time.sleep(0.1)
        player.start()
        time.sleep(3.0)  # warm-up: matching, the first frames
        cpu0, rx0, t0 = cpu_seconds(node.pid), int(latest["frames received"]), time.monotonic()
        played0 = player.frames
        time.sleep(seconds)
        cpu1, t1 = cpu_seconds(node.pid), time.monotonic()
        seen = latest["t"]
        while latest["t"] == seen and time.monotonic() < seen + 3:
            time.sleep(0.05)  # one more diagnostics message, after the window
        rx1 = int(latest["frames received"])
        return {"reliable_camera": reliable, "output_watched": watch,
                "cpu_percent": round(100 * (cpu1 - cpu0) / (t1 - t0), 1),
                "frames_played_per_s": round((player.frames - played0) / (t1 - t0), 1),
                "frames_received_per_s": round((rx1 - rx0) / (t1 - t0), 1)}
    finally:
        player.stop()
        executor.shutdown(timeout_sec=1.0)
        client.destroy_node()
        rclpy.try_shutdown(context=context)
        node.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", default=str(REPO), help="checkout whose node to run")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--only", choices=("idle", "delivery"), default=None)
    args = parser.parse_args()
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    runs = []
    if args.only in (None, "idle"):
        runs += [(False, False), (True, False)]
    if args.only in (None, "delivery"):
        runs += [(True, True), (False, True)]
    for reliable, watch in runs:
        print(json.dumps(measure(Path(args.repo), reliable, watch, args.seconds)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
