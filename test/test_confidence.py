# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""DA3's confidence output (``depth/confidence``) and ``points_min_confidence``,
through real LiteRT with the bundled test models: the DA3 confidence model's
confidence is 1 + exp of the ImageNet-normalised blue (model_truth.da3_confidence_of), so a
test paints confidence with the blue channel and depth with the red one."""

import cv2
import numpy as np
import pytest

from support.common import DA3_CONFIDENCE_TEST_MODEL, DA3_TEST_MODEL, TIPS_TEST_MODEL
from support.model_truth import da3_confidence_of, da3_depth_of, tips_seg_logits_of

from dense_perception.core.model.specs import CONFIDENCE_KIND
from dense_perception.core.model.detection import detect_model_spec
from dense_perception.core.settings.table import PARAMS_BY_NAME
from dense_perception.core.pipeline import load_pipeline
from dense_perception.core.products import available_groups, request_for
from dense_perception.core.backends.runner import check_model_file
from dense_perception.core.settings.table import Settings

pytestmark = pytest.mark.timeout(120)
W, H = 504, 896  # the DA3 test models' input (portrait): a frame this size is not resampled


def pipeline(path, **config):
    return load_pipeline(path, Settings(backend="cpu", depth_scale_source="fixed", **config),
                         log=lambda _: None)


def painted(red, blue, green=100):
    """An rgb8 frame of the DA3 models' size: ``red`` paints depth, ``blue`` confidence."""
    frame = np.empty((H, W, 3), np.uint8)
    frame[..., 0], frame[..., 1], frame[..., 2] = red, green, blue
    return frame


# ---- the model file ----------------------------------------------------------------------------
def reordered_confidence_model(maker, path, order, names, sorted_signature=False):
    """The bundled confidence model with its outputs in ``order`` (indices into (depth,
    confidence)) and SignatureDef names ``names``; ``sorted_signature``: the SignatureDef lists
    its outputs by name, as converters write it (the graph's order is the runners')."""
    model = maker.build_da3_confidence_model()
    graph, signature = model.subgraphs[0], model.signatureDefs[0]
    outputs = [graph.outputs[i] for i in order]
    graph.outputs = outputs
    signature.outputs = [signature.outputs[i] for i in order]
    for entry, name in zip(signature.outputs, names):
        entry.name = name
        graph.tensors[entry.tensorIndex].name = name
    if sorted_signature:
        signature.outputs.sort(key=lambda entry: entry.name)
    return maker._write(model, path)


@pytest.mark.parametrize("order,names,sorted_signature,conf_at", [
    ((0, 1), ("depth", "confidence"), False, 1),   # export-da3's order and names
    ((0, 1), ("depth", "confidence"), True, 1),    # ... its SignatureDef listed by name
    ((1, 0), ("confidence", "depth"), False, 0),   # named: found by name
    ((1, 0), ("output_1", "output_0"), False, 1),  # unnamed: the second is the confidence
])
def test_two_output_da3_files_give_depth_and_confidence(maker, tmp_path, order, names,
                                                        sorted_signature, conf_at):
    path = str(reordered_confidence_model(maker, tmp_path / "da3.tflite", order, names,
                                          sorted_signature))
    signature = check_model_file(path)
    spec = detect_model_spec(signature.input_shapes, signature.output_shapes,
                             output_names=signature.output_names, file=signature)
    assert spec.kind == "da3" and spec.output_index(CONFIDENCE_KIND) == conf_at
    assert spec.output_index("depth") == 1 - conf_at
    rgb = painted(red=np.linspace(0, 255, W)[None, :].astype(np.uint8), blue=150)
    products = pipeline(path).process(rgb, "rgb8",
                                      request=request_for(["depth", "depth_confidence"]))
    depth, confidence = da3_depth_of(rgb.astype(float)), da3_confidence_of(rgb.astype(float))
    if names[0] == "output_1":  # unnamed and reversed: read by order, the two are swapped
        depth, confidence = confidence, depth
    np.testing.assert_allclose(products.depth, depth, rtol=1e-5)
    np.testing.assert_allclose(products.depth_confidence, confidence, rtol=1e-5)


def test_one_output_da3_has_no_confidence_product():
    card, with_conf = pipeline(DA3_TEST_MODEL), pipeline(DA3_CONFIDENCE_TEST_MODEL)
    assert "depth_confidence" not in available_groups(card.spec)
    assert "depth_confidence" in available_groups(with_conf.spec)
    products = card.process(painted(100, 150), "rgb8",
                            request=request_for(["depth", "depth_confidence"]))
    assert products.depth is not None and products.depth_confidence is None


# ---- depth/confidence --------------------------------------------------------------------------
@pytest.mark.parametrize("resolution", ["model", "input"])
def test_confidence_is_the_painted_function_on_the_depth_grid(resolution):
    """A 640x480 camera frame, centre-cropped to 270x480 and scaled to 504x896: the top half
    painted blue 60, the bottom half 220; on the published grid the confidence is the model's
    function of each half's colour, and NaN outside the crop."""
    frame = np.empty((480, 640, 3), np.uint8)
    frame[..., 0], frame[..., 1] = 120, 80
    frame[:240, :, 2], frame[240:, :, 2] = 60, 220
    products = pipeline(DA3_CONFIDENCE_TEST_MODEL, output_resolution=resolution).process(
        frame, "rgb8", request=request_for(["depth", "depth_confidence"]))
    confidence = products.depth_confidence
    assert confidence.dtype == np.float32 and confidence.shape == products.depth.shape
    top, bottom = (da3_confidence_of(np.array([120.0, 80.0, b])) for b in (60, 220))
    if resolution == "model":
        assert confidence.shape == (896, 504)
        np.testing.assert_allclose(confidence[:440], top, rtol=1e-5)
        np.testing.assert_allclose(confidence[456:], bottom, rtol=1e-5)
    else:
        assert confidence.shape == (480, 640)
        inside = slice(185, 455)  # the crop: 270 columns in the middle
        np.testing.assert_allclose(confidence[:236, inside], top, rtol=1e-5)
        np.testing.assert_allclose(confidence[244:, inside], bottom, rtol=1e-5)
        assert np.isnan(confidence[:, :185]).all() and np.isnan(confidence[:, 455:]).all()


def test_confidence_is_extracted_only_when_asked():
    """Lazy: no confidence work unless depth/confidence is wanted or the points filter reads
    it."""
    frame = painted(100, 150)
    plain = pipeline(DA3_CONFIDENCE_TEST_MODEL, points_min_confidence=0.0)
    assert plain.infer(frame, "rgb8", request_for(["depth", "points"])).confidence is None
    assert plain.infer(frame, "rgb8", request_for(["depth_confidence"])).confidence is not None
    filtering = pipeline(DA3_CONFIDENCE_TEST_MODEL, points_min_confidence=0.2)
    raw = filtering.infer(frame, "rgb8", request_for(["points"]))
    assert raw.confidence is not None
    assert filtering.finish(raw).depth_confidence is None  # read by the filter, not published


# ---- points_min_confidence ---------------------------------------------------------------------
def edge_scene():
    """Boxes (red 20: near) and poles 6 px wide on a wall (red 200: far). Confidence (blue) is
    lowest on the depth steps and rises 40 per pixel away from them, under a surface
    confidence that varies smoothly over the view (blue 90..255). Returns the frame, the step
    pixels (both sides of each step) and the surface pixels (4+ px from any step)."""
    near = np.zeros((H, W), np.uint8)
    for x0, y0, x1, y1 in [(60, 120, 220, 380), (280, 300, 460, 520), (120, 600, 380, 820),
                           (30, 420, 36, 890), (470, 40, 476, 700), (240, 20, 246, 280)]:
        near[y0:y1, x0:x1] = 1
    steps = cv2.morphologyEx(near, cv2.MORPH_GRADIENT, np.ones((3, 3), np.uint8)) > 0
    distance = cv2.distanceTransform((~steps).astype(np.uint8), cv2.DIST_L2, 3)
    rows, cols = np.mgrid[0:H, 0:W]
    surface_blue = 90 + 165 * (rows + cols) / (H + W)
    blue = np.rint(np.minimum(surface_blue, 20 + 40 * distance)).astype(np.uint8)
    return painted(np.where(near, 20, 200), blue), steps, distance >= 4


def dropped_points(path, frame, min_confidence, stride=1):
    """Organised cloud: True where the pixel gave no point."""
    products = pipeline(path, points_min_confidence=min_confidence, points_organized=True,
                        points_stride=stride).process(frame, "rgb8",
                                                      request=request_for(["points"]))
    return ~np.isfinite(products.points["z"])


@pytest.mark.parametrize("min_confidence", [0.05, 0.25])
def test_da3_drops_the_points_under_the_frames_confidence_quantile(min_confidence):
    frame, steps, surface = edge_scene()
    painted_confidence = da3_confidence_of(frame.astype(float))
    # The quantile of the painted values, counted out: the threshold is the value with a
    # share ``min_confidence`` of the frame below it; points under it go, ties stay.
    ranked = np.sort(painted_confidence.ravel())
    threshold = ranked[int(min_confidence * (ranked.size - 1))]
    expected = painted_confidence < threshold * (1 - 1e-6)
    dropped = dropped_points(DA3_CONFIDENCE_TEST_MODEL, frame, min_confidence)
    assert (dropped == expected).mean() > 0.999  # float32 exp may flip ties at the threshold
    assert dropped[steps].all()  # every point on a depth step goes
    assert dropped.mean() == pytest.approx(min_confidence, abs=0.01)
    # No point is dropped while a less confident one is kept.
    assert painted_confidence[dropped].max() <= painted_confidence[~dropped].min() * (1 + 1e-6)


def test_da3_quantile_counts_the_sampled_points():
    """With a stride the quantile is of the cloud's own pixels: the share dropped holds."""
    frame, _, _ = edge_scene()
    dropped = dropped_points(DA3_CONFIDENCE_TEST_MODEL, frame, 0.25, stride=4)
    assert dropped.shape == (H // 4, W // 4)
    assert dropped.mean() == pytest.approx(0.25, abs=0.01)


def test_default_points_min_confidence_measured_on_the_edge_scene():
    """The measured reason for the default (README, Point clouds): on the edge scene it drops
    every point on a depth step for a small share of the surface points, where the official
    export's 0.4 drops over a third of the surface."""
    default = PARAMS_BY_NAME["points_min_confidence"].default
    frame, steps, surface = edge_scene()
    figures = {}
    for q in (0.02, 0.05, 0.1, 0.2, 0.4):
        dropped = dropped_points(DA3_CONFIDENCE_TEST_MODEL, frame, q)
        figures[q] = (dropped[steps].mean(), dropped[surface].mean())
    print("points_min_confidence: (step points dropped, surface points dropped)", figures)
    step_share = steps.mean()
    assert 0.02 < step_share < 0.03  # the scene the README describes: 2.4 % on the steps
    edge_dropped, surface_dropped = figures[default]
    assert edge_dropped == 1.0 and surface_dropped < 0.05
    assert figures[0.4][1] > 0.33


def test_card_style_da3_keeps_every_point():
    frame, _, _ = edge_scene()
    assert not dropped_points(DA3_TEST_MODEL, frame, 0.4).any()
    assert "has no confidence output" in pipeline(DA3_TEST_MODEL, points_min_confidence=0.4
                                                  ).confidence_note()


def test_tipsv2_drops_points_whose_top_class_probability_is_under_it():
    """TIPSv2: the threshold is the top-class softmax probability itself. Left half blue 0
    (149 b / 255 = 0: the top class has p = 0.72), right half blue 83 (149 b / 255 = 48.5: two
    classes tie, p = 0.44); 0.6 drops the right half's points only."""
    logits = tips_seg_logits_of(np.array([0.0, 83.0]))
    e = np.exp(logits - logits.max(axis=-1, keepdims=True))
    p_left, p_right = (e / e.sum(axis=-1, keepdims=True)).max(axis=-1)
    assert p_right < 0.6 < p_left
    frame = np.zeros((448, 448, 3), np.uint8)
    frame[..., 0], frame[..., 1] = 120, 60
    frame[:, 224:, 2] = 83
    tips = load_pipeline(TIPS_TEST_MODEL,
                         Settings(backend="cpu", points_min_confidence=0.6, points_organized=True,
                                  points_stride=1),
                         log=lambda _: None)
    points = tips.process(frame, "rgb8", request=request_for(["points"])).points
    dropped = ~np.isfinite(points["z"])
    assert not dropped[:, :216].any() and dropped[:, 232:].all()
    keep_all = load_pipeline(TIPS_TEST_MODEL,
                             Settings(backend="cpu", points_min_confidence=0.0,
                                      points_organized=True),
                             log=lambda _: None)
    points = keep_all.process(frame, "rgb8", request=request_for(["points"])).points
    assert np.isfinite(points["z"]).all()


@pytest.mark.parametrize("far_blue,near_blue", [((40, 100), (120, 255)),
                                                ((200, 255), (40, 180))])
def test_da3_quantile_is_over_the_clouds_own_points_after_max_depth(far_blue, near_blue):
    """max_depth removes the far three quarters of the frame first; points_min_confidence 0.4
    then drops 40 % of the cloud that is left (the quantile counted out here over the cloud's
    pixels), not 0 % or 100 % of it as a quantile over the whole frame would."""
    q, max_depth = 0.4, 3.0
    frame = painted(200, 0)
    frame[3 * H // 4:, :, 0] = 20  # the bottom quarter near, the rest far
    far, near = frame[..., 0] == 200, frame[..., 0] == 20
    rows = np.arange(H)[:, None] * np.ones((1, W))
    cols = np.ones((H, 1)) * np.arange(W)[None, :]
    # confidence rising down each part (0..1 within it), with a little texture across
    ramp = np.where(near, rows - 3 * H // 4, rows) / np.where(near, H // 4, 3 * H // 4)
    ramp = np.clip(0.95 * ramp + 0.05 * (cols * 7 % 61) / 60, 0, 1)
    frame[..., 2] = np.where(far, far_blue[0] + (far_blue[1] - far_blue[0]) * ramp,
                             near_blue[0] + (near_blue[1] - near_blue[0]) * ramp).astype(np.uint8)
    truth_depth = da3_depth_of(frame.astype(float))
    cloud = truth_depth <= max_depth
    assert cloud.mean() == pytest.approx(0.25, abs=0.01)  # the scene as described
    conf = da3_confidence_of(frame.astype(float))
    ranked = np.sort(conf[cloud])
    threshold = ranked[int(q * (ranked.size - 1))]
    expected = cloud & (conf < threshold * (1 - 1e-6))
    products = pipeline(DA3_CONFIDENCE_TEST_MODEL, points_min_confidence=q,
                        points_organized=True, points_stride=1, max_depth=max_depth).process(
        frame, "rgb8", request=request_for(["points"]))
    dropped = ~np.isfinite(products.points["z"]).reshape(H, W)
    assert dropped[~cloud].all()  # beyond max_depth
    assert dropped[cloud].mean() == pytest.approx(q, abs=0.015)  # ties at the threshold stay
    assert (dropped[cloud] == expected[cloud]).mean() > 0.999
