# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The node over real DDS publishes segmentation/confidence (TIPSv2), only while subscribed."""

import numpy as np
import pytest

pytest.importorskip("rclpy")

from support.common import TIPS_TEST_MODEL  # noqa: E402
from support.model_truth import tips_seg_confidence_of  # noqa: E402
from support.ros_harness import Harness, camera_info  # noqa: E402

from dense_perception.core.conversions import image_msg_to_array  # noqa: E402

pytestmark = [pytest.mark.ros, pytest.mark.timeout(90)]


@pytest.fixture
def harness():
    made = []

    def make(params, **kwargs):
        made.append(Harness(params, **kwargs))
        return made[-1]
    yield make
    for h in made:
        h.close()


def test_confidence_published_only_while_subscribed(harness):
    h = harness({"model_path": TIPS_TEST_MODEL},
                subscribe=("segmentation/labels", "/diagnostics"))
    h.wait_matched(("segmentation/labels",))
    frame = np.zeros((480, 640, 3), np.uint8)
    frame[..., 2] = 200  # rgb8: blue 200 -> label 117, confidence from the model's softmax
    info = camera_info(640, 480, fx=520.0)

    # Labels listened to, confidence not: not computed (no sample in its timer stage, none
    # in /diagnostics) and not published.
    first = h.header(sec=10)
    h.publish_frame(frame, first, info=info)
    h.wait_for("segmentation/labels", where=lambda m: m.header.stamp == first.stamp)
    _, _, values = h.diagnostics(lambda d: d[2]["frames processed"] == "1")
    assert values["labels_confidence mean (ms)"] == "-"
    assert "labels_confidence" not in h.perception.pipeline.timer.stats()

    h.subscribe("segmentation/confidence")
    h.wait_matched(("segmentation/confidence",))
    second = h.header(sec=11)
    h.publish_frame(frame, second, info=info)
    msg = h.wait_for("segmentation/confidence")[0]
    assert msg.header.stamp == second.stamp and msg.header.frame_id == second.frame_id
    assert msg.encoding == "mono8" and (msg.width, msg.height) == (448, 448)  # labels' grid
    labels = h.wait_for("segmentation/labels", where=lambda m: m.header.stamp == second.stamp)[0]
    assert (labels.width, labels.height) == (msg.width, msg.height)
    conf = image_msg_to_array(msg).astype(int)
    assert np.abs(conf - int(tips_seg_confidence_of(200))).max() <= 1
    assert h.perception.pipeline.timer.stats()["labels_confidence"].count == 1
    _, _, values = h.diagnostics(lambda d: d[2]["frames processed"] == "2")
    assert float(values["labels_confidence mean (ms)"]) > 0
