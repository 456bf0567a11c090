# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The ground plane on a street (support/road_scene.py: a road, a kerb and a raised pavement,
parked and moving cars, building fronts): the road's plane, or an error wide enough that the
default ``max_scale_error`` withholds the scale, never a wrong scale claiming a narrow one."""

from dataclasses import replace

import numpy as np
import pytest

from support.road_scene import Street

from dense_perception.core.geometry.fit import make_fit_plan
from dense_perception.core.geometry.intrinsics import Intrinsics
from dense_perception.core.scale.estimators import ground_plane_scale
from dense_perception.core.scale.metric_scale import DepthScaler, ScaleConfig

pytestmark = [pytest.mark.numerics, pytest.mark.timeout(60)]
S = 3.0  # metres per relative unit of the painted depth
BOUND = ScaleConfig("ground_plane").max_scale_error  # the default bound on 2 sigma


def estimate(street: Street):
    z, surface = street.depth()
    assert np.isfinite(z).all() and (surface >= 0).all()
    k = Intrinsics(street.fx, street.fx, (street.width - 1) / 2, (street.height_px - 1) / 2,
                   street.width, street.height_px)
    return ground_plane_scale((z / S).astype(np.float32), k, street.height), surface


@pytest.mark.parametrize("pitch", [0.0, 3.0, 8.0])
def test_the_road_beside_a_raised_pavement_and_cars(pitch):
    """The road holds most of the lower view: its plane, to within the claimed error."""
    est, surface = estimate(Street(pitch_deg=pitch))
    lower = surface[surface.shape[0] // 2:]
    assert (lower == 1).mean() > 0.04 and (lower == 4).mean() > 0.02  # pavement, cars in view
    assert est.scale is not None, est.reason
    assert abs(est.scale / S - 1) <= min(2 * est.sigma, 0.01)
    assert np.expm1(2 * est.sigma) <= BOUND  # published


@pytest.mark.parametrize("kerb_x", [0.3, 0.8, -1.0])
def test_a_camera_over_the_kerb_gets_the_road_or_withholds(kerb_x):
    """The kerb near the camera's line: road and pavement (15 cm up: 10 % of the camera's
    height) share the lower view. Either two planes are named and nothing published, or the
    plane found is within its claimed error of the road's and, where that error is within the
    default bound, within 2 % of it."""
    est, surface = estimate(Street(kerb_x=kerb_x))
    lower = surface[surface.shape[0] // 2:]
    assert (lower == 1).mean() > 0.3 and (lower == 0).mean() > 0.15
    if est.scale is None:
        assert "two level planes" in est.reason or "holds" in est.reason, est.reason
        return
    error = abs(est.scale / S - 1)
    assert error <= 2 * est.sigma, (error, est.sigma)
    if np.expm1(2 * est.sigma) <= BOUND:
        assert error <= 0.02, (error, est.sigma)


def test_a_high_kerb_is_not_taken_for_the_road():
    """A 30 cm kerb a metre to the right: the road's plane, not the pavement's (20 % higher)."""
    est, _ = estimate(replace(Street(), kerb_x=1.0, kerb_height=0.3))
    assert est.scale is not None, est.reason
    assert abs(est.scale / S - 1) <= 0.01


def stream(street: Street, frames: int = 20) -> list:
    """The scale as the node reports it (:class:`DepthScaler`, its filter) over ``frames``
    frames of the same view at 10 Hz: a car waiting at a light."""
    z, _ = street.depth()
    k = Intrinsics(street.fx, street.fx, (street.width - 1) / 2, (street.height_px - 1) / 2,
                   street.width, street.height_px)
    plan = make_fit_plan(street.width, street.height_px, street.width, street.height_px, "crop")
    scaler = DepthScaler(ScaleConfig("ground_plane", camera_height=street.height))
    relative = (z / S).astype(np.float32)
    return [scaler.update(0.1 * i, relative, k, plan, "model") for i in range(frames)]


@pytest.mark.parametrize("kerb_x", [None, 0.3, 0.8, -1.0])
def test_a_steady_view_is_not_surer_than_its_floor(kerb_x):
    """Frames of one view repeat its floor's scatter: the filter may not average it away. Over
    the road, the scale is published and right; over the kerb, every frame the node publishes
    (if any) is within 2 % of the road's scale, however long the view stays."""
    street = Street() if kerb_x is None else replace(Street(), kerb_x=kerb_x)
    reports = stream(street)
    published = [r for r in reports if r.metric]
    for report in published:
        assert abs(report.scale / S - 1) <= 0.02, (report.scale / S, report.sigma)
    if kerb_x is None:
        assert len(published) == len(reports)
