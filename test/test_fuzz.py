# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Fuzzed input over real DDS: 500+ malformed and unusual messages mixed with good ones.

The node must stay alive, account for every message (processed or rejected, one by one),
keep publishing for good frames, and not grow in memory. The camera publishes reliably and
each message is sent once the node has handled the one before, so every count is exact.
"""

import os

import numpy as np
import pytest

pytest.importorskip("rclpy")

from support.common import DA3_TEST_MODEL  # noqa: E402
from support.ros_harness import Harness, camera_info, wait_until  # noqa: E402

from tools.bench.loadgen import rss_mb  # noqa: E402
from sensor_msgs.msg import Image  # noqa: E402

pytestmark = [pytest.mark.ros, pytest.mark.slow, pytest.mark.timeout(240)]

# sensor_msgs/image_encodings.hpp, with bytes per pixel.
ENCODINGS = {
    "rgb8": 3, "rgba8": 4, "rgb16": 6, "rgba16": 8, "bgr8": 3, "bgra8": 4, "bgr16": 6,
    "bgra16": 8, "mono8": 1, "mono16": 2,
    **{f"{depth}C{n}": size * n for depth, size in
       [("8U", 1), ("8S", 1), ("16U", 2), ("16S", 2), ("32S", 4), ("32F", 4), ("64F", 8)]
       for n in (1, 2, 3, 4)},
    **{f"bayer_{p}{bits}": bits // 8 for p in ("rggb", "bggr", "gbrg", "grbg") for bits in (8, 16)},
    "yuv422": 2, "UYVY": 2, "YUYV": 2, "yuv422_yuy2": 2, "nv21": 2, "nv24": 2,
}
SUPPORTED = {"rgb8", "bgr8", "rgba8", "bgra8", "mono8"}


def image(width, height, encoding, data=None, step=None, bigendian=0):
    bpp = ENCODINGS.get(encoding, 3)
    msg = Image(width=width, height=height, encoding=encoding, is_bigendian=bigendian)
    msg.step = width * bpp if step is None else step
    msg.data = bytes(msg.step * height) if data is None else data
    return msg


def fuzz_messages(rng):
    """(message, expected outcome) pairs: 'ok' or 'bad'."""
    msgs = []
    for encoding, bpp in ENCODINGS.items():
        data = rng.integers(0, 256, 32 * 24 * bpp, dtype=np.uint8).tobytes()
        msgs.append((image(32, 24, encoding, data), "ok" if encoding in SUPPORTED else "bad"))
    nan_image = np.full((24, 32), np.nan, np.float32)
    nan_image[::2] = np.inf
    msgs += [
        (image(32, 24, "rgb8", step=80), "bad"),                          # step too small
        (image(32, 24, "rgb8", step=100, data=bytes(100 * 24)), "ok"),    # padded rows
        (image(32, 24, "rgb8", data=bytes(32 * 3 * 24 - 7)), "bad"),      # data too short
        (image(32, 24, "rgb8", data=bytes(32 * 3 * 24 + 7)), "bad"),      # data too long
        (image(0, 24, "rgb8"), "bad"), (image(32, 0, "rgb8"), "bad"),
        (image(1, 1, "rgb8", data=b"\x10\x20\x30"), "ok"),
        (image(32, 24, "mono16", bigendian=1), "bad"),
        (image(32, 24, "32FC1", data=nan_image.tobytes()), "bad"),
        (image(32, 24, "", data=bytes(32 * 3 * 24)), "bad"),
    ]
    return msgs


def own_rss_mb():
    return rss_mb(os.getpid())


def test_fuzzed_stream_over_dds():
    rng = np.random.default_rng(0)
    h = Harness({"model_path": DA3_TEST_MODEL, "points_stride": 8,
                 "depth_scale_source": "fixed"},  # metres asserted, so points are made
                subscribe=("depth/image", "points"), keep=3, reliable=True)
    try:
        h.wait_matched(("depth/image", "points"))
        p = h.perception
        camera = p.channels[0]  # the single default camera
        stats = camera.stats

        def handled():
            return stats.processed + stats.rejected + stats.failed + stats.idle \
                + p.frames_dropped
        # One huge frame first, so the memory baseline below includes its buffers.
        huge = image(8000, 6000, "rgb8")
        bad_infos = [camera_info(32, 24, fx=0.0), camera_info(32, 24, fx=-300.0),
                     camera_info(640, 480), None]
        plan = [(huge, "ok")]
        templates = fuzz_messages(rng)
        while len(plan) < 520:
            plan += [templates[i] for i in rng.permutation(len(templates))]
            plan += [(image(64, 48, "rgb8",
                            rng.integers(0, 256, 64 * 48 * 3, dtype=np.uint8).tobytes()), "ok")]
        sent = {"ok": 0, "bad": 0}
        baseline = None
        for i, (msg, outcome) in enumerate(plan):
            msg.header = h.header(sec=1000 + i)
            info = bad_infos[i % len(bad_infos)]
            if info is not None:
                info.header = msg.header
                h.info_pub.publish(info)
            h.image_pub.publish(msg)
            sent[outcome] += 1
            # The event itself: this message received and handled, before the next is sent.
            wait_until(lambda n=i + 1: camera.in_rate.total == n and handled() == n, 30,
                       f"message {i} handled")
            if i == 100:
                baseline = own_rss_mb()
        final = h.header(sec=5000)
        h.publish_frame(np.zeros((48, 64, 3), np.uint8), final)
        assert h.wait_for("depth/image", where=lambda m: m.header.stamp == final.stamp,
                          timeout=30)
        # (a frame is counted once its outputs are out: wait for the count, not just the output)
        wait_until(lambda: handled() == len(plan) + 1, 10, "the final frame counted")
        print(f"fuzz: sent {len(plan) + 1} ({sent['ok'] + 1} good, {sent['bad']} bad); "
              f"processed {stats.processed}, rejected {stats.rejected}; RSS {baseline:.0f} -> "
              f"{own_rss_mb():.0f} MB")
        assert stats.rejected == sent["bad"]
        assert stats.processed == sent["ok"] + 1
        assert stats.failed == 0 and p.frames_dropped == 0  # bad input is refused, never a failure
        assert own_rss_mb() < baseline * 1.10 + 10
        assert h.node.context.ok() and p.stages.alive()
    finally:
        h.close()
