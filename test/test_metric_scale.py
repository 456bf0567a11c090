# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The metric-scale estimators and filter (core, no ROS, no model) against known scenes."""

import math

import numpy as np
import pytest

from tools.common.metric_scene import (DESK_BESIDE_FLOOR, DESK_ONLY, FORWARD, HEIGHT, PITCHED_WITH_BOX,
                                WIDTH, Scene, da3_output_of, paint, sparse_reference)
from dense_perception.core.geometry.fit import make_fit_plan
from dense_perception.core.geometry.intrinsics import Intrinsics
from dense_perception.core.scale.metric_scale import (DepthScaler, ScaleConfig,
                                                      relative_output_problem, scale_diagnostics)
from dense_perception.core.scale.estimators import (ground_plane_scale, reference_scale,
                                                    reference_to_metres)
from dense_perception.core.scale.scale_filter import ScaleFilter
from dense_perception.core.scale.ground_plane import ground_points, level_planes
from dense_perception.core.settings.row import SettingError
from dense_perception.core.settings.table import Settings

pytestmark = pytest.mark.numerics



def intrinsics(scene):
    return Intrinsics(scene.fx, scene.fx, scene.cx, scene.cy, WIDTH, HEIGHT)


@pytest.mark.parametrize("scene,s", [(FORWARD, 0.75), (FORWARD, 3.0), (PITCHED_WITH_BOX, 0.35),
                                     (Scene(0.3, 25.0, 1.0), 0.1)])
def test_ground_plane_scale_recovers_s(scene, s):
    z, _ = scene.depth_and_surface()
    est = ground_plane_scale((z / s).astype(np.float32), intrinsics(scene), scene.height)
    assert est.scale == pytest.approx(s, rel=0.01)
    # The plane found is the floor: its normal is the world's down direction.
    assert np.dot(est.normal, scene.down()) > math.cos(math.radians(1.0))
    assert est.inlier_ratio > 0.5


def test_ground_plane_rejects_walls_and_says_why():
    """Only a wall in the lower view: the tilt prior refuses it, no scale."""
    wall = np.full((HEIGHT, WIDTH), 2.0, np.float32)
    est = ground_plane_scale(wall, intrinsics(FORWARD), 1.0)
    assert est.scale is None and "no plane within 30 deg" in est.reason


def test_ground_plane_ignores_clutter():
    """Half the lower view is random clutter: the floor (50 % of the points) still wins."""
    z, _ = FORWARD.depth_and_surface()
    rel = (z / 2.0).astype(np.float32)
    rng = np.random.default_rng(1)
    rel[600:, :WIDTH // 2] = rng.uniform(0.3, 1.5, (HEIGHT - 600, WIDTH // 2))
    est = ground_plane_scale(rel, intrinsics(FORWARD), FORWARD.height)
    assert est.scale == pytest.approx(2.0, rel=0.02)


@pytest.mark.parametrize("scene,s", [(FORWARD, 0.75), (PITCHED_WITH_BOX, 0.35)])
def test_foot_of_the_wall_does_not_bias_the_floor(scene, s):
    """The frame as the node sees it (8-bit painted colour through the test model's formula):
    whatever RANSAC draws, the floor's distance is right to 0.1 %. The wall's and the box's
    lowest rows lie within the 4 % inlier band of the floor and used to pull its fit by up to
    0.9 % (a level camera facing a wall), depending on the draw."""
    z, surface = scene.depth_and_surface()
    rel = da3_output_of(paint(z / s)).astype(np.float32)
    points = ground_points(rel, intrinsics(scene))
    for seed in range(32):
        floor = level_planes(points, seed=seed)[0]  # the largest level plane
        assert scene.height / floor.d == pytest.approx(s, rel=0.001), seed
        assert np.dot(floor.normal, scene.down()) > math.cos(math.radians(0.1))
        assert floor.share > 0.5  # the share of the points in its inlier band


def test_level_plane_on_exact_points():
    rng = np.random.default_rng(3)
    n = np.array([0.0, math.cos(0.3), math.sin(0.3)])
    a = np.cross(n, [1.0, 0.0, 0.0])
    pts = 0.8 * n + rng.uniform(-2, 2, (500, 1)) * a + rng.uniform(-2, 2, (500, 1)) * \
        np.array([1.0, 0.0, 0.0])
    plane = level_planes(pts)[0]
    assert plane.d == pytest.approx(0.8, rel=1e-6)
    assert np.dot(plane.normal, n) == pytest.approx(1.0, abs=1e-9)
    assert plane.share == 1.0  # every point in its inlier band


@pytest.mark.parametrize("s", [0.4, 2.5])
def test_reference_scale_with_sparse_pixels_and_outliers(s):
    z, _ = PITCHED_WITH_BOX.depth_and_surface()
    rng = np.random.default_rng(7)
    ref, bad = sparse_reference(z, 0.01, 0.10, rng)
    assert 0.08 < bad < 0.12
    plan = make_fit_plan(WIDTH, HEIGHT, WIDTH, HEIGHT, "crop")
    est = reference_scale((z / s).astype(np.float32), ref, plan, "model")
    assert est.scale == pytest.approx(s, rel=0.005)
    assert 0.85 < est.inlier_ratio < 0.95  # the outliers (plus a few lucky ones) rejected


def test_reference_at_half_resolution_maps_through_the_crop():
    """A 640x360 reference of a 1280x720 camera, the model fed a centre crop."""
    rng = np.random.default_rng(2)
    u, v = np.meshgrid(np.arange(1280), np.arange(720))
    z_cam = 1.0 + u / 1280.0 + v / 720.0   # a smooth metric depth over the camera's view
    plan = make_fit_plan(1280, 720, 504, 896, "crop")
    rel = plan.unfit(plan.fit_image(z_cam.astype(np.float32)) / 1.7, "model",
                     __import__("dense_perception.core.geometry.fit", fromlist=["Interp"]).Interp.LINEAR)
    ref = z_cam[::2, ::2].astype(np.float32).copy()  # pixel centres: within half a pixel
    ref[rng.random(ref.shape) < 0.5] = 0.0
    est = reference_scale(rel, reference_to_metres(ref, "32FC1"), plan, "model")
    assert est.scale == pytest.approx(1.7, rel=0.01)


def test_reference_to_metres():
    mm = np.array([[0, 1500]], np.uint16)
    m = reference_to_metres(mm, "16UC1")
    assert np.isnan(m[0, 0]) and m[0, 1] == pytest.approx(1.5)
    with pytest.raises(ValueError, match="16UC1 .mm. or 32FC1"):
        reference_to_metres(mm, "mono8")


def test_too_few_reference_pixels_give_no_scale():
    plan = make_fit_plan(WIDTH, HEIGHT, WIDTH, HEIGHT, "crop")
    ref = np.zeros((HEIGHT, WIDTH), np.float32)
    ref[10, 10:20] = 1.0
    est = reference_scale(np.ones((HEIGHT, WIDTH), np.float32), ref, plan, "model")
    assert est.scale is None and "only 10 valid reference pixels" in est.reason


def run_filter(truths, noise, tau, dt=0.1, seed=0):
    rng = np.random.default_rng(seed)
    f = ScaleFilter(tau)
    out = []
    for i, truth in enumerate(truths):
        out.append(f.update(i * dt, truth * (1.0 + rng.uniform(-noise, noise))))
    return np.array(out), f


def test_filter_is_steady_under_10_percent_noise():
    tau, dt = 2.0, 0.1
    published, f = run_filter([1.3] * 200, 0.10, tau, dt)
    settled = published[int(2 * tau / dt):]
    moves = np.abs(np.diff(settled)) / settled[:-1]
    assert moves.max() < 0.01
    assert np.abs(settled / 1.3 - 1).max() < 0.03
    assert 0.04 < f.spread() < 0.09  # uniform +-10 %: 1.4826 x MAD = 0.074


def test_filter_follows_a_step_within_its_time_constant():
    tau, dt = 2.0, 0.1
    truths = [1.3] * 100 + [2.1] * 100
    published, _ = run_filter(truths, 0.10, tau, dt, seed=4)
    after = published[100 + int(tau / dt):]
    assert np.abs(after / 2.1 - 1).max() < 0.03
    # ... and a smaller change (10 %, within the noise) is followed exponentially.
    published, _ = run_filter([1.0] * 100 + [1.1] * 200, 0.02, tau, dt, seed=5)
    assert published[100 + int(tau / dt)] == pytest.approx(1.0 + 0.1 * (1 - math.exp(-1)),
                                                           abs=0.02)
    assert published[-1] == pytest.approx(1.1, rel=0.01)


def test_filter_holds_the_last_good_scale():
    f = ScaleFilter(1.0)
    assert f.update(0.0, None) is None
    for i in range(5):
        f.update(0.1 * i, 2.0)
    assert f.update(5.0, None) == pytest.approx(2.0) and f.last_good_t == pytest.approx(0.4)
    assert f.update(6.0, float("nan")) == pytest.approx(2.0)


def test_scaler_reports_and_warns():
    scaler = DepthScaler(ScaleConfig("ground_plane", camera_height=1.0, time_constant=1.0))
    wall = np.full((HEIGHT, WIDTH), 2.0, np.float32)
    plan = make_fit_plan(WIDTH, HEIGHT, WIDTH, HEIGHT, "crop")
    report = scaler.update(0.0, wall, intrinsics(FORWARD), plan, "model")
    values, warning = scale_diagnostics(report)
    assert report.scale is None and not report.metric
    assert "withheld" in warning and values["depth scale (m per unit)"] == "-"
    z, _ = FORWARD.depth_and_surface()
    # The age rule alone (no error bound): max_scale_error 1.
    scaler.configure(ScaleConfig("ground_plane", camera_height=FORWARD.height,
                                 time_constant=1.0, max_scale_error=1.0))
    report = scaler.update(0.1, (z / 0.5).astype(np.float32), intrinsics(FORWARD), plan, "model")
    assert report.metric and report.scale == pytest.approx(0.5, rel=0.01)
    assert scale_diagnostics(report)[1] == ""
    report = scaler.update(20.0, wall, intrinsics(FORWARD), plan, "model")  # held, stale
    assert report.scale == pytest.approx(0.5, rel=0.01) and report.age_s == pytest.approx(19.9)
    assert "held for 19.9 s" in scale_diagnostics(report)[1]


def test_bad_settings_are_refused_with_the_fix():
    assert "needs camera_height" in ScaleConfig("ground_plane").problem()
    assert "use depth_encoding 32FC1" in relative_output_problem(False, "none", 0.0, "16UC1")
    assert "set max_depth to 0" in relative_output_problem(False, "none", 5.0, "32FC1")
    assert relative_output_problem(True, "none", 5.0, "16UC1") is None
    assert relative_output_problem(False, "fixed", 5.0, "16UC1") is None


def test_ground_points_sample_the_lower_view():
    depth = np.ones((HEIGHT, WIDTH), np.float32)
    pts = ground_points(depth, intrinsics(FORWARD))
    assert 2000 < len(pts) < 4000 and (pts[:, 1] >= -1e-6).all()


def test_pipeline_applies_the_scale_and_withholds_until_found():
    """Through the real pipeline and the DA3 test model: relative depth (none) gives no points;
    ground_plane without a floor withholds depth and points but keeps the colour view; with a
    floor, depth and points are metres."""
    from support.common import DA3_TEST_MODEL
    from dense_perception.core.pipeline import load_pipeline
    from dense_perception.core.frame_data import Request
    from tools.common.metric_scene import paint
    request = Request(depth=True, depth_colored=True, points=True)
    z, _ = FORWARD.depth_and_surface()
    frame = paint(z / 0.75)
    k = intrinsics(FORWARD)
    relative = load_pipeline(DA3_TEST_MODEL, Settings(backend="cpu"), log=lambda _: None)
    products = relative.process(frame, "rgb8", k, request)
    assert products.points is None and not products.depth_metric
    assert np.abs(products.depth - z / 0.75).max() < 0.003
    assert "points withheld: depth is relative" in products.withheld
    pipeline = load_pipeline(DA3_TEST_MODEL,
                             Settings(backend="cpu", depth_scale_source="ground_plane",
                                      points_stride=1),
                             log=lambda _: None)  # every pixel
    scaler = DepthScaler(ScaleConfig("ground_plane", camera_height=FORWARD.height))
    wall = paint(np.full((HEIGHT, WIDTH), 2.0))
    raw = pipeline.infer(wall, "rgb8", request)
    products = pipeline.finish(raw, k, scaler, 0.0)
    assert products.depth is None and products.points is None
    assert products.depth_colored is not None and "withheld" in products.withheld
    raw = pipeline.infer(frame, "rgb8", request)
    products = pipeline.finish(raw, k, scaler, 0.1)
    assert products.depth_metric and np.abs(products.depth / z - 1).max() < 0.03
    assert len(products.points) > 0.9 * z.size


# ---- the floor, not the largest level surface; a held scale expires; photos --------------------
def painted(scene, s):
    """The relative depth the DA3 test model gives for ``scene`` painted at scale ``s``."""
    z, surface = scene.depth_and_surface()
    return da3_output_of(paint(z / s)).astype(np.float32), z, surface


def test_the_floor_beside_a_larger_desk_not_the_desk():
    """Camera 1.0 m up, a desk top 0.4 m below it covering more of the lower view (25 %) than
    the floor beside it (17 %): the floor is found (taking the desk gave every depth 2.5x)."""
    rel, z, surface = painted(DESK_BESIDE_FLOOR, 0.85)
    low = surface[HEIGHT // 2:]
    assert 0.15 < (low == 0).mean() < 0.2 and (low == 2).mean() > 0.5  # as the scene says
    k = intrinsics(DESK_BESIDE_FLOOR)
    est = ground_plane_scale(rel, k, 1.0, min_inlier_ratio=0.15)
    assert est.scale == pytest.approx(0.85, rel=0.01), est
    assert np.dot(est.normal, DESK_BESIDE_FLOOR.down()) > math.cos(math.radians(1.0))
    # With the default 30 %, this floor is too small to use: no estimate, never the desk's.
    est = ground_plane_scale(rel, k, 1.0)
    assert est.scale is None
    assert "the robot's floor (the level plane at the foot of the view) holds 1" in est.reason
    assert "(< 30%)" in est.reason


def test_a_desk_with_no_floor_in_view_gives_no_scale():
    """Only a desk (its top 38 %, its front face 49 % of the lower view, the floor hidden):
    the desk is the lowest level plane, but more lies beneath it than on it: not a floor."""
    rel, _, _ = painted(DESK_ONLY, 0.85)
    for ratio in (0.15, 0.3):
        est = ground_plane_scale(rel, intrinsics(DESK_ONLY), 1.0, min_inlier_ratio=ratio)
        assert est.scale is None and "raised surface" in est.reason, est
        assert "lies beneath it" in est.reason


def test_a_jump_is_not_used_unless_it_persists():
    """Settled on the floor's scale, one frame whose estimate is 2.5x off (a desk) moves
    nothing and diagnostics say why; the same jump for a third of the time constant is a new
    scene, taken over."""
    scaler = DepthScaler(ScaleConfig("ground_plane", camera_height=FORWARD.height,
                                     time_constant=1.0))
    plan = make_fit_plan(WIDTH, HEIGHT, WIDTH, HEIGHT, "crop")
    z, _ = FORWARD.depth_and_surface()
    k = intrinsics(FORWARD)
    for i in range(10):
        report = scaler.update(0.1 * i, (z / 0.5).astype(np.float32), k, plan, "model")
    assert report.scale == pytest.approx(0.5, rel=1e-3)
    settled = report.scale
    far = (z / 1.25).astype(np.float32)   # this frame's own estimate: 2.5x the scale
    report = scaler.update(1.0, far, k, plan, "model")
    assert report.estimate == pytest.approx(1.25, rel=1e-3)
    assert report.scale == settled and report.metric
    values, _ = scale_diagnostics(report)
    assert "2.50x the filtered scale" in values["depth scale note"]
    for i in range(2, 6):
        report = scaler.update(1.0 + 0.1 * (i - 1), far, k, plan, "model")
    assert report.scale == pytest.approx(1.25, rel=1e-3) and report.reason == ""


def test_a_slow_camera_still_takes_a_scene_change_over():
    """0.4 Hz with the default 5 s time constant: fewer than 3 estimates per third of it. A new
    scene (2x) is taken over at its third estimate, not refused as a jump until it expires."""
    f = ScaleFilter(5.0, max_age=50.0)
    for t in (0.0, 2.5, 5.0, 7.5):
        f.update(t, 1.0)
    assert f.update(10.0, 2.0) == 1.0 and f.update(12.5, 2.0) == 1.0 and f.note
    assert f.update(15.0, 2.0) == pytest.approx(2.0)


def test_the_filter_window_stays_bounded_when_stamps_do_not_advance():
    f = ScaleFilter(5.0)
    for i in range(3000):
        f.update(0.0, 1.0 + 0.01 * (i % 3))     # a driver that stamps every frame 0
    assert len(f._window) <= 256
    for i in range(3000):
        f.update(1.0 + (i // 1000), 1.0)         # repeated stamps
    assert len(f._window) <= 256
    assert f.scale == pytest.approx(1.0, rel=0.02)


def test_a_held_scale_expires_after_max_age():
    """Floor until t = 1 s, then a wall: the scale is held until 3 s after the last floor
    (depth_scale_max_age), then withheld with a WARN giving the age and the reason; the next
    floor gives a fresh scale (its own, not mixed with the old one). Max age 0 holds forever."""
    plan = make_fit_plan(WIDTH, HEIGHT, WIDTH, HEIGHT, "crop")
    k = intrinsics(FORWARD)
    z, _ = FORWARD.depth_and_surface()
    wall = np.full((HEIGHT, WIDTH), 2.0, np.float32)
    for max_age in (3.0, 0.0):
        scaler = DepthScaler(ScaleConfig("ground_plane", camera_height=FORWARD.height,
                                         time_constant=1.0, max_age=max_age,
                                         max_scale_error=1.0))  # the age rule alone
        for t in (0.0, 0.5, 1.0):
            scaler.update(t, (z / 0.5).astype(np.float32), k, plan, "model")
        held = scaler.update(4.0, wall, k, plan, "model")
        assert held.metric and held.scale == pytest.approx(0.5, rel=1e-3)
        late = scaler.update(4.1, wall, k, plan, "model")
        if max_age == 0.0:
            assert late.metric and scaler.update(1000.0, wall, k, plan, "model").metric
            continue
        assert late.scale is None and not late.metric and late.expired
        values, warning = scale_diagnostics(late)
        assert warning.startswith("depth scale expired: no trustworthy estimate for 3.1 s")
        assert "depth_scale_max_age 3 s" in warning and "no plane within 30 deg" in warning
        assert "withheld" in warning and values["depth scale age (s)"] == "3.10"
        fresh = scaler.update(5.0, (z / 0.8).astype(np.float32), k, plan, "model")
        assert fresh.metric and fresh.scale == pytest.approx(0.8, rel=1e-3)
        # A runtime change (the node's parameter callback) applies from the next frame.
        scaler.configure(ScaleConfig("ground_plane", camera_height=FORWARD.height,
                                     time_constant=1.0, max_age=0.5, max_scale_error=1.0))
        assert not scaler.update(5.6, wall, k, plan, "model").metric
    with pytest.raises(SettingError, match="depth_scale_max_age must be >= 0, got -1"):
        Settings(depth_scale_max_age=-1.0)  # the table checks it, before any ScaleConfig


def test_per_frame_scales_are_each_frames_own():
    """Unrelated photos: no filter, no hold; a photo without a floor has no scale."""
    scaler = DepthScaler(ScaleConfig("ground_plane", camera_height=FORWARD.height,
                                     per_frame=True))
    plan = make_fit_plan(WIDTH, HEIGHT, WIDTH, HEIGHT, "crop")
    z, _ = FORWARD.depth_and_surface()
    k = intrinsics(FORWARD)
    for t, s in enumerate((0.5, 0.7, 0.35)):
        report = scaler.update(float(t), (z / s).astype(np.float32), k, plan, "model")
        assert report.scale == pytest.approx(s, rel=1e-3) and report.metric
    report = scaler.update(3.0, np.full((HEIGHT, WIDTH), 2.0, np.float32), k, plan, "model")
    assert report.scale is None and not report.metric and "no plane" in report.reason


# ---- the filter belongs to one camera ------------------------------------------------------------
def test_a_change_of_intrinsics_restarts_the_filter():
    """Four frames through a 420 px lens, then the camera zooms to 600 px and DA3's own scale
    of the new view is 1.6x the old one: the first zoomed frame is metres (the filter starts
    afresh), where the old filter refused its estimate as a jump and held the old scale."""
    from support.common import DA3_TEST_MODEL
    from dense_perception.core.pipeline import load_pipeline
    from dense_perception.core.frame_data import Request
    pipeline = load_pipeline(DA3_TEST_MODEL,
                             Settings(backend="cpu", depth_scale_source="ground_plane"),
                             log=lambda _: None)
    scaler = DepthScaler(ScaleConfig("ground_plane", camera_height=FORWARD.height))
    zoomed = Scene(FORWARD.height, FORWARD.pitch_deg, FORWARD.wall, fx=600.0)
    request = Request(depth=True)
    published = []
    for i, (scene, s) in enumerate([(FORWARD, 0.75)] * 4 + [(zoomed, 1.2)] * 2):
        z, _ = scene.depth_and_surface()
        raw = pipeline.infer(paint(z / s), "rgb8", request, intrinsics(scene))
        products = pipeline.finish(raw, None, scaler, 0.1 * i)
        published.append((float(np.median(products.depth / z)),
                          getattr(products.scale, "restarted", None)))
    assert all(abs(ratio - 1) < 0.02 for ratio, _ in published), published
    assert [restarted for _, restarted in published] == [False] * 4 + [True, False]


def test_a_guessed_camera_is_marked_and_warned():
    report = DepthScaler(ScaleConfig("ground_plane", camera_height=FORWARD.height)).update(
        0.0, (FORWARD.depth_and_surface()[0] / 0.75).astype(np.float32), intrinsics(FORWARD),
        make_fit_plan(WIDTH, HEIGHT, WIDTH, HEIGHT, "crop"), "model", camera="guess",
        guessed=True)
    assert report.guessed and report.scale == pytest.approx(0.75, rel=0.01)
    values, warning = scale_diagnostics(report)
    assert values["depth scale camera"] == "guessed pinhole (fallback_hfov_deg)"
    assert "guessed camera" in warning and "as wrong as the guess" in warning
