# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The node at start, over real rclpy: a setting it was given that does nothing with its model
(the one relevance rule, core/wiring/relevance.py) is one WARN on /rosout each and is listed
in /diagnostics; a node given none says nothing of it."""

import pytest

pytest.importorskip("rclpy")

from rcl_interfaces.msg import Log  # noqa: E402
from support.common import DA3_TEST_MODEL, TIPS_TEST_MODEL  # noqa: E402
from support.ros_harness import wait_until  # noqa: E402

pytestmark = [pytest.mark.ros, pytest.mark.timeout(120)]
WARN = 30  # rcl_interfaces/Log.WARN


def warnings(h, count, timeout=20.0):
    """The node's WARN lines on /rosout (transient local: those written before we listened)."""
    def ours():
        return [m.msg for m in h.received["/rosout"]
                if m.level == WARN and m.name.endswith("dense_perception")]
    wait_until(lambda: len(ours()) >= count, timeout, f"{count} WARN lines on /rosout")
    return ours()


def test_tipsv2_given_relative_depth_settings_warns_each_and_lists_them(harness_factory):
    h = harness_factory({"model_path": TIPS_TEST_MODEL, "relative_depth_scale": 2.0,
                         "input_normalization": "imagenet", "depth_output": 0,
                         "depth_scale_source": "fixed"}, subscribe=("/diagnostics",))
    h.subscribe("/rosout", Log, transient=True)
    lines = warnings(h, 4)
    for name in ("relative_depth_scale", "input_normalization", "depth_output",
                 "depth_scale_source"):
        (line,) = [w for w in lines if w.startswith(f"{name} has no effect")]
        assert "it is ignored" in line
    level, message, values = h.diagnostics(lambda s: s[2].get("ignored settings", "-") != "-")
    assert level == 1 and "settings ignored here" in message, (level, message)  # WARN
    for name in ("relative_depth_scale", "input_normalization", "depth_output",
                 "depth_scale_source"):
        assert f"{name} has no effect" in values["ignored settings"]


def test_camera_height_beside_camera_heights_is_a_warning(harness_factory):
    h = harness_factory({"model_path": DA3_TEST_MODEL, "model_type": "da3",
                         "cameras": ["front", "rear"], "depth_scale_source": "ground_plane",
                         "camera_heights": [1.2, 1.2], "camera_height": 0.5},
                        subscribe=("/diagnostics",))
    h.subscribe("/rosout", Log, transient=True)
    (line,) = [w for w in warnings(h, 1) if w.startswith("camera_height ")]
    assert "while camera_heights is set ([1.2, 1.2])" in line


def test_a_node_given_only_what_acts_says_nothing_of_it(harness_factory):
    h = harness_factory({"model_path": DA3_TEST_MODEL, "model_type": "da3",
                         "depth_scale_source": "fixed", "relative_depth_scale": 2.0},
                        subscribe=("/diagnostics",))
    _, _, values = h.diagnostics()
    assert values["ignored settings"] == "-"
    assert h.perception.channels[0].stats.ignored_settings == ()
