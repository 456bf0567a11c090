# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Limits that keep an output honest: 16UC1 depth that 16 bits cannot hold is 0 (invalid),
never clamped to 65.535 m, wherever a 16UC1 or png16 image is made; compressedDepth sends
depth past q (q + 1) as invalid instead of a wrong distance, and a depth_max beyond it is
refused; a voxel edge under 1 mm is refused, so a cloud keeps its points."""

from types import SimpleNamespace

import cv2
import numpy as np
import pytest

from support.common import DA3_TEST_MODEL, run_cli
from support.model_truth import da3_depth_of
from support.transport_decoders import decode_compressed_depth

from dense_perception.core import compressed as cz
from dense_perception.core.frame_data import Products
from dense_perception.core.geometry.pointcloud import XYZ_DTYPE, nearest_per_voxel
from dense_perception.core.products import product_messages
from dense_perception.core.settings.row import SettingError
from dense_perception.core.wiring.derived import compressed_depth_problem
from dense_perception.core.settings.table import Settings

pytestmark = pytest.mark.timeout(120)
FAR = np.array([[0.0004, 1.2344, 65.535, 65.5356, 70.0, 90.0, 110.0, np.nan, -1.0, 0.0,
                 np.inf]], np.float32)
# REP 118 millimetres, written out: rounded, 1..65535, anything else 0 (invalid)
FAR_MM = [[0, 1234, 65535, 0, 0, 0, 0, 0, 0, 0, 0]]


class Builder:
    """A plain message builder (the MessageBuilder protocol): what each message holds."""

    def array_to_image(self, image, encoding, header):
        return SimpleNamespace(image=image, encoding=encoding)

    def compressed_image(self, fmt, data, header):
        return SimpleNamespace(format=fmt, data=data)


def test_16uc1_depth_image_and_compressed_depth_zero_far_depth():
    products = Products(width=FAR.shape[1], height=1, plan=None, depth=FAR)
    got = dict(product_messages(products, ["depth", "depth_compressed"], None, Builder(),
                                depth_encoding="16UC1",
                                compression=cz.CompressionConfig(depth_max=100.0)))
    assert got["depth"].encoding == "16UC1"
    assert got["depth"].image.tolist() == FAR_MM
    encoding, back = decode_compressed_depth(got["depth_compressed"].format,
                                             got["depth_compressed"].data)
    assert encoding == "16UC1" and back.tolist() == FAR_MM


def test_png16_files_zero_depth_past_65_m(tmp_path, capsys):
    """DA3's painted depth (about 1.5-4.5) at 25 m per unit: 37-112 m, partly past 16 bits."""
    rgb = np.zeros((64, 96, 3), np.uint8)
    rgb[..., 0] = np.linspace(0, 255, 96).astype(np.uint8)[None, :]
    rgb[..., 1] = np.linspace(0, 255, 64).astype(np.uint8)[:, None]
    rgb[..., 2] = 128
    cv2.imwrite(str(tmp_path / "far.png"), cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR))
    code, _, err = run_cli(["process", tmp_path / "far.png", "--model", DA3_TEST_MODEL,
                            "--model-type", "da3", "--backend", "cpu", "--out", tmp_path / "o",
                            "--outputs", "depth", "--depth-format", "png16", "--fit", "stretch",
                            "--output-resolution", "input", "--depth-scale-source", "fixed",
                            "--relative-depth-scale", "25"], capsys)
    assert code == 0, err
    mm = cv2.imread(str(tmp_path / "o" / "depth" / "far.png"), cv2.IMREAD_UNCHANGED)
    truth = 25.0 * da3_depth_of(rgb.astype(float))
    assert mm.dtype == np.uint16 and (truth > 70).any() and (truth < 60).any()
    far, near = truth > 65.6, truth < 65.4  # clear of the resampling's rounding
    assert (mm[far] == 0).all()
    assert np.abs(mm[near].astype(float) / 1000.0 / truth[near] - 1).max() < 0.02


def test_compressed_depth_sends_depth_past_q_q_plus_1_as_invalid():
    """q = 1: a = q (q + 1) = 2 m. Before, every depth of 2-9 m decoded as 10 m (depth_max);
    now those are invalid and nearer depth stays within z^2 / (a - z) of the truth."""
    config = cz.CompressionConfig(depth_max=10.0, depth_quantization=1.0)
    z = np.linspace(0.05, 9.9, 2000, dtype=np.float32)[None, :]
    _, back = decode_compressed_depth(*(lambda c: (c.format, c.data))(
        cz.compressed_depth(z, "32FC1", config)))
    a = 1.0 * (1.0 + 1.0)
    beyond = z >= a
    assert np.isnan(back[beyond]).all()
    valid = np.isfinite(back)
    assert valid[~beyond].sum() > 0.9 * (~beyond).sum()
    zz = z[valid].astype(np.float64)
    err = back[valid] - zz
    assert (err >= -1e-5 * zz).all() and (err <= zz * zz / (a - zz) * 1.001 + 1e-6).all()
    with pytest.raises(ValueError, match="no error bound"):
        cz.depth_error_bound(2.5, config)


def test_a_depth_max_beyond_the_quantisation_is_refused_with_the_smallest_q():
    settings = Settings(compressed_depth_quantization=1.0)
    problem = compressed_depth_problem(settings)
    # q (q + 1) >= 10 m: q >= (sqrt(41) - 1) / 2 = 2.70...
    assert "q (q + 1) = 2 m" in problem and "at least 2.71" in problem
    assert compressed_depth_problem(settings.changed({"compressed_depth_quantization": 2.71}))\
        is None
    assert compressed_depth_problem(settings.changed({"depth_encoding": "16UC1"})) is None
    assert compressed_depth_problem(Settings()) is None


def grid_cloud(n=120, spacing=0.01):
    """n x n points on a wall 2 m ahead, ``spacing`` m apart."""
    xs = (np.arange(n) - n / 2) * spacing + spacing / 4  # clear of the cube edges
    out = np.zeros(n * n, XYZ_DTYPE)
    out["x"] = np.repeat(xs, n)
    out["y"] = np.tile(xs, n)
    out["z"] = 2.0
    return out


def test_a_voxel_edge_under_a_millimetre_is_refused_and_the_cloud_keeps_its_points():
    for size in (1e-300, 1e-9, 0.0009):
        with pytest.raises(SettingError, match="points_voxel_size must be 0 .off. or >= 0.001"):
            Settings(points_voxel_size=size)
        with pytest.raises(ValueError):
            nearest_per_voxel(grid_cloud(), size)
    cloud = grid_cloud()  # 14,400 points 1 cm apart: 1 mm cubes keep every one
    kept = nearest_per_voxel(cloud, Settings(points_voxel_size=0.001).points_voxel_size)
    assert len(kept) == len(cloud) == 14400
    assert len(nearest_per_voxel(cloud, 0.02)) == 60 * 60  # 2 cm cubes: 2 x 2 points each


def test_a_cloud_too_wide_for_one_cube_number_still_keeps_one_point_per_cube():
    """1 mm cubes over 1e6 m in three axes: more cubes than an int64 numbers."""
    points = np.zeros(4, XYZ_DTYPE)
    points["x"] = [0.0, 0.0004, 1e6, 1e6]
    points["y"] = [0.0, 0.0, 1e6, -1e6]
    points["z"] = [1.0, 1.0, 1e6, 1e6]
    kept = nearest_per_voxel(points, 0.001)
    # cubes: the first two points share one (the nearer is kept); the far two differ
    assert len(kept) == 3
    assert sorted(kept["x"].tolist())[:1] == [0.0]
