# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Point clouds: vectorised back-projection equals a per-pixel loop; invalid depth handling."""

import numpy as np
import pytest

from dense_perception.core.geometry.intrinsics import Intrinsics
from dense_perception.core.geometry.pointcloud import XYZ_DTYPE, XYZRGB_DTYPE, depth_to_points, pack_rgb
from tools.common.reference import reference_points

pytestmark = pytest.mark.numerics

K = Intrinsics(fx=300.0, fy=310.0, cx=31.5, cy=20.25, width=64, height=48)


def random_depth(seed=0):
    rng = np.random.default_rng(seed)
    depth = rng.uniform(0.2, 8.0, (48, 64)).astype(np.float32)
    depth[3, 5] = np.nan
    depth[4, 6] = np.inf
    depth[5, 7] = -1.0
    depth[6, 8] = 0.0
    depth[7, 9] = 20.0  # beyond max_depth below
    return depth


def test_equals_per_pixel_reference():
    depth = random_depth()
    cloud = depth_to_points(depth, K, max_depth=10.0)
    assert cloud.dtype == XYZ_DTYPE
    ref = np.array(reference_points(depth, K, max_depth=10.0), np.float32)
    assert len(cloud) == len(ref) == 48 * 64 - 5
    got = np.stack([cloud["x"], cloud["y"], cloud["z"]], axis=1)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)


def test_organized_keeps_grid_with_nan_for_invalid():
    depth = random_depth()
    cloud = depth_to_points(depth, K, max_depth=10.0, organized=True)
    assert cloud.shape == (48, 64)
    for (v, u) in [(3, 5), (4, 6), (5, 7), (6, 8), (7, 9)]:
        assert np.isnan(cloud[v, u]["x"]) and np.isnan(cloud[v, u]["z"])
    assert np.isfinite(cloud["z"]).sum() == 48 * 64 - 5
    # A valid pixel lies on its own viewing ray.
    z = depth[10, 20]
    assert cloud[10, 20]["x"] == pytest.approx((20 - K.cx) * z / K.fx, rel=1e-6)
    assert cloud[10, 20]["y"] == pytest.approx((10 - K.cy) * z / K.fy, rel=1e-6)


def test_stride_decimates_and_rgb_is_packed_like_pcl():
    depth = np.full((48, 64), 2.0, np.float32)
    rgb = np.zeros((48, 64, 3), np.uint8)
    rgb[..., 0], rgb[..., 1], rgb[..., 2] = 10, 20, 30
    cloud = depth_to_points(depth, K, stride=4, rgb=rgb, organized=True)
    assert cloud.shape == (12, 16) and cloud.dtype == XYZRGB_DTYPE
    assert cloud[1, 1]["x"] == pytest.approx((4 - K.cx) * 2.0 / K.fx)
    packed = cloud["rgb"].view(np.uint32)
    assert np.all(packed == (10 << 16) | (20 << 8) | 30)
    assert pack_rgb(rgb[:1, :1]).dtype == np.float32


def test_rejects_mismatched_intrinsics_and_bad_stride():
    with pytest.raises(ValueError, match="intrinsics are for 64x48"):
        depth_to_points(np.ones((10, 10), np.float32), K)
    with pytest.raises(ValueError, match="stride"):
        depth_to_points(np.ones((48, 64), np.float32), K, stride=0)


def test_fallback_intrinsics_from_fov():
    k = Intrinsics.from_hfov(640, 480, 90.0)
    assert k.fx == pytest.approx(320.0) and k.fy == k.fx
    assert (k.cx, k.cy) == (319.5, 239.5)
    assert k.problem() is None
    assert "focal length" in Intrinsics(-1, 1, 0, 0, 10, 10).problem()
    assert "NaN" in Intrinsics(float("nan"), 1, 0, 0, 10, 10).problem()
