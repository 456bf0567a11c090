# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Fit plans: every mode x orientation x output resolution, pixel and intrinsics round trips."""

import itertools
from dataclasses import replace

import cv2
import numpy as np
import pytest

import support.camera_scenes as cs
from dense_perception.core.geometry.camera_model import CameraModel
from dense_perception.core.geometry.fit import FIT_MODES, Interp, make_fit_plan
from dense_perception.core.geometry.intrinsics import Intrinsics

pytestmark = pytest.mark.numerics

FRAMES = [(1280, 720), (720, 1280), (640, 480), (500, 500)]
MODELS = [(504, 896), (448, 448)]  # DA3 (portrait) and TIPSv2 (square), as width x height


def coordinate_image(width, height):
    """A float image whose pixels hold their own camera coordinates (u, v)."""
    v, u = np.mgrid[0:height, 0:width].astype(np.float32)
    return np.dstack([u, v])


@pytest.mark.parametrize("frame,model,mode", list(itertools.product(FRAMES, MODELS, FIT_MODES)))
def test_plan_never_pads_and_keeps_aspect(frame, model, mode):
    plan = make_fit_plan(*frame, *model, mode)
    assert 0 <= plan.crop_x and plan.crop_x + plan.crop_width <= frame[0]
    assert 0 <= plan.crop_y and plan.crop_y + plan.crop_height <= frame[1]
    # Centred crop.
    assert abs(plan.crop_x * 2 + plan.crop_width - frame[0]) <= 1
    assert abs(plan.crop_y * 2 + plan.crop_height - frame[1]) <= 1
    region_aspect = plan.crop_width / plan.crop_height
    if plan.turned:
        region_aspect = 1 / region_aspect
    if mode == "stretch":
        assert (plan.crop_width, plan.crop_height) == frame and not plan.turned
    else:
        # Crop: no distortion beyond one pixel of rounding.
        assert region_aspect == pytest.approx(model[0] / model[1], rel=2 / min(frame))
        # One side of the frame is always used whole.
        assert plan.crop_width == frame[0] or plan.crop_height == frame[1]
    fitted = plan.fit_image(np.zeros((frame[1], frame[0], 3), np.uint8))
    assert fitted.shape == (model[1], model[0], 3)


def test_rotate_turns_landscape_camera_for_portrait_model():
    plan = make_fit_plan(1280, 720, 504, 896, "rotate")
    assert plan.turned
    # 720 x 1280 turned; 896/504 = 1.778 = 1280/720: the residual crop is tiny.
    assert plan.crop_height == 720 and plan.crop_width >= 1278
    crop = make_fit_plan(1280, 720, 504, 896, "crop")
    assert not crop.turned and crop.crop_width == 405  # crop keeps only a third of the view
    assert not make_fit_plan(720, 1280, 504, 896, "rotate").turned
    assert not make_fit_plan(1280, 720, 448, 448, "rotate").turned


@pytest.mark.parametrize("frame,model,mode", list(itertools.product(FRAMES, MODELS, FIT_MODES)))
def test_fit_then_unfit_returns_camera_coordinates(frame, model, mode):
    """Feeding a coordinate image through fit + unfit gives back each pixel's own coordinates."""
    plan = make_fit_plan(*frame, *model, mode)
    coords = coordinate_image(*frame)
    fitted = plan.fit_image(coords)
    # The model's own grid, published at model resolution: the coordinates there must be what
    # camera_to_published says.
    on_model = plan.unfit(fitted, "model", Interp.LINEAR)
    pw, ph = plan.published_size("model")
    assert on_model.shape[:2] == (ph, pw)
    u_pub, v_pub = plan.camera_to_published(on_model[..., 0], on_model[..., 1], "model")
    grid_v, grid_u = np.mgrid[0:ph, 0:pw]
    inner = (slice(2, -2), slice(2, -2))  # borders are clamped by the resize
    # INTER_AREA at fractional ratios jitters by up to ~1/3 pixel, with no systematic shift.
    assert np.abs(u_pub - grid_u)[inner].max() < 0.35
    assert np.abs(v_pub - grid_v)[inner].max() < 0.35
    assert abs(np.mean(u_pub - grid_u)) < 0.1 and abs(np.mean(v_pub - grid_v)) < 0.1
    # Full camera resolution: inside the crop each pixel holds (about) its own coordinates.
    full = plan.unfit(fitted, "input", Interp.LINEAR)
    assert full.shape[:2] == (frame[1], frame[0])
    ys = slice(plan.crop_y + 3, plan.crop_y + plan.crop_height - 3)
    xs = slice(plan.crop_x + 3, plan.crop_x + plan.crop_width - 3)
    cell = max(plan.crop_width / pw, plan.crop_height / ph)
    assert np.abs(full[ys, xs] - coords[ys, xs]).max() < cell + 0.5
    if (plan.crop_width, plan.crop_height) != frame:
        assert np.isnan(full[0, 0]).all() or np.isnan(full[-1, -1]).all()


def test_rotation_direction_is_clockwise_and_undone():
    plan = make_fit_plan(1280, 720, 504, 896, "rotate")
    frame = np.zeros((720, 1280, 3), np.uint8)
    frame[:10, :, 0] = 255  # red band along the camera's top edge
    fitted = plan.fit_image(frame)
    # Turned clockwise, the top edge becomes the right edge.
    assert fitted[:, -3:, 0].mean() > 200 and fitted[:, :3, 0].mean() < 5
    back = plan.unfit(fitted, "model", Interp.NEAREST)
    assert back.shape == (504, 896, 3)
    assert back[:3, :, 0].mean() > 200 and back[-3:, :, 0].mean() < 5


def test_unturn_vectors_matches_pixel_turn():
    """Vector fields along camera +x and +y, expressed in the turned frame, come back as +x and
    +y. Two directions, so a mirror (e.g. swapping x and y) cannot pass for the rotation."""
    plan = make_fit_plan(1280, 720, 504, 896, "rotate")
    for (dr, dc), expected in [((0, 100), [1, 0, 0]), ((100, 0), [0, 1, 0])]:
        # Draw an arrow along the camera direction and see where it points after turning.
        frame = np.zeros((720, 1280), np.uint8)
        frame[300, 600] = 1
        frame[300 + dr, 600 + dc] = 2
        turned = cv2.rotate(frame, cv2.ROTATE_90_CLOCKWISE)
        (r1, c1), (r2, c2) = [np.argwhere(turned == k)[0] for k in (1, 2)]
        arrow_turned = np.array([c2 - c1, r2 - r1, 0], np.float32)  # (x', y', z), turned frame
        arrow_turned /= np.linalg.norm(arrow_turned)
        field = np.broadcast_to(arrow_turned, (4, 4, 3)).copy()
        back = plan.unturn_vectors(field)
        np.testing.assert_allclose(back[0, 0], expected, atol=1e-6)
    # Unturned plans leave vectors alone.
    assert make_fit_plan(640, 480, 448, 448, "crop").unturn_vectors(field) is field


@pytest.mark.parametrize("frame,model,mode", list(itertools.product(FRAMES, MODELS, FIT_MODES)))
@pytest.mark.parametrize("resolution", ["model", "input"])
def test_intrinsics_follow_the_published_grid(frame, model, mode, resolution):
    """A 3D point projects to the same published pixel with the transformed K as via the plan."""
    plan = make_fit_plan(*frame, *model, mode)
    k = Intrinsics(fx=0.9 * frame[0], fy=0.95 * frame[0], cx=frame[0] / 2 + 7.3,
                   cy=frame[1] / 2 - 4.1, width=frame[0], height=frame[1])
    rng = np.random.default_rng(0)
    pts = rng.uniform([-1, -1, 1], [1, 1, 5], size=(50, 3))
    u = k.fx * pts[:, 0] / pts[:, 2] + k.cx
    v = k.fy * pts[:, 1] / pts[:, 2] + k.cy
    u_pub, v_pub = plan.camera_to_published(u, v, resolution)
    kp = plan.published_intrinsics(k, resolution)
    assert (kp.width, kp.height) == plan.published_size(resolution)
    np.testing.assert_allclose(kp.fx * pts[:, 0] / pts[:, 2] + kp.cx, u_pub, atol=1e-9)
    np.testing.assert_allclose(kp.fy * pts[:, 1] / pts[:, 2] + kp.cy, v_pub, atol=1e-9)


@pytest.mark.timeout(30)
@pytest.mark.parametrize("model,mode", list(itertools.product(MODELS, FIT_MODES)))
@pytest.mark.parametrize("resolution", ["model", "input"])
def test_rectifying_plan_maps_raw_pixels_like_the_rectified_camera(model, mode, resolution):
    """A point (rectified frame) seen by a raw fisheye camera turned by R: OpenCV's forward
    model gives its raw pixel; the rectifying plan maps that raw pixel to where the published
    intrinsics project the point."""
    fisheye = replace(cs.FISHEYE, r=cs.rotation_y(4.0))
    camera = CameraModel.from_camera_info(fisheye.camera_info())
    plan = make_fit_plan(cs.W, cs.H, *model, mode).rectifying(camera)
    rng = np.random.default_rng(1)
    pts = rng.uniform([-1, -0.6, 1], [1, 0.6, 2], size=(200, 3))  # within P's view
    raw_pts = pts @ np.reshape(fisheye.r, (3, 3))  # R^T: back into the raw camera's frame
    raw = cv2.fisheye.projectPoints(raw_pts.reshape(-1, 1, 3), np.zeros(3), np.zeros(3),
                                    np.reshape(fisheye.k, (3, 3)), np.array(fisheye.d))[0]
    u_pub, v_pub = plan.camera_to_published(raw[:, 0, 0], raw[:, 0, 1], resolution)
    kp = plan.published_intrinsics(camera.intrinsics(), resolution)
    np.testing.assert_allclose(kp.fx * pts[:, 0] / pts[:, 2] + kp.cx, u_pub, atol=1e-3)
    np.testing.assert_allclose(kp.fy * pts[:, 1] / pts[:, 2] + kp.cy, v_pub, atol=1e-3)


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="fit mode 'letterbox' is unknown"):
        make_fit_plan(640, 480, 448, 448, "letterbox")
    with pytest.raises(ValueError, match="empty"):
        make_fit_plan(0, 480, 448, 448, "crop")
    plan = make_fit_plan(640, 480, 448, 448, "crop")
    with pytest.raises(ValueError, match="plan expects 640x480"):
        plan.fit_image(np.zeros((10, 10, 3), np.uint8))
