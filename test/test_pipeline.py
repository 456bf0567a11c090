# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""End to end on real LiteRT and OpenCV: every output of both test models predicted analytically.

The frames are smooth colour gradients, so resampling keeps them (nearly) exact and the value at
each published pixel can be predicted from the camera pixel it comes from. Any RGB/BGR swap,
NCHW/NHWC mix-up, wrong normalisation, wrong output order or rotation mistake breaks them.
"""

import numpy as np
import pytest

from support.common import DA3_TEST_MODEL, TIPS_TEST_MODEL
from support.model_truth import (camera_colour_at_published, da3_depth_of, gradient_frame, tips_depth_of,
                         tips_normals_of)
from dense_perception.core.geometry.intrinsics import Intrinsics
from dense_perception.core.pipeline import load_pipeline
from dense_perception.core.frame_data import PipelineConfig, Request
from dense_perception.core.postprocess import INVALID_LABEL
from dense_perception.core.settings.table import Settings
from tools.common.reference import reference_points

def encode(rgb8, encoding):
    return {"rgb8": rgb8, "bgr8": rgb8[:, :, ::-1].copy(),
            "rgba8": np.dstack([rgb8, np.full(rgb8.shape[:2], 9, np.uint8)]),
            "bgra8": np.dstack([rgb8[:, :, ::-1], np.full(rgb8.shape[:2], 9, np.uint8)])}[encoding]


def inner(a, margin=4):
    return a[margin:-margin, margin:-margin]


@pytest.fixture(scope="module")
def da3():
    return load_pipeline(DA3_TEST_MODEL, Settings(backend="cpu"), log=lambda _: None)


@pytest.fixture(scope="module")
def tips():
    return load_pipeline(TIPS_TEST_MODEL, Settings(backend="cpu"), log=lambda _: None)


def reconfigure(pipeline, **changes):
    from dense_perception.core.pipeline import DensePipeline
    config = PipelineConfig(**{**pipeline.config.__dict__, **changes})
    return DensePipeline(pipeline.runner, pipeline.spec, config)


@pytest.mark.parametrize("frame_size", [(1280, 720), (720, 1280)])
@pytest.mark.parametrize("fit", ["crop", "stretch", "rotate"])
@pytest.mark.parametrize("resolution", ["model", "input"])
def test_da3_depth_predicted(da3, frame_size, fit, resolution):
    pipeline = reconfigure(da3, fit=fit, output_resolution=resolution)
    exact = gradient_frame(*frame_size)
    products = pipeline.process(np.rint(exact).astype(np.uint8), "rgb8")
    plan = products.plan
    assert plan.turned == (fit == "rotate" and frame_size == (1280, 720))
    assert products.depth.shape == (products.height, products.width)
    assert (products.width, products.height) == plan.published_size(resolution)
    expected = da3_depth_of(camera_colour_at_published(exact, plan, resolution))
    if resolution == "input":
        crop = (slice(plan.crop_y, plan.crop_y + plan.crop_height),
                slice(plan.crop_x, plan.crop_x + plan.crop_width))
        outside = np.ones(products.depth.shape, bool)
        outside[crop] = False
        assert np.isnan(products.depth[outside]).all()
        got, expected = products.depth[crop], expected[crop]
    else:
        got = products.depth
    assert np.nanmax(np.abs(inner(got) - inner(expected))) < 0.02


@pytest.mark.parametrize("encoding", ["bgr8", "rgba8", "bgra8"])
def test_channel_orders_give_identical_products(tips, encoding):
    rgb = np.rint(gradient_frame(640, 480)).astype(np.uint8)
    want = Request.everything()
    ref = tips.process(rgb, "rgb8", request=want)
    got = tips.process(encode(rgb, encoding), encoding, request=want)
    np.testing.assert_array_equal(got.depth, ref.depth)
    np.testing.assert_array_equal(got.normals, ref.normals)
    np.testing.assert_array_equal(got.labels, ref.labels)


@pytest.mark.parametrize("resolution", ["model", "input"])
def test_tipsv2_all_outputs_predicted(tips, resolution):
    pipeline = reconfigure(tips, output_resolution=resolution)
    exact = gradient_frame(640, 480, blue=200)
    products = pipeline.process(np.rint(exact).astype(np.uint8), "rgb8",
                                request=Request.everything())
    plan = products.plan
    colour = camera_colour_at_published(exact, plan, resolution)
    crop = (slice(None), slice(None))
    if resolution == "input":
        crop = (slice(plan.crop_y, plan.crop_y + plan.crop_height),
                slice(plan.crop_x, plan.crop_x + plan.crop_width))
        assert np.isnan(products.depth[:, :plan.crop_x]).all()
        assert (products.labels[:, :plan.crop_x] == INVALID_LABEL).all()
    # Metric depth, unscaled.
    depth_err = np.abs(products.depth[crop] - tips_depth_of(colour)[crop])
    assert np.nanmax(inner(depth_err)) < 0.02
    # Unit normals in the camera frame.
    normals = products.normals[crop]
    assert normals.dtype == np.float32 and normals.shape[-1] == 3
    np.testing.assert_allclose(np.linalg.norm(inner(normals), axis=-1), 1.0, atol=1e-5)
    assert np.abs(inner(normals) - inner(tips_normals_of(colour)[crop])).max() < 0.02
    # Labels: round(149 * 200 / 255) = 117 everywhere the model saw.
    assert products.labels.dtype == np.uint8
    assert (products.labels[crop] == round(149 * 200 / 255)).all()
    # Colour views.
    assert products.depth_colored.shape == products.depth.shape + (3,)
    assert products.normals_colored.dtype == np.uint8
    palette_117 = products.labels_colored[crop][10, 10]
    assert tuple(palette_117) != (0, 0, 0)


def test_labels_follow_blue_regions_through_upscale(tips):
    """Left half blue=40 -> label 23, right half blue=200 -> label 117, at the published grid."""
    frame = np.zeros((448, 448, 3), np.uint8)
    frame[:, :224, 2] = 40
    frame[:, 224:, 2] = 200
    labels = tips.process(frame, "rgb8", request=Request(labels=True)).labels
    assert labels.shape == (448, 448)
    assert (labels[:, :220] == round(149 * 40 / 255)).all()
    assert (labels[:, 228:] == round(149 * 200 / 255)).all()


def test_relative_depth_scale_applies_to_relative_depth_only(da3, tips):
    frame = np.rint(gradient_frame(504, 896)).astype(np.uint8)
    base = da3.process(frame, "rgb8").depth
    doubled = reconfigure(da3, relative_depth_scale=2.0).process(frame, "rgb8").depth
    np.testing.assert_allclose(doubled, 2 * base, rtol=1e-6)
    tips_frame = np.ascontiguousarray(frame[:448, :448])
    metric = tips.process(tips_frame, "rgb8").depth
    np.testing.assert_array_equal(
        reconfigure(tips, relative_depth_scale=2.0).process(tips_frame, "rgb8").depth, metric)


def test_depth_scale_is_stable_across_frames(tips):
    """No per-frame normalisation: the same pixel colour gives the same depth in any frame."""
    a = np.zeros((448, 448, 3), np.uint8)
    a[..., 0] = 100
    b = a.copy()
    b[:100] = 250  # much brighter elsewhere in the frame
    da, db = tips.process(a, "rgb8").depth, tips.process(b, "rgb8").depth
    np.testing.assert_array_equal(da[300:], db[300:])


def test_points_match_reference_back_projection(tips):
    pipeline = reconfigure(tips, max_depth=3.0, points_stride=1)  # every pixel
    frame = np.rint(gradient_frame(640, 480)).astype(np.uint8)
    k = Intrinsics(fx=500.0, fy=505.0, cx=321.0, cy=238.0, width=640, height=480)
    products = pipeline.process(frame, "rgb8", camera=k,
                                request=Request(points=True, points_rgb=True))
    assert not products.intrinsics_guessed
    kp = products.intrinsics
    assert kp.fx == pytest.approx(500.0 * 448 / 480) and kp.width == 448
    ref = np.array(reference_points(products.depth, kp, max_depth=3.0), np.float32)
    cloud = products.points
    assert len(cloud) == len(ref) and len(ref) < 448 * 448  # max_depth removed some
    np.testing.assert_allclose(np.stack([cloud["x"], cloud["y"], cloud["z"]], 1), ref, rtol=1e-5,
                               atol=1e-6)
    # Each point's colour is its model-grid pixel's, packed 0x00RRGGBB as PCL does.
    fitted = pipeline.plan_for(640, 480).fit_image(frame).astype(np.uint32)
    depth = products.depth
    with np.errstate(invalid="ignore"):
        kept = np.isfinite(depth) & (depth > 0) & (depth <= 3.0)
    packed = (fitted[..., 0] << 16) | (fitted[..., 1] << 8) | fitted[..., 2]
    np.testing.assert_array_equal(np.ascontiguousarray(cloud["rgb"]).view(np.uint32),
                                  packed[kept])


def test_missing_or_bad_camera_info_uses_fallback_and_says_so(tips):
    frame = np.zeros((480, 640, 3), np.uint8)
    for k, why in [(None, "no CameraInfo"),
                   (Intrinsics(0, 0, 0, 0, 640, 480), "focal length"),
                   (Intrinsics(500, 500, 320, 240, 1280, 720), "CameraInfo is for 1280x720")]:
        products = tips.process(frame, "rgb8", camera=k, request=Request(points=True))
        assert products.intrinsics_guessed and why in products.intrinsics_note
        assert "60 deg" in products.intrinsics_note
        assert products.points is not None


def test_unrequested_products_are_not_computed(tips):
    products = tips.process(np.zeros((480, 640, 3), np.uint8), "rgb8", request=Request(depth=True))
    assert products.depth is not None
    assert products.normals is products.labels is products.points is products.depth_colored is None


def test_bad_frames_are_refused(tips):
    with pytest.raises(ValueError, match="rgb8 frame needs 3 channel"):
        tips.process(np.zeros((10, 10), np.uint8), "rgb8")
    with pytest.raises(ValueError, match="unsupported encoding '16UC1'"):
        tips.process(np.zeros((10, 10), np.uint8), "16UC1")
    with pytest.raises(ValueError, match="must be uint8"):
        tips.process(np.zeros((10, 10, 3), np.float32), "rgb8")


def test_bad_config_is_refused():
    with pytest.raises(ValueError, match="fit 'letterbox' is not allowed; use one of: crop, stretch"):
        load_pipeline(TIPS_TEST_MODEL, Settings(backend="cpu", fit="letterbox"))
    with pytest.raises(ValueError, match="points_stride must be >= 1"):
        load_pipeline(TIPS_TEST_MODEL, Settings(backend="cpu", points_stride=0))

