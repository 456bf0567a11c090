# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Every estimated scale carries its error: the motion scale's from its own pixels (regions and
depth bands of the view, the epipolar residual), the filter's from its estimates and the time
since; metres are published only within ``max_scale_error``. Checked in the painted world,
whose true scale is known, with the network's depth bent by a known shape error."""

import math

import numpy as np
import pytest

from support.moving_scene import K, path, render
from dense_perception.core.motion.motion_scale import MotionScale
from dense_perception.core.scale.metric_scale import DepthScaler, ScaleConfig
from dense_perception.core.scale.scale_filter import DRIFT_PER_S, ScaleFilter

pytestmark = [pytest.mark.numerics, pytest.mark.timeout(120)]
S = 3.7  # the unknown factor: relative depth = true depth / S


def estimates(shape):
    """The motion scale's estimates over the painted path, the network's depth being
    ``shape(true depth)`` (its truth bent), with the true scale of each frame: the median of
    truth / network depth over the view (what a published frame is judged by)."""
    scaler = MotionScale(min_baseline=0.1)
    out = []
    for i, pose in enumerate(path(40)):
        grey, depth = render(pose)
        network = shape(depth).astype(np.float32)
        est = scaler.estimate(i / 30, pose, network, K, grey)
        if est.scale is not None:
            truth = float(np.nanmedian(depth / network))
            out.append((est.scale, est.sigma, truth))
    return out


def test_exact_depth_gives_a_small_error_that_covers_the_truth():
    found = estimates(lambda z: z / S)
    assert len(found) >= 25
    for scale, sigma, truth in found:
        assert 0.02 <= sigma < 0.06
        assert abs(math.log(scale / truth)) <= 2 * sigma


@pytest.mark.parametrize("name,shape", [
    ("a power law", lambda z: (z / S) ** 1.6),          # measured = a * predicted^b, b = 0.6
    ("a tilt", lambda z: z / S * np.linspace(0.7, 1.3, z.shape[1], dtype=np.float32)[None, :]),
])
def test_a_bent_network_gets_an_error_that_still_covers_the_truth(name, shape):
    """The flow trusts some pixels more than others; with the network's depth bent, their ratio
    is not the view's: the error grows to cover it (the truth within 2 sigma), never claims
    less than the exact network's."""
    exact = np.median([s for _, s, _ in estimates(lambda z: z / S)])
    found = estimates(shape)
    assert len(found) >= 20, name
    within = [abs(math.log(scale / truth)) <= 2 * sigma for scale, sigma, truth in found]
    assert np.mean(within) >= 0.9, name
    assert np.median([s for _, s, _ in found]) > exact, name


def test_a_trajectory_in_millimetres_is_refused_with_the_reason():
    scaler = MotionScale(min_baseline=0.1)
    reasons = set()
    for i, pose in enumerate(path(20)):
        grey, depth = render(pose)
        mm = pose.copy()
        mm[:3, 3] *= 1000.0
        est = scaler.estimate(i / 30, mm, depth / S, K, grey)
        assert est.scale is None
        reasons.add(est.reason)
    assert any("are the poses in metres, not millimetres?" in r for r in reasons), reasons


def motion_scales(unit: float, max_depth: float) -> list:
    """The scaler's reports over the painted path walked slowly (one frame a second), its
    poses' translation multiplied by ``unit`` (100: centimetres read as metres)."""
    motion, scaler = MotionScale(min_baseline=0.1), DepthScaler(ScaleConfig(
        "motion", max_scale_error=1.0, max_depth=max_depth))
    reports = []
    for i, pose in enumerate(path(12, step=0.05)):
        grey, depth = render(pose)
        scaled = pose.copy()
        scaled[:3, 3] *= unit
        relative = (depth / S).astype(np.float32)
        est = motion.estimate(float(i), scaled, relative, K, grey)
        reports.append(scaler.update(float(i), relative, K, None, "input", estimate=est))
    return reports


def test_poses_in_centimetres_put_the_view_past_max_depth_and_are_refused():
    """Centimetres read as metres, walked slowly enough to pass the speed check, put the
    painted room (2-5 m) about 100x too far: beyond max_depth (20 m) everywhere, so no scale
    is taken, with the question that finds the cause; the same walk in metres is measured
    right (within 5 %)."""
    wrong = motion_scales(100.0, 20.0)
    assert all(report.scale is None for report in wrong)
    assert any("are the poses in metres?" in report.reason for report in wrong), \
        [r.reason for r in wrong]
    right = [r for r in motion_scales(1.0, 20.0) if r.scale is not None]
    assert len(right) >= 5
    for report in right:
        assert abs(report.scale / S - 1) < 0.05


def test_a_held_scale_expires_by_its_error_not_its_age():
    """Estimates of 2 % each for three seconds (errors shared within a second) make the scale
    surer than one; held, its variance grows
    by the drift each second until 2 sigma passes max_scale_error, when the depth is withheld
    with the reason (the written-out Kalman recursion gives the moment)."""
    f = ScaleFilter(5.0)
    for i in range(91):
        f.update(i / 30, 2.0, 0.02)
    sigma = f.sigma
    assert sigma < 0.03  # the drift keeps it above the estimates: sqrt(drift * 2 % * 1 s)
    # variance(t) = sigma^2 + drift^2 * (t - 3): 2 sigma(t) = 0.08 at this t.
    limit = 3.0 + (0.04 ** 2 - sigma ** 2) / DRIFT_PER_S ** 2
    scaler = DepthScaler(ScaleConfig("motion", max_scale_error=0.08))
    scaler.filter = f
    from dense_perception.core.scale.estimators import Estimate
    from dense_perception.core.geometry.intrinsics import Intrinsics
    k = Intrinsics(100.0, 100.0, 32.0, 24.0, 64, 48)
    depth = np.ones((48, 64), np.float32)
    before = scaler.update(limit - 0.1, depth, k, None, "model", estimate=Estimate(None, reason="x"))
    after = scaler.update(limit + 0.1, depth, k, None, "model", estimate=Estimate(None, reason="x"))
    assert before.metric and before.scale == pytest.approx(2.0)
    assert not after.metric and after.bounded_out and "exceeds max_scale_error (8 %)" in after.reason


def test_an_estimate_beyond_both_errors_is_said_to_disagree():
    f = ScaleFilter(5.0)
    for i in range(10):
        f.update(i / 30, 1.0, 0.02)
    f.update(10 / 30, 1.5, 0.02)      # 40 % off with 2 % errors: a jump, said so
    assert f.disagrees
    f.update(11 / 30, 1.01, 0.02)
    assert not f.disagrees


def test_an_estimates_systematic_part_is_never_averaged_away():
    """A minute of estimates of one view, each 4 % off, 3.5 % of it systematic (the same in
    every frame): the filter's error is what the estimates' errors make it, but never below
    the systematic part; without one, a minute of them claims less."""
    steady, plain = ScaleFilter(5.0), ScaleFilter(5.0)
    for i in range(600):
        steady.update(i / 10, 2.0, 0.04, systematic=0.035)
        plain.update(i / 10, 2.0, 0.04)
        assert steady.sigma == pytest.approx(max(plain.sigma, 0.035))
    assert plain.sigma < 0.035 < steady.sigma + 1e-12
