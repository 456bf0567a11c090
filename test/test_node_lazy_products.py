# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Nothing computed that nobody reads: over real DDS, each frame computes only the products
whose topics have a subscriber (the pipeline's own record of what each frame produced, also in
/diagnostics as 'products computed'), and the host figures are in /diagnostics."""

import numpy as np
import pytest

pytest.importorskip("rclpy")

from support.common import TIPS_TEST_MODEL  # noqa: E402
from support.ros_harness import TOPIC_KEYS, camera_info, wait_until  # noqa: E402

pytestmark = [pytest.mark.ros, pytest.mark.timeout(120)]


def test_each_frame_computes_only_what_is_subscribed(harness_factory):
    h = harness_factory({"model_path": TIPS_TEST_MODEL, "points_min_confidence": 0.0},
                        subscribe=("depth/image", "/diagnostics"))
    h.wait_matched(("depth/image",))
    frame = np.zeros((480, 640, 3), np.uint8)
    frame[..., 2] = 200
    info = camera_info(640, 480, fx=520.0)

    def one_frame(sec: int) -> dict[str, str]:
        header = h.header(sec=sec)
        h.publish_frame(frame, header, info=info)
        h.wait_for("depth/image", where=lambda m: m.header.stamp == header.stamp)
        return h.diagnostics(lambda d: d[2]["frames processed"] == str(sec))[2]

    values = one_frame(1)
    assert values["products computed"] == "depth"
    stats = h.perception.pipeline.timer.stats()
    assert "labels_confidence" not in stats  # no pass over the logits at all
    host = float(values["host (ms)"])
    assert host > 0 and float(values["host ceiling (Hz)"]) == pytest.approx(1000 / host, rel=0.01)
    assert int(values["host threads"]) >= 1

    # The cloud: depth is computed for it, its colour too; still no normals, labels or views.
    h.subscribe("points")
    h.wait_matched(("points",))
    values = one_frame(2)
    assert values["products computed"] == "depth, points"

    # The segmentation view: labels (its input) and the view, nothing else new.
    h.subscribe("segmentation/colored")
    h.wait_matched(("segmentation/colored",))
    values = one_frame(3)
    assert values["products computed"] == "depth, labels, labels_colored, points"

    # Unsubscribed again: gone from the next frame.
    h.unsubscribe("points")
    h.unsubscribe("segmentation/colored")
    pubs = [h.perception.channels[0].outputs.pubs[TOPIC_KEYS[t]]
            for t in ("points", "segmentation/colored")]
    wait_until(lambda: all(p.get_subscription_count() == 0 for p in pubs), 10.0,
               "outputs unmatched")
    values = one_frame(4)
    assert values["products computed"] == "depth"
