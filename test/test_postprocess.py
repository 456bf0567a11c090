# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Post-processing: depth units and views, normals, labels and the ADE20K data files."""

import numpy as np

from dense_perception.core import postprocess as post


def test_depth_invalid_is_nan_and_scale_is_fixed():
    raw = np.array([[[[1.0, -2.0], [np.inf, 0.0]]]], np.float32)
    depth = post.depth_from_output(raw, 2.0)
    assert depth[0, 0] == 2.0 and np.isnan(depth[0, 1]) and np.isnan(depth[1, 0])
    assert np.isnan(depth[1, 1])


def test_millimetres_zero_what_16_bits_cannot_hold():
    """REP 118: 0 is invalid; depth past 65.535 m, NaN, inf or <= 0 is 0, never clamped to a
    wrong distance."""
    depth = np.array([[0.0004, 1.2344, 70.0, np.nan, 0.0006, 65.535, 65.5356, 110.0, -1.0,
                       np.inf]], np.float32)
    assert post.depth_to_millimetres(depth).tolist() == [[0, 1234, 0, 0, 1, 65535, 0, 0, 0, 0]]


def test_colorized_depth_near_is_warm_and_invalid_black():
    depth = np.tile(np.linspace(1, 10, 100, dtype=np.float32), (10, 1))
    depth[:, :5] = np.nan
    view = post.colorize_depth(depth)
    assert view.shape == (10, 100, 3) and view.dtype == np.uint8
    assert (view[:, :5] == 0).all()
    near, far = view[5, 6].astype(int), view[5, 99].astype(int)
    assert near[2] > near[0] and far[0] > far[2]  # bgr8: near red, far blue (TURBO)
    assert (post.colorize_depth(np.full((4, 4), np.nan, np.float32)) == 0).all()


def test_normals_are_unit_and_coloured():
    raw = np.zeros((1, 3, 2, 2), np.float32)
    raw[0, 2] = -2.0
    raw[0, :, 1, 1] = 0.0
    n = post.normals_from_output(raw)
    np.testing.assert_allclose(n[0, 0], [0, 0, -1])
    assert np.isnan(n[1, 1]).all()
    rgb = post.colorize_normals(n)
    assert tuple(rgb[0, 0]) == (128, 128, 0) and tuple(rgb[1, 1]) == (0, 0, 0)


def test_labels_equal_argmax_including_ties():
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(1, 150, 32, 32)).astype(np.float32)
    logits[0, 7, 0, 0] = logits[0, 3, 0, 0] = 99.0  # a tie goes to the lower id
    labels = post.labels_from_logits(logits)
    np.testing.assert_array_equal(labels, logits[0].argmax(0))
    assert labels[0, 0] == 3


def test_ade20k_data_files():
    names = post.ade20k_class_names()
    assert len(names) == 150 and len(set(names)) == 150
    assert names[:3] == ("wall", "building", "sky") and names[-1] == "flag"
    palette = post.ade20k_palette()
    assert palette.shape == (256, 3) and tuple(palette[0]) == (120, 120, 120)
    assert (palette[150:] == 0).all()
    labels = np.array([[0, 2], [post.INVALID_LABEL, 149]], np.uint8)
    assert tuple(post.colorize_labels(labels)[1, 0]) == (0, 0, 0)


def test_percentile_pair_is_numpys_percentile():
    """The depth view's range: numpy's own percentile (its 'linear' method) at two
    percentiles, on sizes from 1 up, with ties, negative values and -0.0."""
    rng = np.random.default_rng(11)
    cases = [np.array([2.5], np.float32), np.array([3.0, 1.0], np.float32),
             np.array([-0.0, 0.0, 1.0, -0.0], np.float32)]
    for trial in range(300):
        n = int(rng.integers(1, 4000))
        x = (rng.random(n) * [1.0, 100.0, 1e-3][trial % 3]).astype(np.float32)
        if trial % 4 == 0:
            x = np.round(x, 1)  # many ties
        if trial % 5 == 0:
            x -= np.float32(0.5 * x.max())  # negative values: the float partition
        cases.append(x)
    for x in cases:
        for low, high in ((2.0, 98.0), (0.0, 100.0), (50.0, 50.0), (10.0, 37.5)):
            expected = np.percentile(x, (low, high))
            got = post.percentile_pair(x.copy(), low, high)
            # bit for bit with numpy 2.2-2.4; float32 rounding allowed for other versions
            np.testing.assert_allclose(got, expected, rtol=1e-7, atol=0,
                                       err_msg=f"n={x.size} q=({low}, {high})")
