# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Real geometry: measured RGB-D frames (NYU Depth v2, TUM RGB-D; ../shared/real-scenes) through
the project's point clouds and the ground-plane scale, against truths written out here.

The ground-plane truth: each frame's measured depth divided by an arbitrary s, with the camera's
height measured on the measured depth itself (a floor region chosen by hand on the colour image,
``tools.eval.real_scenes.FRAMES``, and a least-squares plane:
``tools.eval.real_scenes.floor_plane``, plain numpy). The estimator must give s within 3 %, or
withhold the scale and say why.
"""

import numpy as np
import pytest

from tools.eval.real_scenes import FRAMES, REAL_SCENES, available, floor_plane
from dense_perception.core.geometry.intrinsics import Intrinsics
from dense_perception.core.scale.estimators import ground_plane_scale
from dense_perception.core.geometry.pointcloud import depth_to_points

pytestmark = [pytest.mark.numerics,
              pytest.mark.skipif(not available(), reason=f"{REAL_SCENES} is absent (real RGB-D "
                                 "frames and PyD-Net++; see docs/accuracy.md)")]
IDS = [f.name for f in FRAMES]
GROUND_TOLERANCE = 0.03  # how far off a scale the estimator gives may be (else: withheld)


def intrinsics(frame, depth):
    fx, fy, cx, cy = frame.k
    return Intrinsics(fx, fy, cx, cy, depth.shape[1], depth.shape[0])


@pytest.mark.parametrize("frame", FRAMES, ids=IDS)
def test_cloud_of_measured_depth_is_the_back_projection(frame):
    """Organized and unorganized clouds (with colour) of each measured depth image against
    X = (u - cx) / fx * Z, Y = (v - cy) / fy * Z: the same points, NaN exactly at the holes."""
    depth, rgb = frame.depth(), frame.rgb()
    fx, fy, cx, cy = frame.k
    v, u = np.mgrid[0:depth.shape[0], 0:depth.shape[1]].astype(np.float64)
    z = depth.astype(np.float64)
    expected = np.stack([(u - cx) / fx * z, (v - cy) / fy * z, z], axis=-1)
    holes = ~np.isfinite(depth)
    assert holes.any()  # NYU's unfilled border and TUM's raw holes

    cloud = depth_to_points(depth, intrinsics(frame, depth), organized=True, rgb=rgb)
    assert cloud.shape == depth.shape
    xyz = np.stack([cloud["x"], cloud["y"], cloud["z"]], axis=-1).astype(np.float64)
    assert np.array_equal(np.isnan(xyz).any(axis=-1), holes)
    np.testing.assert_allclose(xyz[~holes], expected[~holes], rtol=1e-5, atol=1e-6)
    colour = cloud["rgb"].view(np.uint32)
    r, g, b = (rgb[..., c].astype(np.uint32) for c in range(3))
    packed = (r << 16) | (g << 8) | b  # 0x00RRGGBB, as PCL and RViz read it
    assert np.array_equal(colour, packed)

    flat = depth_to_points(depth, intrinsics(frame, depth), stride=3, max_depth=4.0)
    sampled_z = z[::3, ::3]
    kept = np.isfinite(sampled_z) & (sampled_z <= 4.0)
    assert len(flat) == kept.sum() > 1000
    flat_xyz = np.stack([flat["x"], flat["y"], flat["z"]], axis=-1)
    np.testing.assert_allclose(flat_xyz, expected[::3, ::3][kept], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("frame", FRAMES, ids=IDS)
def test_hand_picked_floor_regions_are_floor(frame):
    """The floor truth itself: each hand-picked region is one plane to a centimetre, below the
    camera (normal within 35 deg of +y, the optical frame's down) at a Kinect-on-a-person height."""
    floor = floor_plane(frame.depth(), frame)
    assert floor.points > 3000 and floor.inlier_share > 0.97
    assert floor.rms < 0.01
    assert np.degrees(np.arccos(floor.normal[1])) < 35.0
    assert 1.0 < floor.distance < 2.0


def test_ground_plane_recovers_s_on_measured_depth_or_withholds():
    """Each frame's measured depth / s with camera_height = the floor's measured distance: the
    scale is s within 3 %, or none with a reason. Most frames show plenty of floor, so the
    estimator must not withhold on nearly all of them (at least half give a scale)."""
    given = []
    for frame in FRAMES:
        depth = frame.depth()
        k = intrinsics(frame, depth)
        height = floor_plane(depth, frame).distance
        for s in (3.7, 0.27):
            est = ground_plane_scale(depth / np.float32(s), k, height)
            if est.scale is None:
                assert est.reason, f"{frame.name}: withheld without a reason"
                continue
            assert est.scale / s == pytest.approx(1.0, abs=GROUND_TOLERANCE), \
                f"{frame.name}: scale {est.scale:.4f} for s = {s} ({est.scale / s - 1:+.1%})"
            given.append(frame.name)
    assert len(set(given)) >= len(FRAMES) // 2, f"a scale only on {sorted(set(given))}"
