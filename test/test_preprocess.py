# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Preprocessing equals the model cards' reference formula, for every pixel format."""

import numpy as np
import pytest

from dense_perception.core.model.specs import MODEL_SPECS
from dense_perception.core.preprocess import PIXEL_FORMATS, Preprocessor, pixel_format, to_rgb8
from tools.common.reference import reference_preprocess


def encode(rgb, name):
    """Lay out an RGB image in the pixel format ``name``."""
    if name == "rgb8":
        return rgb.copy()
    if name == "bgr8":
        return rgb[:, :, ::-1].copy()
    alpha = np.full(rgb.shape[:2] + (1,), 77, np.uint8)
    if name == "rgba8":
        return np.concatenate([rgb, alpha], axis=2)
    if name == "bgra8":
        return np.concatenate([rgb[:, :, ::-1], alpha], axis=2)
    raise AssertionError(name)


@pytest.mark.parametrize("kind", ["da3", "tipsv2"])
@pytest.mark.parametrize("encoding", ["rgb8", "bgr8", "rgba8", "bgra8"])
def test_matches_card_formula(kind, encoding):
    spec = MODEL_SPECS[kind]
    rng = np.random.default_rng(1)
    rgb = rng.integers(0, 256, (spec.input_height, spec.input_width, 3), dtype=np.uint8)
    dest = np.full(spec.input_shape, -99.0, np.float32)
    Preprocessor(spec)(encode(rgb, encoding), pixel_format(encoding), dest)
    np.testing.assert_allclose(dest, reference_preprocess(rgb, spec), rtol=0, atol=1e-6)


def test_da3_uses_imagenet_normalisation_and_tipsv2_none():
    da3, tips = MODEL_SPECS["da3"], MODEL_SPECS["tipsv2"]
    white = np.full((da3.input_height, da3.input_width, 3), 255, np.uint8)
    dest = np.empty(da3.input_shape, np.float32)
    Preprocessor(da3)(white, pixel_format("rgb8"), dest)
    # (1 - 0.485) / 0.229 for R, etc.
    np.testing.assert_allclose(dest[0, :, 0, 0], [(1 - 0.485) / 0.229, (1 - 0.456) / 0.224,
                                                 (1 - 0.406) / 0.225], atol=1e-6)
    white = white[:448, :448]
    dest = np.empty(tips.input_shape, np.float32)
    Preprocessor(tips)(np.ascontiguousarray(white), pixel_format("rgb8"), dest)
    assert np.all(dest == 1.0)


def test_mono_fills_all_three_channels():
    spec = MODEL_SPECS["tipsv2"]
    grey = np.arange(448 * 448, dtype=np.uint32).reshape(448, 448).astype(np.uint8)
    dest = np.empty(spec.input_shape, np.float32)
    Preprocessor(spec)(grey, pixel_format("mono8"), dest)
    for c in range(3):
        np.testing.assert_allclose(dest[0, c], grey / 255.0, atol=1e-6)


def test_wrong_size_and_unknown_encoding_are_refused():
    spec = MODEL_SPECS["tipsv2"]
    with pytest.raises(ValueError, match="model needs 448x448"):
        Preprocessor(spec)(np.zeros((10, 10, 3), np.uint8), pixel_format("rgb8"),
                           np.empty(spec.input_shape, np.float32))
    with pytest.raises(ValueError, match="unsupported encoding 'yuv422'.*rgb8, bgr8"):
        pixel_format("yuv422")


@pytest.mark.parametrize("encoding", sorted(PIXEL_FORMATS))
def test_to_rgb8(encoding):
    rgb = np.random.default_rng(2).integers(0, 256, (5, 7, 3), dtype=np.uint8)
    if encoding == "mono8":
        out = to_rgb8(rgb[:, :, 0], PIXEL_FORMATS[encoding])
        assert np.all(out == rgb[:, :, :1])
    else:
        np.testing.assert_array_equal(to_rgb8(encode(rgb, encoding), PIXEL_FORMATS[encoding]), rgb)
