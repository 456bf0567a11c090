# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Depth units through the node over real DDS: relative depth is never published as metres
(metre settings refused at start and at run time), a fixed scale is asserted, and a metric
model ignores the scale source."""

import numpy as np
import pytest

pytest.importorskip("rclpy")

from support.common import DA3_TEST_MODEL, TIPS_TEST_MODEL  # noqa: E402
from support.metric_node import for_header, scene_info  # noqa: E402
from support.metric_node import da3_harness_factory  # noqa: E402,F401 (fixture harness_factory)
from support.node_hooks import OK  # noqa: E402
from tools.common.metric_scene import HEIGHT, WIDTH, paint  # noqa: E402
from tools.common.metric_scene import FORWARD  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402

from dense_perception.core.conversions import image_msg_to_array  # noqa: E402
from dense_perception.ros.node import DensePerceptionNode, StartupError  # noqa: E402

pytestmark = pytest.mark.ros


def test_relative_depth_is_unitless_and_never_metres(harness_factory):
    """depth_scale_source none: 32FC1 relative depth, no points; 16UC1 and max_depth refused
    at start and at run time, saying why and what to set."""
    h = harness_factory({}, subscribe=("depth/image", "points", "/diagnostics"))
    h.wait_matched(("depth/image", "points"))
    header = h.header(sec=40)
    rel = np.full((HEIGHT, WIDTH), 2.5)
    h.publish_frame(paint(rel), header, info=scene_info(FORWARD))
    msg = h.wait_for("depth/image", where=for_header(header))[0]
    assert msg.encoding == "32FC1"
    assert np.abs(image_msg_to_array(msg) - 2.5).max() < 0.002  # unitless, unscaled
    level, message, values = h.diagnostics(lambda d: d[2]["frames processed"] == "1")
    assert values["depth units"] == "relative (unitless; depth_scale_source: none)"
    assert values["model kind"] == "da3" and level == OK
    assert not h.received["points"]
    for name, value, why in [("depth_encoding", "16UC1", "16UC1 means millimetres"),
                             ("max_depth", 5.0, "max_depth is in metres")]:
        result = h.node.set_parameters([Parameter(name, value=value)])[0]
        assert not result.successful and why in result.reason
        assert "set depth_scale_source to fixed" in result.reason


@pytest.mark.parametrize("params,expected", [
    ({"depth_encoding": "16UC1"}, "16UC1 means millimetres, but this model's depth is relative"),
    ({"max_depth": 4.0}, "max_depth is in metres, but this model's depth is relative"),
    ({"depth_scale_source": "ground_plane"}, "needs camera_height"),
])
def test_startup_refuses_metre_settings_for_relative_depth(params, expected):
    import rclpy
    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        overrides = [Parameter(k, value=v) for k, v in
                     {"model_path": DA3_TEST_MODEL, "backend": "cpu", **params}.items()]
        with pytest.raises(StartupError, match=expected):
            DensePerceptionNode(context=context, parameter_overrides=overrides)
    finally:
        rclpy.shutdown(context=context)


def test_fixed_scale_is_asserted_and_metric_models_ignore_an_asserted_one(harness_factory):
    h = harness_factory({"depth_scale_source": "fixed", "relative_depth_scale": 0.5,
                         "depth_encoding": "16UC1", "max_depth": 10.0},
                        subscribe=("depth/image", "points", "/diagnostics"))
    h.wait_matched(("depth/image", "points"))
    header = h.header(sec=50)
    h.publish_frame(paint(np.full((HEIGHT, WIDTH), 3.0)), header, info=scene_info(FORWARD))
    msg = h.wait_for("depth/image", where=for_header(header))[0]
    assert msg.encoding == "16UC1"
    assert np.abs(image_msg_to_array(msg).astype(float) - 1500).max() <= 2
    assert h.wait_for("points", where=for_header(header))
    level, message, values = h.diagnostics(lambda d: d[2]["frames processed"] == "1")
    assert values["depth units"] == "metres (asserted: relative_depth_scale = 0.5 m per unit)"
    tips = harness_factory({"model_path": TIPS_TEST_MODEL, "depth_scale_source": "fixed"},
                           subscribe=("/diagnostics",))
    # Both nodes publish /diagnostics on this domain: take the TIPSv2 node's.
    level, message, values = tips.diagnostics(lambda d: d[2]["model kind"] == "tipsv2")
    assert values["depth units"] == "metres (metric model)"
    assert values["depth scale source"] == "model" and "depth scale age (s)" not in values

