# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""An added product whose compute step reads a setting (``Product.settings``), as CONTRIBUTING's
"Add an output" describes it: the node publishes it with the value in force, a runtime
``ros2 param set`` reaches it from the next frame on, and ``process`` writes it with the value
of its flag. A name that is no setting is refused in one line."""

import cv2
import numpy as np
import pytest

from dense_perception.core.product_table import IMAGE, Product, register, unregister
from dense_perception.core.settings.table import Settings
from dense_perception.core.wiring.derived import pipeline_config
from support.common import TIPS_TEST_MODEL

pytestmark = pytest.mark.timeout(120)


def _near(products, values):
    """The depth within max_depth (NaN beyond it, and everywhere when it is 0: no limit set)."""
    if products.depth is None or not values["max_depth"] > 0:
        return None
    return np.where(products.depth <= values["max_depth"], products.depth,
                    np.nan).astype(np.float32)


NEAR = Product("depth_near", "depth/near", IMAGE, "depth", "32FC1", "npy", needs=("depth",),
               compute=_near, settings=("max_depth",))


@pytest.fixture
def near_depth():
    register(NEAR)
    yield NEAR
    unregister(NEAR.key)


def _expected(depth: np.ndarray, limit: float) -> np.ndarray:
    """Written out: the depth where it is at most ``limit``, NaN elsewhere."""
    out = depth.astype(np.float32).copy()
    out[~(depth <= limit)] = np.nan
    return out


def _two_depths():
    """A frame with two colours, so two depths of the TIPSv2 stand-in (its depth is a function
    of colour): 0.5 + 2r + g + b/2 = 1.78 m on the left and 2.24 m on the right."""
    image = np.zeros((120, 160, 3), np.uint8)  # BGR for OpenCV
    image[:, :80] = (0, 0, 163)       # r = 0.64: 1.78 m
    image[:, 80:] = (0, 0, 221)       # r = 0.87: 2.23 m
    return image


@pytest.mark.ros
def test_the_node_publishes_it_and_a_runtime_change_reaches_it(near_depth, harness_factory):
    pytest.importorskip("rclpy")
    from rclpy.parameter import Parameter
    from sensor_msgs.msg import Image

    from dense_perception.core.conversions import image_msg_to_array
    from support.ros_harness import camera_info

    h = harness_factory({"model_path": TIPS_TEST_MODEL, "max_depth": 2.0},
                        subscribe=("depth/image",))
    h.subscribe("depth/near", Image)
    h.wait_matched(("depth/image", "depth/near"))
    frame = cv2.cvtColor(_two_depths(), cv2.COLOR_BGR2RGB)
    for sec, limit in ((1, 2.0), (2, 3.0)):
        if sec == 2:
            assert h.node.set_parameters([Parameter("max_depth", value=limit)])[0].successful
        header = h.header(sec=sec)
        h.publish_frame(frame, header, info=camera_info(160, 120))
        same = lambda m, header=header: m.header.stamp == header.stamp  # noqa: E731
        depth = image_msg_to_array(h.wait_for("depth/image", where=same)[0])
        near = image_msg_to_array(h.wait_for("depth/near", where=same)[0])
        finite = depth[np.isfinite(depth)]
        assert finite.min() < 2.0 < finite.max()  # both sides of the first limit are seen
        np.testing.assert_allclose(near, _expected(depth, limit), rtol=1e-6, equal_nan=True)


def test_process_writes_it_with_the_value_of_its_flag(near_depth, tmp_path):
    from dense_perception.offline import cli

    cv2.imwrite(str(tmp_path / "frame.png"), _two_depths())
    for limit in (2.0, 3.0):
        out = tmp_path / f"out{limit:g}"
        assert cli.main(["process", str(tmp_path / "frame.png"), "--model", TIPS_TEST_MODEL,
                         "--backend", "cpu", "--outputs", "depth", "--max-depth", str(limit),
                         "--out", str(out)]) == 0
        depth = np.load(out / "depth" / "frame.npy")
        near = np.load(out / "depth_near" / "frame.npy")
        finite = depth[np.isfinite(depth)]
        assert finite.min() < 2.0 < finite.max()
        np.testing.assert_allclose(near, _expected(depth, limit), rtol=1e-6, equal_nan=True)


def test_a_name_that_is_no_setting_is_refused_in_one_line():
    with pytest.raises(ValueError, match="not setting names"):
        register(Product("odd_reader", "odd/reader", IMAGE, "depth", "32FC1", "npy",
                         compute=_near, settings=("Max-Depth",)))
    register(Product("typo_reader", "typo/reader", IMAGE, "depth", "32FC1", "npy",
                     compute=_near, settings=("max_dpeth",)))
    try:
        with pytest.raises(ValueError) as refused:
            pipeline_config(Settings())
        assert "\n" not in str(refused.value)
        assert "typo_reader read max_dpeth, which no setting is called" in str(refused.value)
    finally:
        unregister("typo_reader")
