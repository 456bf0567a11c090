# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""A stall looks like a stall: /diagnostics go WARN, then ERROR, when frames keep arriving but
nothing is published for 5, then 20, frame times (a frame time counted as at least 0.2 s), on
any backend; here the CPU (the GPU's hung worker: test_gpu_node_process.py)."""

import threading
import time

import numpy as np
import pytest

pytest.importorskip("rclpy")

from support.common import DA3_TEST_MODEL  # noqa: E402
from dense_perception.ros.diagnostics import FrameStats, health  # noqa: E402

pytestmark = [pytest.mark.ros]
OK, WARN, ERROR = 0, 1, 2


def level_of(stats, frame_ms, now, expected_frame_ms=None):
    level, message = health(stats, frame_ms, now=now, expected_frame_ms=expected_frame_ms)
    return int.from_bytes(level, "little") if isinstance(level, bytes) else int(level), message


@pytest.mark.timeout(30)
def test_stall_levels_follow_frame_times_of_arriving_frames():
    stats = FrameStats()
    stats.record_success(0.01)
    stats.frame_arrived(100.0)
    # One frame in progress, none after it: slow, or the camera stopped; no stall.
    assert level_of(stats, 50.0, now=110.0)[0] == OK
    stats.frame_arrived(100.05)  # frames keep arriving
    # A 50 ms frame counts as 0.2 s: WARN after 5 x 0.2 = 1 s, ERROR after 20 x 0.2 = 4 s.
    assert level_of(stats, 50.0, now=100.99)[0] == OK
    level, message = level_of(stats, 50.0, now=101.01)
    assert level == WARN
    assert message == "stalled: no output for 1.0 s while frames arrive (5 frame times of 200 ms)"
    assert level_of(stats, 50.0, now=103.99)[0] == WARN
    assert level_of(stats, 50.0, now=104.01)[0] == ERROR
    # A 500 ms model: 2.5 s and 10 s.
    assert level_of(stats, 500.0, now=102.49)[0] == OK
    assert level_of(stats, 500.0, now=102.51)[0] == WARN
    assert level_of(stats, 500.0, now=110.01)[0] == ERROR
    stats.record_success(0.01)  # an output: over
    assert level_of(stats, 50.0, now=200.0)[0] == OK

    # Before any frame is timed, the warm-up stands for the frame time.
    fresh = FrameStats()
    fresh.frame_arrived(0.0)
    fresh.frame_arrived(0.1)
    assert level_of(fresh, 0.0, now=4.9, expected_frame_ms=1000.0)[0] == OK
    assert level_of(fresh, 0.0, now=5.1, expected_frame_ms=1000.0)[0] == WARN
    # A bad frame or one nobody listens to ends the wait: no output is due for it.
    fresh.end_wait()
    assert level_of(fresh, 0.0, now=30.0, expected_frame_ms=1000.0)[0] == OK


@pytest.mark.timeout(30)
def test_falling_behind_is_three_old_outputs_in_a_row_not_one():
    """A 36 ms frame: an output older than 2 x 36 + 100 = 172 ms is old. One old output (the
    first frame on a busy host) keeps the level OK; three in a row are WARN; a fresh one ends it."""
    stats = FrameStats()
    stats.record_success(1.37)
    assert level_of(stats, 36.0, now=0.0)[0] == OK
    stats.record_success(0.05)
    stats.record_success(0.2)
    stats.record_success(0.3)
    assert level_of(stats, 36.0, now=0.0)[0] == OK     # 0.05 s among the last three
    stats.record_success(0.18)
    level, message = level_of(stats, 36.0, now=0.0)
    assert level == WARN
    assert message == "falling behind: outputs are 0.18 s old, a frame takes 36 ms"
    stats.record_success(0.17)
    assert level_of(stats, 36.0, now=0.0)[0] == OK


@pytest.mark.timeout(30)
def test_several_cameras_wait_their_turn_before_a_stall():
    """Eight cameras taking turns on a 300 ms model: a camera's frame time is 8 x 300 ms, so
    it warns after 5 x 2.4 s = 12 s and errs after 20 x 2.4 s = 48 s with no output, not
    after the model's 1.5 s and 6 s."""
    stats = FrameStats()
    stats.record_success(0.01)
    stats.frame_arrived(100.0)
    stats.frame_arrived(100.2)

    def level(now, turns):
        level, message = health(stats, 300.0, now=now, turns=turns)
        return (int.from_bytes(level, "little") if isinstance(level, bytes) else int(level),
                message)
    assert level(101.6, 1)[0] == WARN  # one camera: 5 model frame times
    assert level(111.9, 8)[0] == OK  # waiting its turn
    assert level(112.1, 8) == (WARN, "stalled: no output for 12.1 s while frames arrive (5 "
                                     "frame times of 2400 ms: 8 cameras take turns)")
    assert level(147.9, 8)[0] == WARN
    assert level(148.1, 8)[0] == ERROR


class GatedRunner:
    """The node's runner behind a gate: while the gate is closed an inference blocks until it
    opens. The inference thread really stops, as behind a model or driver that hangs: an
    in-process node cannot be SIGSTOPped apart from the test, and a model that is slow on
    every frame is slow, not stalled (its frame time grows with it)."""

    def __init__(self, inner):
        self.inner = inner
        self.open, self.blocked = threading.Event(), threading.Event()
        self.open.set()

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def run(self):
        if not self.open.is_set():
            self.blocked.set()
            self.open.wait()
        return self.inner.run()


@pytest.mark.timeout(90)
def test_a_stalled_inference_goes_warn_then_error_then_recovers():
    from sensor_msgs.msg import Image
    from support.ros_harness import Harness

    gates = []
    h = Harness({"model_path": DA3_TEST_MODEL, "diagnostics_period": 0.1},
                runner_hook=lambda r: gates.append(GatedRunner(r)) or gates[0],
                subscribe=("depth/image", "/diagnostics"))
    outputs = []  # client receive times of depth/image: the test's own clock
    h.client.create_subscription(Image, "depth/image",
                                 lambda _: outputs.append(time.monotonic()), 10)
    try:
        gate = gates[0]
        h.wait_matched(("depth/image",))
        h.player.start(np.zeros((48, 64, 3), np.uint8), fps=20)
        level, message, _ = h.diagnostics(
            lambda d: int(d[2]["frames processed"]) >= 3 and d[0] == OK, timeout=30)
        assert message == "running"

        gate.open.clear()
        assert gate.blocked.wait(10), "no inference started"
        level, message, values = h.diagnostics(lambda d: d[1].startswith("stalled"), timeout=20)
        seen = time.monotonic()
        stalled_s = float(values["no output for (s)"])
        frame_s = float(message.split(" frame times of ")[1].split(" ms")[0]) / 1000
        assert level == WARN, message
        assert frame_s >= 0.2 and stalled_s >= 5 * frame_s
        # Not more than the test saw: since the last output reached the client (+ latency).
        assert stalled_s <= seen - outputs[-1] + 0.2
        level, message, values = h.diagnostics(lambda d: d[0] == ERROR, timeout=20)
        assert message.startswith("stalled: no output for")
        assert float(values["no output for (s)"]) >= 20 * frame_s
        assert time.monotonic() - outputs[-1] >= 20 * frame_s - 0.2

        gate.open.set()  # the model answers again: outputs resume, the stall is over
        count = len(outputs)
        h.wait_until(lambda: len(outputs) > count, 10, "outputs resume")
        level, message, _ = h.diagnostics(lambda d: d[0] == OK, timeout=10)
        assert message == "running"
    finally:
        if gates:
            gates[0].open.set()
        h.player.stop()
        h.close()
