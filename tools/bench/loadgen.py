# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Play a camera stream into a node process over DDS and measure what comes out.

Used by the benchmark (``make bench``) and the soak test (``make soak``): the node runs as its
own process (so its memory is its own), a client plays frames at a fixed rate with a matching
CameraInfo and records every output's arrival, age (arrival - header stamp) and the node's
resident memory over time.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Callable

import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.qos import QoSProfile
from sensor_msgs.msg import Image

from dense_perception.core.products import COMPRESSED, OUTPUTS
from dense_perception.ros.messages import MESSAGE_CLASSES
from tools.common.node_process import NodeProcess
from tools.common.ros_client import ScenePlayer, decode_status, node_status

NODE_FQN = "/dense_perception"  # the node's diagnostics name (fully qualified)


# Every output but depth/image (watched for timing), the latched class list and the compressed
# topics (a remote viewer's; their cost is make bench's wire rows, tools/bench/wire.py).
OTHER_OUTPUTS = {topic: MESSAGE_CLASSES[msgtype] for key, (topic, msgtype, _) in OUTPUTS.items()
                 if key not in ("depth", "classes") and key not in COMPRESSED}


@dataclass
class StreamResult:
    """What a run measured."""

    frames_in: int = 0
    frames_out: int = 0
    first_output_s: float | None = None      # node process start -> first output
    output_times: list[float] = field(default_factory=list)  # monotonic arrival times
    ages_s: list[float] = field(default_factory=list)        # arrival - header stamp
    rss_mb: list[tuple[float, float]] = field(default_factory=list)  # (t since start, MB)
    diagnostics: dict[str, str] = field(default_factory=dict)
    exit_code: int | None = None
    # With ``bare`` given to run_stream: per round, the node's output rate and the bare invoke
    # time measured right after it under the same feed (the node idle, its outputs unwatched).
    node_hz_rounds: list[float] = field(default_factory=list)
    bare_ms_rounds: list[float] = field(default_factory=list)

    def output_hz(self, skip: int = 1) -> float:
        """Steady output rate, ignoring the first ``skip`` outputs (warm-up)."""
        times = self.output_times[skip:]
        if len(times) < 2:
            return 0.0
        return (len(times) - 1) / (times[-1] - times[0])

    def rss_at(self, t: float) -> float:
        """Node RSS (MB) at the first sample at or after ``t`` seconds."""
        for when, mb in self.rss_mb:
            if when >= t:
                return mb
        return self.rss_mb[-1][1] if self.rss_mb else 0.0


def rss_mb(pid: int) -> float | None:
    """Resident memory of process ``pid`` in MB (None once it is gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def run_stream(ros_args: list[str], *, script: list[str] | None = None, fps: float = 30.0,
               seconds: float = 30.0,
               size: tuple[int, int] = (1280, 720), output_topic: str = "depth/image",
               env: dict[str, str] | None = None, start_timeout: float = 300.0,
               subscribe_all: bool = False, bare: Callable[[], float] | None = None,
               rounds: int = 3, log=print, encoding: str = "rgb8",
               reliable: bool = False) -> StreamResult:
    """Start the node (``NodeProcess(ros_args, script=script)``), play ``seconds`` of frames at
    ``fps`` after its first output, stop it.

    Frames are played from the start (the node's first output marks the end of its start-up);
    the measured window then runs for ``seconds``. The node is stopped with SIGINT.
    ``subscribe_all`` also subscribes to every other output, so the node computes them all.

    With ``bare`` (a function returning a bare invoke time in ms, run in this process), the
    window is cut into ``rounds`` rounds of node / bare: for the bare part this client drops
    its output subscriptions, so the node (lazy) only receives frames and the feed, the DDS
    traffic and the receiving process are exactly as when the node infers. A/B rounds cancel
    the drift of a noisy machine.

    ``reliable`` plays the frames with reliable QoS (the node matches it): best effort, a
    1280x720 frame's UDP fragments are lost on a busy machine and few frames arrive.
    """
    result = StreamResult()
    started = time.monotonic()
    node = NodeProcess(ros_args, script=script, env=env).start()
    context = rclpy.Context()
    rclpy.init(context=context)
    client = rclpy.create_node("loadgen", context=context)
    stop = threading.Event()
    first_output = threading.Event()
    lock = threading.Lock()

    def on_output(msg: Image) -> None:
        now = time.monotonic()
        stamp = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
        age = client.get_clock().now().nanoseconds * 1e-9 - stamp
        with lock:
            result.frames_out += 1
            result.output_times.append(now)
            result.ages_s.append(age)
            if result.first_output_s is None:
                result.first_output_s = now - started
                first_output.set()

    def on_diagnostics(msg: DiagnosticArray) -> None:
        status = node_status(msg, NODE_FQN)
        if status is not None:
            result.diagnostics = decode_status(status)[2]

    client.create_subscription(DiagnosticArray, "/diagnostics", on_diagnostics, 10)
    watching: list = []

    def watch_outputs() -> None:
        watching.append(client.create_subscription(Image, output_topic, on_output,
                                                   QoSProfile(depth=10)))
        if subscribe_all:
            # Raw (serialised) subscriptions: the node computes and sends everything, while
            # this process spends no CPU deserialising what it does not look at.
            for topic, msg_type in OTHER_OUTPUTS.items():
                watching.append(client.create_subscription(
                    msg_type, topic, lambda _msg: None, QoSProfile(depth=2), raw=True))

    def unwatch_outputs() -> None:
        while watching:
            client.destroy_subscription(watching.pop())

    watch_outputs()
    spinner = threading.Thread(target=_spin, args=(client, stop), daemon=True)
    spinner.start()
    player = ScenePlayer(client, fps=fps, size=size, encoding=encoding,
                         reliable=reliable).start()
    try:
        deadline = started + start_timeout
        while not first_output.wait(0.5):
            if not node.alive():
                raise RuntimeError(f"node exited with {node.proc.returncode} before its first "
                                   f"output:\n{node.output_tail()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"no output within {start_timeout:.0f} s")
        log(f"first output after {result.first_output_s:.1f} s; measuring for {seconds:.0f} s")
        with lock:  # the measured window starts now
            result.output_times.clear()
            result.ages_s.clear()
            result.frames_out = 0
        frames_at_start = player.frames
        window_start = time.monotonic()

        def sample_rss_until(t_end: float) -> None:
            while time.monotonic() < t_end:
                rss = rss_mb(node.pid)
                if rss is not None:
                    result.rss_mb.append((time.monotonic() - window_start, rss))
                time.sleep(min(1.0, max(0.0, t_end - time.monotonic())))

        for _ in range(rounds if bare else 1):
            part_start, n_before = time.monotonic(), len(result.output_times)
            sample_rss_until(part_start + seconds / (rounds if bare else 1))
            if bare is None:
                break
            times = result.output_times[n_before:]
            result.node_hz_rounds.append((len(times) - 1) / (times[-1] - times[0])
                                         if len(times) > 1 else 0.0)
            unwatch_outputs()
            # Unwatched, the node finishes the frame it is on; wait out one more inference.
            period = 1.0 / result.node_hz_rounds[-1] if result.node_hz_rounds[-1] else 5.0
            _wait_quiet(result.output_times, quiet_s=1.5 * period + 0.5)
            result.bare_ms_rounds.append(bare())
            with lock:
                mark = len(result.output_times)
            watch_outputs()
            deadline = time.monotonic() + 60
            while len(result.output_times) <= mark + 1 and time.monotonic() < deadline:
                time.sleep(0.05)  # the node runs again (its first frame back discarded)
        result.frames_in = player.frames - frames_at_start
    finally:
        player.stop()
        stop.set()
        result.exit_code = node.stop(timeout=10)[0]
        spinner.join(timeout=2)
        client.destroy_node()
        rclpy.shutdown(context=context)
    return result


def _wait_quiet(times: list[float], quiet_s: float, timeout: float = 60.0) -> None:
    """Wait until nothing has been appended to ``times`` for ``quiet_s`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        last = times[-1] if times else 0.0
        if time.monotonic() - last >= quiet_s:
            return
        time.sleep(0.1)


def _spin(node, stop: threading.Event) -> None:
    executor = rclpy.executors.SingleThreadedExecutor(context=node.context)
    executor.add_node(node)
    while not stop.is_set():
        executor.spin_once(timeout_sec=0.1)
    executor.shutdown(timeout_sec=0.5)
