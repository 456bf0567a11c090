# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Exact 3D from real cameras: scenes of known geometry filmed through each camera model.

The frames are painted so that the test model's depth is the true Z along each pixel's ray
(``camera_scenes``), so every millimetre of error in the published points is the package's
geometry: the camera model, the rectification, the fit and its inverse, the back-projection.
"""

from dataclasses import replace
from functools import lru_cache

import cv2
import numpy as np
import pytest

import support.camera_scenes as cs
from support.common import DA3_TEST_MODEL, TIPS_TEST_MODEL
from dense_perception.core.geometry.camera_model import CameraModel
from dense_perception.core.conversions import camera_info_fields
from dense_perception.core.geometry.fit import resize_depth
from dense_perception.core.geometry.intrinsics import Intrinsics
from dense_perception.core.pipeline import DensePipeline, load_pipeline
from dense_perception.core.frame_data import Request
from dense_perception.core.settings.table import Settings

pytestmark = pytest.mark.numerics

P95_LIMIT = 0.020  # metres: the 95th percentile of the points' errors against the scene
RAW_CAMERAS = {"plumb_bob": cs.BARREL, "rational_polynomial": cs.RATIONAL,
               "equidistant": cs.FISHEYE}


@pytest.fixture(scope="module")
def tips():
    return load_pipeline(TIPS_TEST_MODEL, Settings(backend="cpu"), log=lambda _: None)


@pytest.fixture(scope="module")
def da3():
    # The painted scene is in metres: the DA3 test model's relative depth is asserted as metres.
    return load_pipeline(DA3_TEST_MODEL, Settings(backend="cpu", depth_scale_source="fixed"),
                         log=lambda _: None)


def configured(pipeline, **changes):
    return DensePipeline(pipeline.runner, pipeline.spec,
                         replace(pipeline.config, points_stride=1, **changes))


@lru_cache(maxsize=16)
def filmed(camera_name, rectified, model, scene="boxes"):
    camera = {c.name: c for c in vars(cs).values() if isinstance(c, cs.Camera)}[camera_name]
    depth_of_colour = cs.DA3_DEPTH if model == "da3" else cs.TIPS_DEPTH
    return cs.film(camera, cs.BOXES if scene == "boxes" else cs.PLANE, rectified,
                   depth_of_colour)


def run(pipeline, camera, rectified, frame, **config):
    info = camera.camera_info()
    pipe = configured(pipeline, input_rectified=rectified, **config)
    products = pipe.process(frame, "rgb8", pipe.camera_from_info(info),
                            Request(points=True, depth=True))
    assert not products.intrinsics_guessed, products.intrinsics_note
    return products


def p95(errors):
    return float(np.percentile(errors, 95))


@pytest.mark.parametrize("resolution", ["model", "input"])
@pytest.mark.parametrize("fit", ["crop", "stretch", "rotate"])
@pytest.mark.parametrize("rectified", [False, True], ids=["raw", "rectified"])
@pytest.mark.parametrize("distortion", sorted(RAW_CAMERAS))
def test_points_land_on_the_true_surfaces(tips, da3, distortion, rectified, fit, resolution):
    camera = RAW_CAMERAS[distortion]
    # rotate turns a landscape frame for DA3's portrait input; TIPSv2's square input is not turned.
    model, pipeline = ("da3", da3) if fit == "rotate" else ("tips", tips)
    frame = filmed(camera.name, rectified, model)
    products = run(pipeline, camera, rectified, frame, fit=fit, output_resolution=resolution)
    assert products.plan.turned == (fit == "rotate")
    assert products.rectified == (not rectified)
    points = products.points
    # Nearly every published pixel inside the fitted region has a point.
    plan = products.plan
    area = (plan.crop_width * plan.crop_height if resolution == "input"
            else products.width * products.height)
    assert len(points) > 0.97 * area
    errors = cs.ray_errors(points, cs.BOXES)
    assert p95(errors) < P95_LIMIT, f"p95 {p95(errors) * 1000:.1f} mm"


@pytest.mark.parametrize("resolution", ["model", "input"])
def test_large_frames_are_area_averaged_and_still_exact(tips, resolution):
    frame = filmed(cs.BARREL_HD.name, False, "tips")
    products = run(tips, cs.BARREL_HD, False, frame, output_resolution=resolution)
    assert products.rectified
    errors = cs.ray_errors(products.points, cs.BOXES)
    assert p95(errors) < P95_LIMIT, f"p95 {p95(errors) * 1000:.1f} mm"


def test_rectifying_a_fine_pattern_does_not_alias(tips):
    """One-pixel stripes seen 2.4x smaller average to grey (a bare bilinear remap would pick
    single stripes: black and white blotches)."""
    frame = np.zeros((1080, 1920, 3), np.uint8)
    frame[:, ::2] = 255
    pipe = configured(tips)
    camera = pipe.camera_from_info(cs.BARREL_HD.camera_info())
    fitted = pipe.infer(frame, "rgb8", Request(), camera).fitted
    assert np.abs(fitted[8:-8, 8:-8].astype(float) - 127.5).max() < 40


@pytest.mark.parametrize("camera,rectified", [(cs.BARREL, False), (cs.FISHEYE, False),
                                              (cs.RECTIFIED, True)])
def test_before_this_fix_the_same_scene_was_wrong(tips, camera, rectified):
    """The check above can fail: K alone (the old behaviour) misses the plane by far."""
    frame = filmed(camera.name, rectified, "tips", "plane")
    info = camera.camera_info()
    products = configured(tips).process(frame, "rgb8", Intrinsics.from_k(info.k, 1280, 720),
                                        Request(points=True))
    pts = products.points
    assert p95(cs.PLANE.plane_distance(pts["x"], pts["y"], pts["z"])) > 3 * P95_LIMIT


_FILMED = {}


@pytest.mark.parametrize("camera", [
    replace(cs.BARREL, binning=2, name="binned"),
    replace(cs.BARREL, roi=(320, 120, 640, 480), name="roi"),
    replace(cs.FISHEYE, binning=2, roi=(160, 80, 960, 560), name="binned roi")],
    ids=["binned", "roi", "binned+roi"])
@pytest.mark.parametrize("resolution", ["model", "input"])
def test_binning_and_roi(tips, camera, resolution):
    if camera.name not in _FILMED:  # filmed at full resolution, then cropped and binned
        _FILMED[camera.name] = cs.film(camera, cs.BOXES)
    frame = _FILMED[camera.name]
    products = run(tips, camera, False, frame, output_resolution=resolution)
    assert products.rectified
    errors = cs.ray_errors(products.points, cs.BOXES)
    assert p95(errors) < P95_LIMIT, f"p95 {p95(errors) * 1000:.1f} mm"


@pytest.mark.parametrize("camera,rectified,fit,resolution", [
    (cs.BARREL, False, "crop", "input"), (cs.RECTIFIED, True, "stretch", "model"),
    (cs.FISHEYE, False, "rotate", "model"), (cs.RATIONAL, False, "rotate", "input")])
def test_depth_image_proc_makes_our_cloud(tips, da3, camera, rectified, fit, resolution):
    """depth_image_proc (point_cloud_xyz on depth/image + depth/camera_info), written out
    from its documented P-based formula, gives the very cloud we publish."""
    model, pipeline = ("da3", da3) if fit == "rotate" else ("tips", tips)
    frame = filmed(camera.name, rectified, model)
    products = run(pipeline, camera, rectified, frame, fit=fit, output_resolution=resolution,
                   points_organized=True)
    info = camera_info_fields(products.intrinsics)
    assert info["d"] == [0.0] * 5 and info["r"] == [1.0, 0, 0, 0, 1.0, 0, 0, 0, 1.0]
    assert info["k"] == [info["p"][i] for i in (0, 1, 2, 4, 5, 6, 8, 9, 10)]
    assert (info["width"], info["height"]) == products.depth.shape[::-1]
    theirs = cs.depth_image_proc_points(products.depth, info["p"])
    ours = np.stack([products.points[n] for n in ("x", "y", "z")], axis=-1)
    assert np.isfinite(ours[..., 2]).sum() > 0.5 * ours[..., 2].size
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(theirs))
    np.testing.assert_allclose(ours, theirs, rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("resolution", ["model", "input"])
def test_point_colours_come_from_the_rectified_frame(tips, resolution):
    """Each point's colour is the colour its depth was painted with: the colours are taken
    from the same rectified grid as the depth (TIPSv2 test model: depth = f(colour))."""
    frame = filmed(cs.BARREL.name, False, "tips")
    pipe = configured(tips, output_resolution=resolution)
    products = pipe.process(frame, "rgb8", pipe.camera_from_info(cs.BARREL.camera_info()),
                            Request(points=True, points_rgb=True))
    assert products.rectified
    packed = products.points["rgb"].view(np.uint32)
    rgb = np.stack([(packed >> 16) & 255, (packed >> 8) & 255, packed & 255], -1) / 255.0
    (w0, w1, w2), bias = cs.TIPS_DEPTH
    depth_of_colour = bias + w0 * rgb[:, 0] + w1 * rgb[:, 1] + w2 * rgb[:, 2]
    assert np.percentile(np.abs(depth_of_colour - products.points["z"]), 95) < 0.02


def test_a_depth_step_stays_a_step(tips):
    """output_resolution input: every upsampled depth is one of the two surfaces."""
    near, far = 1.2, 3.0
    z = np.full((896, 896), far)
    z[200:700, 300:600] = near  # a box; edges on the 2:1 grid, so the model sees no mixed pixel
    frame = cs.paint(z)
    pipe = configured(tips, output_resolution="input")
    products = pipe.process(frame, "rgb8", Intrinsics(600.0, 600.0, 447.5, 447.5, 896, 896),
                            Request(points=True))
    zs = products.points["z"]
    on_near, on_far = np.abs(zs - near) < 0.006, np.abs(zs - far) < 0.006
    assert on_near.sum() == 500 * 300 and on_far.sum() == 896 * 896 - 500 * 300
    assert (on_near | on_far).all(), "points between the two surfaces"


def test_resize_depth_keeps_steps_and_smooth_surfaces():
    rng = np.random.default_rng(1)
    ramp = np.add.outer(np.linspace(1.0, 1.3, 60), np.linspace(0.0, 0.2, 80)).astype(np.float32)
    size = (257, 193)
    # A smooth surface is resized bilinearly, exactly as OpenCV does.
    np.testing.assert_array_equal(resize_depth(ramp, size),
                                  cv2.resize(ramp, size, interpolation=cv2.INTER_LINEAR))
    steps = np.where(rng.random((60, 80)) < 0.5, 1.0, 2.5).astype(np.float32)
    steps[5:9, 5:9] = np.nan
    out = resize_depth(steps, size)
    values = out[np.isfinite(out)]
    assert np.isin(values, [1.0, 2.5]).all()
    assert np.isnan(out).sum() > 0


def test_unknown_distortion_model_carries_on_as_pinhole(tips):
    camera = replace(cs.BARREL, distortion_model="kannala_brandt_custom")
    frame = filmed(cs.PINHOLE.name, False, "tips")
    products = run(tips, camera, False, frame)
    assert not products.rectified
    assert "unknown distortion model 'kannala_brandt_custom'" in products.camera_note
    k = Intrinsics.from_k(camera.k, 1280, 720)
    assert products.intrinsics == products.plan.published_intrinsics(k, "model")


def test_zero_distortion_uses_k_only_when_rectification_is_the_identity():
    info = cs.RECTIFIED.camera_info()
    assert CameraModel.from_camera_info(info, input_rectified=True).intrinsics().fx == 450.0
    assert CameraModel.from_camera_info(info, input_rectified=False).intrinsics().fx == 450.0
    info.d = [0.0] * 5  # D = 0 but P != K: the raw image is still remapped onto P's grid
    zero_d = CameraModel.from_camera_info(info, input_rectified=False)
    assert zero_d.intrinsics().fx == 450.0 and zero_d.needs_rectification
    info.p = [600.0, 0.0, cs.CX, 0.0, 0.0, 600.0, cs.CY, 0.0, 0.0, 0.0, 1.0, 0.0]
    for r in ([1.0, 0, 0, 0, 1.0, 0, 0, 0, 1.0], [0.0] * 9):  # R unset (zeros) is I
        info.r = r
        plain = CameraModel.from_camera_info(info, input_rectified=False)
        assert plain.intrinsics().fx == 600.0 and not plain.needs_rectification
        assert "identity" in plain.describe()


# A raw camera with no distortion whose rectification is still not the identity (a stereo
# head's R, or a P unlike K), and the same with a distortion too small to matter.
_R = cs.rotation_y(4.0)
_P = cs.p_matrix(520.0, cs.CX - 10.0, cs.CY + 5.0)
ROTATED = replace(cs.PINHOLE, r=_R, name="raw, D = 0, R: 4 deg about y")
NEW_P = replace(cs.PINHOLE, p=_P, name="raw, D = 0, P fx 520")


@pytest.mark.timeout(120)
@pytest.mark.parametrize("resolution", ["model", "input"])
@pytest.mark.parametrize("camera", [
    ROTATED, NEW_P, replace(ROTATED, d=(1e-9, 0, 0, 0, 0), name="R, D 1e-9"),
    replace(NEW_P, d=(1e-9, 0, 0, 0, 0), r=_R, name="P and R, D 1e-9")],
                         ids=["R", "P", "R, D 1e-9", "P and R, D 1e-9"])
def test_raw_input_goes_through_r_and_p_whatever_d(tips, camera, resolution):
    """One rule: a raw image is rectified through R and P whether D is zero or
    not; the points are in the rectified frame (where the scene is) and on P's grid."""
    if camera.name not in _FILMED:  # the scene is in the rectified frame: filmed through R
        _FILMED[camera.name] = cs.film(camera, cs.BOXES)
    products = run(tips, camera, False, _FILMED[camera.name], output_resolution=resolution)
    assert products.rectified
    p = camera.p or cs.p_matrix(600.0, cs.CX, cs.CY)
    p_grid = Intrinsics(fx=p[0], fy=p[5], cx=p[2], cy=p[6], width=cs.W, height=cs.H)
    assert products.intrinsics == products.plan.published_intrinsics(p_grid, resolution)
    errors = cs.ray_errors(products.points, cs.BOXES)
    assert p95(errors) < P95_LIMIT, f"p95 {p95(errors) * 1000:.1f} mm"


@pytest.mark.timeout(60)
def test_identity_rectification_keeps_the_cheap_path(tips):
    """D = 0, R = I, P = K: nothing to remap; the frame goes the plain crop-and-resize way."""
    pipe = configured(tips)
    products = pipe.process(filmed(cs.PINHOLE.name, False, "tips"), "rgb8",
                            pipe.camera_from_info(cs.PINHOLE.camera_info()), Request(points=True))
    assert not products.rectified and not pipe._rectifier._maps
    assert p95(cs.ray_errors(products.points, cs.BOXES)) < P95_LIMIT


def test_binning_and_roi_follow_rep_104():
    """image_geometry's rule: the ROI offset moves the principal point, binning scales."""
    camera = replace(cs.BARREL, binning=2, roi=(320, 120, 640, 480))
    model = CameraModel.from_camera_info(camera.camera_info())
    k = cs.BARREL.k
    assert (model.width, model.height) == (320, 240)
    assert model.k == pytest.approx((k[0] / 2, 0, (k[2] - 320) / 2, 0, k[4] / 2,
                                     (k[5] - 120) / 2, 0, 0, 1))


def test_rectify_maps_are_built_once_per_camera_and_size(tips):
    pipe = configured(tips)
    frame = filmed(cs.BARREL.name, False, "tips")
    camera = pipe.camera_from_info(cs.BARREL.camera_info())
    for _ in range(3):
        pipe.infer(frame, "rgb8", Request(), pipe.camera_from_info(cs.BARREL.camera_info()))
    assert len(pipe._rectifier._maps) == 1
    pipe.infer(frame, "rgb8", Request(), replace(camera, d=(-0.3, 0.1, 0.0, 0.0, 0.0)))
    assert len(pipe._rectifier._maps) == 2
