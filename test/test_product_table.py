# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""A product is declared once, in the products table (core/product_table.py): a row added while
running, with its compute step, is published by the node over DDS and written by ``process``
with no other code; and every built-in row's topic and message type are in docs/topics.md."""

import re

import cv2
import numpy as np
import pytest

from dense_perception.core.product_table import IMAGE, PRODUCTS, Product, register, unregister
from support.common import REPO, TIPS_TEST_MODEL

pytestmark = pytest.mark.timeout(120)

# A throwaway product: inverse depth (1 / metres), a float32 image beside depth/image.
INVERSE = Product("depth_inverse", "depth/inverse", IMAGE, "depth", "32FC1", "npy",
                  needs=("depth",),
                  compute=lambda products: None if products.depth is None
                  else np.float32(1.0) / products.depth)


@pytest.fixture
def inverse_depth():
    register(INVERSE)
    yield INVERSE
    unregister(INVERSE.key)


def _expected_inverse(depth: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return (1.0 / depth.astype(np.float64)).astype(np.float32)


@pytest.mark.ros
def test_a_registered_product_is_published_by_the_node(inverse_depth, harness_factory):
    pytest.importorskip("rclpy")
    from sensor_msgs.msg import Image

    from dense_perception.core.conversions import image_msg_to_array
    from support.ros_harness import camera_info

    h = harness_factory({"model_path": TIPS_TEST_MODEL}, subscribe=("depth/image",))
    h.subscribe("depth/inverse", Image)
    h.wait_matched(("depth/image", "depth/inverse"))
    frame = np.zeros((480, 640, 3), np.uint8)
    frame[..., 0], frame[240:, :, 1] = 90, 160  # two depths: the test model's depth is colour
    header = h.header(sec=1)
    h.publish_frame(frame, header, info=camera_info(640, 480))
    same = lambda m: m.header.stamp == header.stamp  # noqa: E731
    depth_msg, = h.wait_for("depth/image", where=same)
    inverse_msg, = h.wait_for("depth/inverse", where=same)
    assert inverse_msg.encoding == "32FC1"
    assert inverse_msg.header.frame_id == depth_msg.header.frame_id
    depth, inverse = image_msg_to_array(depth_msg), image_msg_to_array(inverse_msg)
    assert np.isfinite(depth).sum() > 1000 and len(np.unique(depth[np.isfinite(depth)])) > 1
    np.testing.assert_allclose(inverse, _expected_inverse(depth), rtol=1e-6, equal_nan=True)


def test_a_registered_product_is_written_by_process(inverse_depth, tmp_path):
    from dense_perception.offline import cli

    image = np.zeros((120, 160, 3), np.uint8)
    image[:, :80] = (40, 120, 200)
    image[:, 80:] = (200, 60, 30)
    cv2.imwrite(str(tmp_path / "frame.png"), image)
    out = tmp_path / "out"
    assert cli.main(["process", str(tmp_path / "frame.png"), "--model", TIPS_TEST_MODEL,
                     "--backend", "cpu", "--outputs", "depth", "--out", str(out)]) == 0
    depth = np.load(out / "depth" / "frame.npy")
    inverse = np.load(out / "depth_inverse" / "frame.npy")
    assert inverse.dtype == np.float32 and inverse.shape == depth.shape
    assert np.isfinite(depth).sum() > 1000
    np.testing.assert_allclose(inverse, _expected_inverse(depth), rtol=1e-6, equal_nan=True)


def test_a_row_is_refused_when_it_cannot_work():
    with pytest.raises(ValueError, match="exists already"):
        register(Product("depth", "other/topic", IMAGE, "depth", "32FC1", "npy",
                         compute=lambda p: None))
    with pytest.raises(ValueError, match="compute step"):
        register(Product("made_nowhere", "made/nowhere", IMAGE, "depth", "32FC1", "npy"))
    with pytest.raises(ValueError, match="unknown group"):
        register(Product("odd", "odd/image", IMAGE, "no_such_group", compute=lambda p: None))
    assert "made_nowhere" not in PRODUCTS and "odd" not in PRODUCTS


def test_every_built_in_row_is_in_the_topics_page():
    """docs/topics.md's table has a row for each product's topic with its message type."""
    text = (REPO / "docs" / "topics.md").read_text()
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    for product in PRODUCTS.values():
        package, _, name = product.message.split("/")
        pattern = re.compile(rf"`{re.escape(product.topic)}`.*\| `{package}/{name}` \|")
        assert any(pattern.search(row) for row in rows), \
            f"docs/topics.md has no row for {product.topic} ({package}/{name})"
