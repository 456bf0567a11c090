# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""segmentation/confidence: the top class's softmax probability x 255, checked against a softmax
written out here and against the TIPSv2 test model's known logits (model_truth), through the
pipeline and the offline command."""

import cv2
import numpy as np
import pytest

from support.common import TIPS_TEST_MODEL, run_cli
from support.model_truth import tips_seg_confidence_of
from dense_perception.core import postprocess as post
from dense_perception.core.pipeline import load_pipeline
from dense_perception.core.frame_data import PipelineConfig, Request
from dense_perception.core.settings.table import Settings

pytestmark = pytest.mark.timeout(60)


def softmax_top(logits):
    """Float64 softmax over axis 0 of C x H x W logits, shifted by the max; the top probability."""
    x = logits.astype(np.float64)
    e = np.exp(x - x.max(axis=0))
    return (e / e.sum(axis=0)).max(axis=0)


@pytest.fixture(scope="module")
def tips():
    return load_pipeline(TIPS_TEST_MODEL, Settings(backend="cpu"), log=lambda _: None)


@pytest.mark.parametrize("spread", [1.0, 30.0, 3000.0])  # 3000: exp(logit) overflows float32
def test_top_class_probability_is_the_softmax_maximum(spread):
    rng = np.random.default_rng(1)
    logits = (rng.normal(size=(1, 150, 24, 20)) * spread).astype(np.float32)
    labels, top = post.labels_and_max(logits)
    np.testing.assert_array_equal(labels, logits[0].argmax(0))
    np.testing.assert_array_equal(top, logits[0].max(0))
    prob = post.top_class_probability(logits, top)
    assert prob.dtype == np.float32 and prob.shape == (24, 20)
    np.testing.assert_allclose(prob, softmax_top(logits[0]), rtol=1e-5)
    np.testing.assert_array_equal(prob, post.top_class_probability(logits))  # max found itself
    mono = post.confidence_to_mono8(prob)
    expected = np.rint(255 * softmax_top(logits[0]))
    assert mono.dtype == np.uint8 and np.abs(mono - expected).max() <= 1


def test_confidence_of_ties_uniform_and_bad_logits():
    logits = np.zeros((1, 150, 1, 4), np.float32)       # pixel 0: all equal -> 1/150
    logits[0, 3, 0, 1] = logits[0, 7, 0, 1] = 50.0       # pixel 1: a tie of two -> 1/2
    logits[0, 9, 0, 2] = np.nan                          # pixel 2: unknown
    logits[0, 5, 0, 3] = np.inf                          # pixel 3: unknown
    prob = post.top_class_probability(logits)
    np.testing.assert_allclose(prob[0, :2], [1 / 150, 0.5], rtol=1e-5)
    assert np.isnan(prob[0, 2:]).all()
    assert post.confidence_to_mono8(prob).tolist() == [[2, 128, 0, 0]]
    assert post.confidence_to_mono8(np.array([1.0, 0.0, 0.4999 / 255], np.float32)).tolist() \
        == [255, 0, 0]


def blue_bands(width, height, blues):
    """An rgb8 frame of vertical bands of these blue values (red and green 0)."""
    frame = np.zeros((height, width, 3), np.uint8)
    edges = np.linspace(0, width, len(blues) + 1).astype(int)
    for blue, a, b in zip(blues, edges[:-1], edges[1:]):
        frame[:, a:b, 2] = blue
    return frame, edges


BLUES = (40, 120, 200, 250)


@pytest.mark.parametrize("resolution", ["model", "input"])
def test_pipeline_confidence_on_the_labels_grid(tips, resolution):
    """A 640x480 frame of blue bands, centre-cropped: inside each band the confidence is the
    test model's softmax maximum; outside the crop (input resolution) 0, as labels are 255."""
    from dense_perception.core.pipeline import DensePipeline
    pipeline = DensePipeline(tips.runner, tips.spec, PipelineConfig(output_resolution=resolution))
    frame, edges = blue_bands(640, 480, BLUES)
    products = pipeline.process(frame, "rgb8", request=Request(labels=True,
                                                               labels_confidence=True))
    conf, labels = products.labels_confidence, products.labels
    assert conf.dtype == np.uint8 and conf.shape == labels.shape == (products.height,
                                                                     products.width)
    plan = products.plan
    # Camera column -> published column, for the band interiors (4 published pixels margin).
    scale = products.width / plan.crop_width if resolution == "model" else 1.0
    offset = plan.crop_x if resolution == "model" else 0
    checked = 0
    for blue, a, b in zip(BLUES, edges[:-1], edges[1:]):
        lo = max(a, plan.crop_x) - offset
        hi = min(b, plan.crop_x + plan.crop_width) - offset
        cols = slice(int(lo * scale) + 4, int(hi * scale) - 4)
        if cols.stop <= cols.start:
            continue
        assert (labels[:, cols] == round(149 * blue / 255)).all()
        assert np.abs(conf[:, cols].astype(int) - int(tips_seg_confidence_of(blue))).max() <= 1
        checked += 1
    assert checked >= 3
    if resolution == "input":
        outside = labels == post.INVALID_LABEL
        assert outside[:, :plan.crop_x].all() and outside[:, plan.crop_x + plan.crop_width:].all()
        assert (conf[outside] == 0).all() and (conf[~outside] > 0).all()


def test_confidence_only_when_requested(tips):
    """Not asked, not computed: no value and no time in its stage of the pipeline's timer."""
    from dense_perception.core.pipeline import DensePipeline
    pipeline = DensePipeline(tips.runner, tips.spec)
    frame, _ = blue_bands(448, 448, BLUES)
    products = pipeline.process(frame, "rgb8", request=Request(labels=True, labels_colored=True))
    assert products.labels is not None and products.labels_confidence is None
    assert "labels_confidence" not in pipeline.timer.stats()
    products = pipeline.process(frame, "rgb8", request=Request(labels_confidence=True))
    assert products.labels_confidence is not None
    assert pipeline.timer.stats()["labels_confidence"].count == 1


@pytest.mark.timeout(120)
def test_process_writes_confidence_png_and_bag_topic(tmp_path, capsys):
    """``process`` writes it with the other segmentation products: a PNG per image, and the
    node's topic in a bag, both equal to the model's softmax maximum."""
    pytest.importorskip("rosbags")
    from support.bag_maker import COLOURS, read_bag, write_bag
    from dense_perception.core.conversions import image_msg_to_array
    image = tmp_path / "one.png"
    cv2.imwrite(str(image), np.full((48, 64, 3), (200, 90, 10), np.uint8))  # bgr: blue 200
    code, _, stderr = run_cli(["process", image, "--model", TIPS_TEST_MODEL, "--backend", "cpu",
                               "--outputs", "seg"], capsys)
    assert code == 0, stderr
    png = cv2.imread(str(tmp_path / "one_dense" / "labels_confidence" / "one.png"),
                     cv2.IMREAD_UNCHANGED)
    assert png.dtype == np.uint8 and png.shape == (448, 448)
    assert np.abs(png.astype(int) - int(tips_seg_confidence_of(200))).max() <= 1

    src = write_bag(tmp_path / "in", "mcap", frames=3, extra=False)
    code, _, stderr = run_cli(["process", src, "--model", TIPS_TEST_MODEL, "--backend", "cpu",
                               "--out", tmp_path / "out", "--outputs", "seg", "--copy", "none"],
                              capsys)
    assert code == 0, stderr
    msgs, types = read_bag(tmp_path / "out")
    assert types["/cam/segmentation/confidence"] == "sensor_msgs/msg/Image"
    assert len(msgs["/cam/segmentation/confidence"]) == 3
    for i, (_, msg) in enumerate(msgs["/cam/segmentation/confidence"]):
        assert msg.encoding == "mono8" and (msg.width, msg.height) == (448, 448)
        assert msg.header == msgs["/cam/segmentation/labels"][i][1].header
        expected = int(tips_seg_confidence_of(COLOURS[i][2]))
        assert np.abs(image_msg_to_array(msg).astype(int) - expected).max() <= 1
