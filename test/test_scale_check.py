# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""``depth_scale_check: ground_plane`` beside ``depth_scale_source: motion``: the floor checks the
motion in the same filter. In the painted world (a textured wall and floor, the floor 1 m
below the camera) with the true trajectory the two agree and the scale is right, surer than
the motion's alone; with a trajectory twice too long, which the motion alone cannot tell, no
frame where both measure is published, and the reason names both. The settings' rules: the
check needs camera_height, and does nothing beside the ground plane itself."""

import math

import numpy as np
import pytest

from support.moving_scene import FLOOR_Y, K, render
from dense_perception.core.motion.motion_scale import MotionScale
from dense_perception.core.motion.pose import pose_matrix
from dense_perception.core.scale.metric_scale import DepthScaler, ScaleConfig
from dense_perception.core.settings.table import Settings
from dense_perception.core.wiring.relevance import Where, ignored_settings

pytestmark = [pytest.mark.numerics, pytest.mark.timeout(120)]
S = 3.7  # the unknown factor: relative depth = true depth / S


def level_path(count: int, step: float = 0.01) -> list[np.ndarray]:
    """Sideways and forward ``step`` m a frame at a constant height (FLOOR_Y above the
    floor), looking a little down so the floor fills the lower view."""
    return [pose_matrix([step * i, 0.0, 0.5 * step * i],
                        _pitch_quaternion(math.radians(-8.0))) for i in range(count)]


def _pitch_quaternion(angle: float) -> list[float]:
    """x y z w of a turn by ``angle`` about the camera's x axis (negative: looking down)."""
    return [math.sin(angle / 2), 0.0, 0.0, math.cos(angle / 2)]


def reports(trajectory_scale: float, check: str) -> list:
    """The scaler's report of each frame of the level path, its poses' translation multiplied
    by ``trajectory_scale``, the floor's height FLOOR_Y given."""
    motion = MotionScale(min_baseline=0.1)
    scaler = DepthScaler(ScaleConfig("motion", camera_height=FLOOR_Y, check=check,
                                     max_scale_error=1.0))
    out = []
    for i, pose in enumerate(level_path(30)):
        grey, depth = render(pose)
        scaled = pose.copy()
        scaled[:3, 3] *= trajectory_scale
        relative = (depth / S).astype(np.float32)
        est = motion.estimate(i / 30, scaled, relative, K, grey)
        out.append(scaler.update(i / 30, relative, K, None, "input", estimate=est))
    return out


def test_with_the_true_trajectory_the_floor_and_the_motion_agree():
    checked = [r for r in reports(1.0, "ground_plane") if r.scale is not None]
    alone = [r for r in reports(1.0, "none") if r.scale is not None]
    assert len(checked) >= 20 and not any(r.disagrees for r in checked)
    for report in checked:
        assert abs(report.scale / S - 1) < 0.04, report
    # two measurements of one scale: surer than the motion's alone, frame by frame
    assert np.median([r.sigma for r in checked]) < np.median([r.sigma for r in alone])


def test_a_trajectory_twice_too_long_is_caught_by_the_floor_and_withheld():
    alone = [r for r in reports(2.0, "none") if r.scale is not None]
    assert len(alone) >= 10 and all(abs(r.scale / (2 * S) - 1) < 0.05 for r in alone)
    checked = reports(2.0, "ground_plane")
    both = [r for r in checked if r.disagrees]
    assert len(both) >= 10
    for report in both:
        assert report.scale is None and not report.metric
        assert "motion's scale is 2." in report.reason and "ground_plane's" in report.reason
        assert "are the poses in metres" in report.reason and "camera_height" in report.reason
    # the frames before the motion has a baseline are the floor's alone: the true scale
    for report in checked:
        assert report.scale is None or abs(report.scale / S - 1) < 0.04


def test_the_check_needs_the_camera_height_and_a_source_to_check():
    problem = ScaleConfig("motion", check="ground_plane").problem()
    assert "depth_scale_check" in problem and "needs camera_height" in problem, problem
    where = Where("depth", metric_depth=False)
    beside_floor = ignored_settings(Settings(depth_scale_source="ground_plane", camera_height=1.0,
                                             depth_scale_check="ground_plane"),
                                    ["depth_scale_check"], where)
    assert len(beside_floor) == 1 and "depth_scale_check" in beside_floor[0], beside_floor
    beside_motion = Settings(depth_scale_source="motion", camera_height=1.0,
                             depth_scale_check="ground_plane")
    assert ignored_settings(beside_motion, ["depth_scale_check", "camera_height"], where) == []
