# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""A reference depth (LiDAR, ToF) registered to the RAW image, for a raw image the pipeline
rectifies: its pixels must go through the same undistortion, R and P as the
image before the metric / relative ratios are taken.

The truth is written out independently (``camera_scenes``: the lens models and their Newton
inversion): the camera sits inside a sphere, so the true depth of every ray is known and falls
off from the centre of the view outwards. A reference pixel looked up at the wrong place (its
raw position taken as a rectified one, as before) reads a ray nearer the centre, deeper: every
ratio is biased the same way and the median with them (by 6-13 % for the fisheye).
"""

from dataclasses import replace

import cv2
import numpy as np
import pytest

import support.camera_scenes as cs
from support.common import DA3_TEST_MODEL
from dense_perception.core.geometry.camera_model import CameraModel
from dense_perception.core.geometry.fit import make_fit_plan
from dense_perception.core.scale.metric_scale import DepthScaler, ScaleConfig
from dense_perception.core.scale.estimators import reference_scale
from dense_perception.core.pipeline import load_pipeline
from dense_perception.core.frame_data import Request
from dense_perception.core.settings.table import Settings

SCALE = 1.5                      # metres per relative unit, the truth to recover
TRUE, RELATIVE = cs.Dome(6.0), cs.Dome(6.0 / SCALE)
CAMERAS = {"fisheye": cs.FISHEYE,
           "fisheye, R": replace(cs.FISHEYE, r=cs.rotation_y(4.0), name="fisheye, R 4 deg"),
           "barrel": cs.BARREL}
# (model width, height, fit, output resolution): a centre crop, the whole (turned) frame, and
# the camera's own grid.
PLANS = [(448, 448, "crop", "model"), (504, 896, "rotate", "model"),
         (448, 448, "stretch", "input")]


def reference_of(camera, scene, step=4):
    """The metric depth a sensor registered to the raw image reports, at 1/``step`` of its
    resolution (reference pixel centres mapped to raw pixels as the same field of view)."""
    rv, ru = np.mgrid[0:camera.height // step, 0:camera.width // step].astype(np.float64)
    xn, yn = cs.raw_pixel_rays(camera, (ru + 0.5) * step - 0.5, (rv + 0.5) * step - 0.5)
    return scene.z_along(xn, yn).astype(np.float32)


def relative_on_published_grid(camera, plan, resolution):
    """The relative depth the model would give on the published grid: rectified pixel centres
    (crop and resize undone, written out) -> rays through P -> depth / SCALE."""
    pw, ph = plan.published_size(resolution)
    jj, ii = np.meshgrid(np.arange(pw, dtype=np.float64), np.arange(ph, dtype=np.float64))
    if resolution == "model":
        jj = (jj + 0.5) * plan.crop_width / pw - 0.5 + plan.crop_x
        ii = (ii + 0.5) * plan.crop_height / ph - 0.5 + plan.crop_y
    p = camera.p or cs.p_matrix(camera.k[0], camera.k[2], camera.k[5], camera.k[4])
    return RELATIVE.z_along((jj - p[2]) / p[0], (ii - p[6]) / p[5]).astype(np.float32)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("shape", PLANS, ids=lambda s: f"{s[2]}-{s[3]}")
@pytest.mark.parametrize("name", sorted(CAMERAS))
def test_reference_pixels_are_rectified_like_the_image(name, shape):
    camera = CAMERAS[name]
    width, height, fit, resolution = shape
    model = CameraModel.from_camera_info(camera.camera_info())
    assert model.needs_rectification
    plain = make_fit_plan(camera.width, camera.height, width, height, fit)
    relative = relative_on_published_grid(camera, plain, resolution)
    reference = reference_of(camera, TRUE)
    est = reference_scale(relative, reference, plain.rectifying(model), resolution)
    assert est.scale == pytest.approx(SCALE, rel=0.002)
    assert est.inlier_ratio > 0.99
    # The scene does tell: the raw positions taken as rectified ones (before) are well off.
    before = reference_scale(relative, reference, plain, resolution).scale
    assert abs(before / SCALE - 1.0) > 0.01


@pytest.mark.timeout(60)
@pytest.mark.parametrize("camera", [CAMERAS["fisheye, R"], cs.RATIONAL,
                                    replace(cs.PINHOLE, r=cs.rotation_y(-3.0), name="R only")],
                         ids=["fisheye, R", "rational", "R only"])
def test_rectify_points_inverts_opencvs_rectify_maps(camera):
    """OpenCV's maps send each rectified pixel to a raw one (K, D, R, P); the raw pixel goes
    back to that rectified pixel."""
    info = camera.camera_info()
    k, d = np.reshape(info.k, (3, 3)), np.array(info.d)
    r, p = np.reshape(info.r, (3, 3)), np.reshape(info.p, (3, 4))[:, :3]
    build = (cv2.fisheye.initUndistortRectifyMap if camera.distortion_model == "equidistant"
             else cv2.initUndistortRectifyMap)
    map_x, map_y = build(k, d, r, p, (cs.W, cs.H), cv2.CV_32FC1)
    inside = (map_x >= 0) & (map_x <= cs.W - 1) & (map_y >= 0) & (map_y <= cs.H - 1)
    assert inside.mean() > 0.9
    grid_v, grid_u = np.nonzero(inside)
    pu, pv = CameraModel.from_camera_info(info).rectify_points(
        map_x[inside].astype(np.float64), map_y[inside].astype(np.float64))
    assert np.isfinite(pu).all()
    assert np.hypot(pu - grid_u, pv - grid_v).max() < 0.01  # float32 maps: 1e-4 px here


@pytest.mark.timeout(60)
def test_raw_pixels_outside_the_rectified_view_are_dropped():
    """The fisheye sees beyond P's grid (and beyond 90 degrees in its corners, where OpenCV's
    inversion does not converge): those reference pixels land nowhere (NaN), not somewhere."""
    wide = replace(cs.FISHEYE, k=cs.k_matrix(300.0, cs.CX, cs.CY), name="fisheye, fx 300")
    model = CameraModel.from_camera_info(wide.camera_info())
    u, v = np.meshgrid(np.arange(0.0, cs.W, 8.0), np.arange(0.0, cs.H, 8.0))
    pu, pv = model.rectify_points(u, v)
    seen = np.isfinite(pu)
    assert seen.any() and not seen.all()
    # On P's grid, each lands where its ray (the written-out inversion) meets it.
    p = wide.p
    on_grid = seen & (np.abs(pu - p[2]) < cs.W) & (np.abs(pv - p[6]) < cs.H)
    assert on_grid.sum() > 0.3 * on_grid.size
    xn, yn = cs.raw_pixel_rays(wide, u[on_grid], v[on_grid])
    np.testing.assert_allclose(pu[on_grid], p[0] * xn + p[2], atol=0.01)
    np.testing.assert_allclose(pv[on_grid], p[5] * yn + p[6], atol=0.01)
    # Rays more than 90 degrees off the axis have no place on a pinhole grid: the raw pixels
    # beyond the distorted radius of 90 degrees (Kannala-Brandt, written out).
    t = np.pi / 2
    beyond_90 = wide.k[0] * t * (1 + sum(c * t ** (2 * i + 2) for i, c in enumerate(wide.d)))
    behind = np.hypot(u - wide.k[2], v - wide.k[5]) > beyond_90
    assert behind.any() and not seen[behind].any()


@pytest.fixture(scope="module")
def da3():
    return load_pipeline(DA3_TEST_MODEL,
                         Settings(backend="cpu", depth_scale_source="reference_depth"),
                         log=lambda _: None)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("resolution", ["model", "input"])
def test_pipeline_scale_from_a_fisheye_reference(da3, resolution):
    """End to end: a raw fisheye frame painted so that the DA3 test model's relative depth is
    depth / SCALE, and a half-resolution reference registered to the raw image."""
    camera = CAMERAS["fisheye, R"]
    frame = cs.film(camera, RELATIVE, depth_of_colour=cs.DA3_DEPTH)
    pipe = type(da3)(da3.runner, da3.spec, replace(da3.config, fit="rotate",
                                                   output_resolution=resolution))
    raw = pipe.infer(frame, "rgb8", Request(depth=True), pipe.camera_from_info(
        camera.camera_info()))
    assert raw.rectified
    scaler = DepthScaler(ScaleConfig(source="reference_depth"))
    products = pipe.finish(raw, scaler=scaler, reference=reference_of(camera, TRUE, step=2))
    assert products.scale.metric
    assert products.scale.estimate == pytest.approx(SCALE, rel=0.002)
