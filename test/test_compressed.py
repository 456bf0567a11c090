# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""image_transport's compressed formats (core.compressed), read back by decoders written from
the formats' definitions (support/transport_decoders.py: compressed_depth_image_transport's
ConfigHeader + PNG, compressed_image_transport's JPEG / PNG)."""

import struct
from pathlib import Path

import cv2
import numpy as np
import pytest

from dense_perception.core import compressed as cz
from support.transport_decoders import (check_depth_round_trip, decode_compressed_depth,
                                        decode_jpeg_view, decode_png, psnr)
from support.transport_decoders import step_bound as bound

pytestmark = pytest.mark.timeout(60)


def test_32fc1_header_round_trip_and_error_bound():
    rng = np.random.default_rng(3)
    depth = rng.uniform(0.2, 9.99, (120, 160)).astype(np.float32)
    out = cz.compressed_depth(depth, "32FC1")
    assert out.format == "32FC1; compressedDepth png"
    kind, a, b = struct.unpack("<iff", out.data[:12].tobytes())
    assert (kind, a, b) == (0, 100.0 * 101.0, pytest.approx(1 - 10100.0 / 10.0))
    _, back = decode_compressed_depth(out.format, out.data)
    err = back - depth
    # The truncation never brings depth nearer; float32 arithmetic adds well under 0.1 %.
    assert np.all(err >= -1e-6 * depth)
    assert np.all(err <= bound(depth.astype(np.float64)) * 1.001 + 1e-7)
    assert np.max(err) > 0.5 * bound(9.0)  # the bound is tight, not loose


def test_stated_error_bounds_at_1_5_20_m():
    """The docs' figures (docs/watching-over-wifi.md) from the formula, and measured."""
    cfg = cz.CompressionConfig(depth_max=30.0)
    for z, mm in ((1.0, 0.099), (5.0, 2.48), (20.0, 39.7)):
        assert bound(z) * 1000 == pytest.approx(mm, abs=0.05)
        assert cz.depth_error_bound(z, cfg) == pytest.approx(bound(z), rel=1e-6)
        zs = np.linspace(z * 0.99, z * 1.01, 4001, dtype=np.float32)[None, :]
        _, back = decode_compressed_depth(*_fmt_data(cz.compressed_depth(zs, "32FC1", cfg)))
        assert np.max(back - zs) * 1000 <= mm * 1.02 * 1.01 ** 2


def _fmt_data(out):
    return out.format, out.data


def test_invalid_depth_stays_invalid():
    depth = np.array([[np.nan, np.inf, -np.inf, 0.0, -1.0, 10.0, 12.0, 0.1, 0.5, 9.9]],
                     np.float32)
    _, back = decode_compressed_depth(*_fmt_data(cz.compressed_depth(depth, "32FC1")))
    # NaN/inf/0/negative, at or past depth_max (10 m), nearer than 16 bits hold (0.15 m): NaN
    assert np.all(np.isnan(back[0, :8]))
    assert np.all(np.isfinite(back[0, 8:]))
    assert cz.nearest_encodable() == pytest.approx(10100 / (65536 + 1009), rel=1e-6)


def test_16uc1_is_plain_png_of_millimetres():
    rng = np.random.default_rng(4)
    mm = rng.integers(0, 15000, (60, 80)).astype(np.uint16)
    out = cz.compressed_depth(mm, "16UC1")
    assert out.format == "16UC1; compressedDepth png"
    enc, back = decode_compressed_depth(out.format, out.data)
    assert enc == "16UC1"
    np.testing.assert_array_equal(back, np.where(mm > 10000, 0, mm))


def test_labels_png_is_bit_exact():
    rng = np.random.default_rng(5)
    labels = rng.integers(0, 151, (64, 96)).astype(np.uint8)
    labels[0, 0] = 255
    out = cz.png_mono(labels, "mono8")
    assert out.format == "mono8; png compressed "
    encoding, back = decode_png(out.format, out.data)
    assert encoding == "mono8"
    np.testing.assert_array_equal(back, labels)


@pytest.mark.parametrize("encoding", ["rgb8", "bgr8"])
def test_jpeg_views_are_bgr_with_a_psnr_floor(encoding):
    y, x = np.mgrid[0:120, 0:160]
    view = np.stack([x * 255 // 160, y * 255 // 120, (x + y) % 256], -1).astype(np.uint8)
    out = cz.jpeg(view, encoding, cz.CompressionConfig(jpeg_quality=80))
    assert out.format == f"{encoding}; jpeg compressed bgr8"
    _, bgr = decode_jpeg_view(out.format, out.data)
    expected = view[..., ::-1] if encoding == "rgb8" else view
    assert psnr(bgr, expected) > 30.0
    assert out.data.size < view.size / 4
    low = cz.jpeg(view, encoding, cz.CompressionConfig(jpeg_quality=20))
    assert low.data.size < out.data.size  # quality is honoured


def test_wrong_inputs_are_refused():
    with pytest.raises(ValueError):
        cz.compressed_depth(np.zeros((4, 4, 3), np.float32), "32FC1")
    with pytest.raises(ValueError):
        cz.compressed_depth(np.zeros((4, 4), np.float32), "32FC3")
    with pytest.raises(ValueError):
        cz.png_mono(np.zeros((4, 4), np.float32), "32FC1")


NYU = Path(__file__).resolve().parents[2] / "shared" / "real-scenes" / "nyu"


@pytest.mark.skipif(not NYU.is_dir(), reason="../shared/real-scenes is not here")
@pytest.mark.parametrize("name", ["sync_depth_00000.png", "sync_depth_00050.png",
                                  "sync_depth_00100.png"])
def test_measured_depth_at_504x280_is_4x_smaller_within_the_bound(name):
    """Measured indoor depth (NYU Depth v2, Kinect; 0.7-8.3 m, its holes invalid) on DA3's
    504x280 grid: real edges and noise, unlike the test models' smooth depth."""
    mm = cv2.imread(str(NYU / name), cv2.IMREAD_UNCHANGED)
    depth = cv2.resize(mm, (504, 378), interpolation=cv2.INTER_NEAREST)[49:329]
    depth = depth.astype(np.float32) / 1000.0
    depth[depth == 0] = np.nan
    assert 0.5 < np.nanmin(depth) and np.nanmax(depth) < 10.0
    out = cz.compressed_depth(depth, "32FC1")
    assert depth.nbytes / out.data.size >= 4.0
    _, back = decode_compressed_depth(out.format, out.data)
    check_depth_round_trip(depth, back)
