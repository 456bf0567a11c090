# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The node over real DDS under load and faults: newest frame wins, bad frames and failed
inferences are skipped and the node lives on, a missing GPU is reported."""

import time

import numpy as np
import pytest

pytest.importorskip("rclpy")

from support.common import DA3_TEST_MODEL, TIPS_TEST_MODEL, hardware_gpu  # noqa: E402
from support.node_hooks import ERROR, OK, WARN, HookedRunner  # noqa: E402
from support.ros_harness import camera_info, wait_until  # noqa: E402
from sensor_msgs.msg import Image  # noqa: E402

pytestmark = [pytest.mark.ros, pytest.mark.timeout(90)]


def test_newest_frame_wins_without_backlog(harness_factory):
    hooks = []

    def slow(runner):
        hooks.append(HookedRunner(runner, delay=0.4))
        return hooks[0]
    h = harness_factory({"model_path": DA3_TEST_MODEL}, runner_hook=slow,
                        subscribe=("depth/image",))
    h.wait_matched(("depth/image",))
    p = h.perception
    camera = p.channels[0]  # the single default camera
    started = time.monotonic()
    h.player.start(np.zeros((480, 640, 3), np.uint8), fps=30)  # a 30 fps camera
    wait_until(lambda: camera.in_rate.total >= 30, 20, "30 frames received")
    h.player.stop()
    elapsed = time.monotonic() - started
    last = h.player.last_header
    # No backlog: the output of the last frame played (or of one just before it, if DDS lost
    # it) comes about one inference later, not 30 inferences later.
    newest = h.wait_for("depth/image", where=lambda m: m.header.stamp.sec == last.stamp.sec
                        and abs(m.header.stamp.nanosec - last.stamp.nanosec) < 2e8, timeout=5)
    assert newest
    stats = camera.stats

    def accounted():
        return stats.processed + stats.rejected + stats.failed + stats.idle \
            + p.frames_dropped == camera.in_rate.total
    wait_until(accounted, 5, "every received frame processed or dropped")
    h.wait_for("depth/image", count=stats.processed)  # every published output arrives
    outputs = len(h.received["depth/image"])
    assert hooks[0].runs == stats.processed == outputs  # one output per inference
    assert outputs <= (time.monotonic() - started) / 0.4 + 1  # not one per frame
    assert p.frames_dropped == camera.in_rate.total - outputs >= 30 - elapsed / 0.4 - 2


def bad_image(**fields):
    msg = Image()
    msg.height, msg.width, msg.encoding, msg.step = 4, 4, "rgb8", 12
    msg.data = bytes(48)
    for k, v in fields.items():
        setattr(msg, k, v)
    return msg


def test_bad_frames_are_skipped_and_the_node_lives_on(harness_factory):
    h = harness_factory({"model_path": TIPS_TEST_MODEL}, subscribe=("depth/image",),
                        reliable=True)
    h.wait_matched(("depth/image",))
    bad = [bad_image(encoding="yuv422"), bad_image(step=5), bad_image(data=bytes(10)),
           bad_image(width=0, step=0, data=b""), bad_image(encoding="16UC1", step=8, data=bytes(32))]
    for i, msg in enumerate(bad, 1):
        msg.header = h.header()
        h.image_pub.publish(msg)
        # One at a time (the slot keeps only the newest): wait until this one is refused.
        wait_until(lambda i=i: h.perception.channels[0].stats.rejected == i, 10,
                   f"bad frame {i} refused")
    good = h.header()
    h.publish_frame(np.zeros((48, 64, 3), np.uint8), good)
    assert h.wait_for("depth/image", where=lambda m: m.header.stamp == good.stamp)
    assert h.perception.channels[0].stats.failed == 0


def test_invoke_failure_mid_run_recovers(harness_factory):
    hooks = []
    h = harness_factory({"model_path": TIPS_TEST_MODEL},
                        runner_hook=lambda r: hooks.append(HookedRunner(r)) or hooks[0],
                        subscribe=("depth/image", "/diagnostics"), reliable=True)
    h.wait_matched(("depth/image",))
    info = camera_info(64, 48)
    hooks[0].fail = True
    for i in range(1, 4):
        h.publish_frame(np.zeros((48, 64, 3), np.uint8), h.header(), info=info)
        wait_until(lambda i=i: h.perception.channels[0].stats.failed == i, 10,
                   f"frame {i} failed")
    level, message, values = h.diagnostics(lambda d: d[0] == ERROR)
    assert "injected invoke failure" in message and values["frames failed"] == "3"
    hooks[0].fail = False
    good = h.header()
    h.publish_frame(np.zeros((48, 64, 3), np.uint8), good, info=info)
    h.wait_for("depth/image", where=lambda m: m.header.stamp == good.stamp)
    assert h.diagnostics(lambda d: d[0] == OK)


def test_auto_backend_without_gpu_is_ok_and_says_what_it_chose(harness_factory):
    if hardware_gpu():  # no GPU, or only a CPU emulation (lavapipe) that 'auto' refuses
        pytest.skip("this machine has a GPU adapter that 'auto' uses")
    h = harness_factory({"model_path": DA3_TEST_MODEL, "backend": "auto"},
                        subscribe=("depth/image", "/diagnostics"))
    h.wait_matched(("depth/image",))
    h.publish_frame(np.zeros((48, 64, 3), np.uint8), h.header(), info=camera_info(64, 48))
    h.wait_for("depth/image")
    level, message, values = h.diagnostics(lambda d: d[2]["frames processed"] == "1")
    assert level == OK and message == "running"  # a CPU-only machine is well on 'auto'
    assert "GPU unavailable" in values["backend note"]  # what it chose, and why
    assert "fell back to CPU" in values["backend note"]
    assert values["backend"].startswith("cpu")

