# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""An added product (core/product_table.py's ``register``) whose value is wrong on a frame (not
its encoding's element type, not on the published grid) or whose compute step raises is left
out of that frame with one line naming it and why, in ``process`` (stderr, once; summary.json
counts the frames; exit 0, but exit 2 when it was made on no frame at all) and in the node over DDS (one throttled WARN on /rosout); the
frame's other products, an added one after it included, still go out."""

import json

import cv2
import numpy as np
import pytest

from dense_perception.core.product_table import IMAGE, Product, register, unregister
from support.common import TIPS_TEST_MODEL, run_cli

pytestmark = pytest.mark.timeout(120)


def _raise(products):
    raise RuntimeError("the plugin's model is not loaded\nsecond line")


# Each faulty row, and the words its one line must hold.
FAULTS = {
    # float32 metres declared mono8: a PNG holding 0-3 before
    "mono8_metres": (Product("depth_mono", "depth/mono", IMAGE, "depth", "mono8", "png",
                             needs=("depth",), compute=lambda p: p.depth),
                     ("float32", "is not mono8")),
    "tiny": (Product("depth_tiny", "depth/tiny", IMAGE, "depth", "32FC1", "npy",
                     compute=lambda p: np.zeros((3, 3), np.float32)),
             ("3x3", "not on the published", "grid")),
    "raises": (Product("depth_broken", "depth/broken", IMAGE, "depth", "32FC1", "npy",
                       compute=_raise),
               ("RuntimeError: the plugin's model is not loaded",)),
}
# A good row registered after the faulty one: half the depth.
HALF = Product("depth_half", "depth/half", IMAGE, "depth", "32FC1", "npy", needs=("depth",),
               compute=lambda p: None if p.depth is None else p.depth * np.float32(0.5))


@pytest.fixture(params=sorted(FAULTS))
def faulty(request):
    row, words = FAULTS[request.param]
    register(row)
    try:
        register(HALF)
        yield row, words
        unregister(HALF.key)
    finally:
        unregister(row.key)


def _half(depth):
    return (depth.astype(np.float64) * 0.5).astype(np.float32)


def _two_frames(folder):
    folder.mkdir()
    for index, colour in enumerate([(40, 120, 200), (200, 60, 30)]):
        image = np.zeros((120, 160, 3), np.uint8)
        image[:, :80], image[:, 80:] = colour, (90, 90, 90)
        cv2.imwrite(str(folder / f"frame_{index}.png"), image)
    return folder


def test_process_leaves_out_a_faulty_product_and_says_so_once(faulty, tmp_path, capsys):
    row, words = faulty
    frames = _two_frames(tmp_path / "frames")
    out = tmp_path / "out"
    code, stdout, stderr = run_cli(["process", frames, "--model", TIPS_TEST_MODEL, "--backend",
                                    "cpu", "--outputs", "depth", "--out", out], capsys)
    # made on no frame: the run failed, in one closing line, and wrote what it could
    assert code == 2, stderr
    assert "Traceback" not in stderr
    closing = stderr.strip().splitlines()[-1]
    assert f"product '{row.key}' was left out of all 2 frames" in closing
    assert all(word in closing for word in words) and str(out) in closing
    lines = [line for line in stderr.splitlines()[:-1] if row.key in line]
    assert len(lines) == 1, stderr  # two frames, one warning line
    assert lines[0].startswith("dense-perception: warning:") and "second line" not in lines[0]
    assert all(word in lines[0] for word in words), lines[0]
    assert list((out / row.key).iterdir()) == []  # nothing written for it
    for index in range(2):  # the frame's other products: depth, and the added one after it
        depth = np.load(out / "depth" / f"frame_{index}.npy")
        assert np.isfinite(depth).sum() > 1000
        np.testing.assert_allclose(np.load(out / "depth_half" / f"frame_{index}.npy"),
                                   _half(depth), rtol=1e-6, equal_nan=True)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["frames"] == 2 and summary["skipped_products"] == {row.key: 2}
    assert summary["files"][row.key] == 0 and summary["files"]["depth_half"] == 2
    (reason, count), = summary["skip_reasons"].items()
    assert count == 2 and reason.startswith(f"{row.key}: ") and words[0] in reason
    assert f"{row.key} left out of 2" in stdout


def test_a_product_missing_from_some_frames_only_is_a_warning_and_exit_0(tmp_path, capsys):
    calls = []

    def first_frame_fails(products):
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("warming up")
        return products.depth * np.float32(2)
    register(Product("depth_late", "depth/late", IMAGE, "depth", "32FC1", "npy",
                     needs=("depth",), compute=first_frame_fails))
    try:
        out = tmp_path / "out"
        code, stdout, stderr = run_cli(["process", _two_frames(tmp_path / "frames"), "--model",
                                        TIPS_TEST_MODEL, "--backend", "cpu", "--outputs", "depth",
                                        "--out", out], capsys)
    finally:
        unregister("depth_late")
    assert code == 0, stderr
    assert "depth_late left out of 1" in stdout and "was left out of all" not in stderr
    assert len(list((out / "depth_late").iterdir())) == 1


@pytest.mark.ros
def test_the_node_leaves_out_a_faulty_product_with_one_throttled_warning(faulty,
                                                                          harness_factory):
    pytest.importorskip("rclpy")
    from rcl_interfaces.msg import Log
    from sensor_msgs.msg import Image

    from dense_perception.core.conversions import image_msg_to_array
    from support.ros_harness import camera_info, wait_until

    row, words = faulty
    bad_topic, half_topic = row.topic, HALF.topic
    h = harness_factory({"model_path": TIPS_TEST_MODEL}, subscribe=("depth/image",))
    h.subscribe("/rosout", Log, transient=True)
    for topic in (bad_topic, half_topic):
        h.subscribe(topic, Image)
    h.wait_matched(("depth/image",))
    pubs = h.perception.channels[0].outputs.pubs
    wait_until(lambda: all(pubs[key].get_subscription_count() > 0
                           for key in (row.key, HALF.key)), 10, "the added outputs matched")

    def ours():
        return [m.msg for m in h.received["/rosout"]
                if m.name.endswith("dense_perception") and f"'{row.key}'" in m.msg]

    for sec in (1, 2):  # two frames, well within one throttle period
        frame = np.zeros((480, 640, 3), np.uint8)
        frame[..., 0], frame[240:, :, 1] = 90, 40 + 60 * sec
        header = h.header(sec=sec)
        h.publish_frame(frame, header, info=camera_info(640, 480))
        same = lambda m: m.header.stamp == header.stamp  # noqa: E731
        depth_msg, = h.wait_for("depth/image", where=same)
        half_msg, = h.wait_for(half_topic, where=same)
        depth = image_msg_to_array(depth_msg)
        assert np.isfinite(depth).sum() > 1000
        np.testing.assert_allclose(image_msg_to_array(half_msg), _half(depth), rtol=1e-6,
                                   equal_nan=True)
        wait_until(lambda: len(ours()) >= 1, 10, f"a WARN naming {row.key}")
    line, = ours()  # the second frame's fault was throttled
    assert all(word in line for word in words) and f"({bad_topic})" in line, line
    assert "Traceback" not in line and "second line" not in line
    assert len(h.received[bad_topic]) == 0
