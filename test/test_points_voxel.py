# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""points_voxel_size: one point per occupied cube, the nearest to the camera, checked against a
plain per-point loop over the cubes; no obstacle lost; through the pipeline, fewer points and
bytes with every kept point a point of the full cloud."""

import math

import numpy as np
import pytest

from dense_perception.core.pipeline import load_pipeline
from dense_perception.core.frame_data import Request
from dense_perception.core.geometry.pointcloud import XYZ_DTYPE, XYZRGB_DTYPE, nearest_per_voxel
from dense_perception.core.settings.table import Settings
from support.common import TIPS_TEST_MODEL
from support.model_truth import gradient_frame

pytestmark = [pytest.mark.numerics, pytest.mark.timeout(120)]


def cloud(xyz):
    out = np.zeros(len(xyz), XYZ_DTYPE)
    out["x"], out["y"], out["z"] = np.asarray(xyz, np.float32).T
    return out


def loop_truth(points, size):
    """{cube: the nearest point's (x, y, z)} by a loop over the points."""
    best = {}
    for p in points:
        x, y, z = float(p["x"]), float(p["y"]), float(p["z"])
        cube = (math.floor(np.float32(x) / np.float32(size)),
                math.floor(np.float32(y) / np.float32(size)),
                math.floor(np.float32(z) / np.float32(size)))
        r = x * x + y * y + z * z
        if cube not in best or r < best[cube][0]:
            best[cube] = (r, (x, y, z))
    return {cube: xyz for cube, (_, xyz) in best.items()}


def test_one_nearest_point_per_cube():
    rng = np.random.default_rng(7)
    points = cloud(rng.uniform([-2, -1, 0.3], [2, 1.5, 6], (5000, 3)))
    kept = nearest_per_voxel(points, 0.5)
    truth = loop_truth(points, 0.5)
    assert len(kept) == len(truth)
    assert {(float(p["x"]), float(p["y"]), float(p["z"])) for p in kept} == set(truth.values())


def test_a_thin_obstacle_survives_the_thinning():
    """A floor 1 m below the camera (every 2 cm) and a 1 cm pole at 3 m: with 20 cm cubes the
    floor thins 100-fold, and the pole's cubes all keep a point, its nearest one."""
    g = np.arange(-2.0, 2.0, 0.02)
    floor = [(x, 1.0, z) for x in g for z in np.arange(0.5, 6.0, 0.02)]
    pole = [(0.503, y, 3.0) for y in np.arange(-0.5, 0.95, 0.01)]
    points = cloud(floor + pole)
    kept = nearest_per_voxel(points, 0.2)
    assert len(kept) < len(points) / 50
    pole_kept = kept[np.abs(kept["x"] - 0.503) < 1e-6]
    assert len(pole_kept) == len(loop_truth(cloud(pole), 0.2)) == 8  # -0.6..0.8 in 0.2 m cubes
    assert nearest_per_voxel(points, 0.0) is points  # 0 = off


def test_pipeline_cloud_thins_with_its_colours(tmp_path):
    pipe = load_pipeline(TIPS_TEST_MODEL, Settings(backend="cpu", points_stride=1),
                         log=lambda _: None)
    frame = np.clip(gradient_frame(448, 448), 0, 255).astype(np.uint8)
    request = Request(points=True, points_rgb=True)
    full = pipe.process(frame, "rgb8", request=request).points
    thin_pipe = load_pipeline(TIPS_TEST_MODEL,
                              Settings(backend="cpu", points_stride=1, points_voxel_size=0.05,
                                       points_organized=True),
                              log=lambda _: None)
    thin = thin_pipe.process(frame, "rgb8", request=request).points
    assert thin.dtype == XYZRGB_DTYPE and thin.ndim == 1  # unorganised despite points_organized
    assert len(thin) == len(loop_truth(full, 0.05))
    assert thin.nbytes < full.nbytes / 4
    # every kept point (with its colour) is a point of the full cloud
    assert np.isin(thin.view(np.void), full.view(np.void)).all()
