# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The fast host path (what a GPU host waits on) against formulas written out here.

Each rewrite either gives the same values as the plain numpy formula (argmax, the softmax
maximum, the normalisation table, the normals, the labels' colours, the packed cloud colour) or
differs within a stated tolerance (the depth view: an index one off where float32 rounding
meets an integer; the normals view: one level at exact halves).
"""

import cv2
import numpy as np
import pytest

from dense_perception.core import postprocess as post
from dense_perception.core.scheduling.host_threads import HostThreads, resolve_host_threads
from dense_perception.core.geometry.pointcloud import pack_rgb


def _softmax_max(logits: np.ndarray) -> np.ndarray:
    x = logits[0].astype(np.float64)
    e = np.exp(x - x.max(axis=0))
    return (1.0 / e.sum(axis=0)).astype(np.float32)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("threads", [1, 2, 3, 4])
@pytest.mark.parametrize("spread", [1.0, 3000.0])  # real logits, and the test model's (far apart)
def test_banded_labels_and_probability_equal_numpy(threads, spread):
    rng = np.random.default_rng(threads)
    logits = (rng.normal(size=(1, 150, 70, 64)) * spread).astype(np.float32)
    logits[0, 9, 5, 5] = logits[0, 4, 5, 5] = 1e6  # a tie goes to the lower id
    pool = HostThreads(threads)
    try:
        labels, prob, ms = post.labels_and_probability(logits, True, pool)
        labels_only, none, zero = post.labels_and_probability(logits, False, pool)
    finally:
        pool.close()
    np.testing.assert_array_equal(labels, logits[0].argmax(axis=0))
    np.testing.assert_array_equal(labels_only, labels)
    assert labels[5, 5] == 4
    np.testing.assert_allclose(prob, _softmax_max(logits), rtol=2e-6, atol=1e-7)
    assert none is None and zero == 0.0 and ms > 0.0


def test_bad_logits_give_nan_probability_in_every_part():
    logits = np.zeros((1, 40, 64, 8), np.float32)  # two class parts, two row halves
    logits[0, 30, 3, 3] = np.nan     # class part two, row half one
    logits[0, 1, 60, 1] = np.inf     # class part one, row half two
    pool = HostThreads(4)
    try:
        labels, prob, _ = post.labels_and_probability(logits, True, pool)
        labels_only, _, _ = post.labels_and_probability(logits, False, pool)
    finally:
        pool.close()
    bad = np.zeros(prob.shape, bool)
    bad[3, 3] = bad[60, 1] = True
    assert np.isnan(prob[bad]).all()
    assert labels[3, 3] == post.INVALID_LABEL and labels[60, 1] == 1  # NaN: no class; +inf wins
    assert (labels[~bad] == 0).all()  # all equal: the lowest id
    np.testing.assert_array_equal(labels_only, labels)
    np.testing.assert_allclose(prob[~bad], 1 / 40, rtol=1e-6)


def test_bands_cover_every_row_once():
    pool = HostThreads(3)
    try:
        for height in (1, 15, 16, 47, 256):
            bands = pool.bands(height)
            rows = [y for y0, y1 in bands for y in range(y0, y1)]
            assert rows == list(range(height)) and len(bands) <= 3
    finally:
        pool.close()
    pool = HostThreads(4)
    try:
        for height in (47, 256):
            bands = pool.bands(height, most=2)
            rows = [y for y0, y1 in bands for y in range(y0, y1)]
            assert rows == list(range(height)) and len(bands) == 2
    finally:
        pool.close()
    assert resolve_host_threads(2) == 2 and 1 <= resolve_host_threads(0) <= 4


@pytest.mark.timeout(60)
def test_the_logits_pass_splits_the_classes_in_at_most_two_parts_whatever_the_host_threads():
    """Each thread takes whole class planes (half as many GIL-taking OpenCV calls as row bands
    for the same work); more host threads must not mean more parts (past two, the calls queue
    for the GIL). Every class is seen once, and the labels and the probability are the
    formula's whatever the thread count."""
    rng = np.random.default_rng(11)
    logits = rng.normal(size=(1, 150, 64, 48)).astype(np.float32) * 4
    seen: list[tuple[int, int]] = []
    real_part = post._labels_and_softmax_sum

    def spy(planes, k0, k1, top, softmax):
        seen.append((k0, k1))
        return real_part(planes, k0, k1, top, softmax)

    pool = HostThreads(8)
    try:
        post._labels_and_softmax_sum = spy
        labels, prob, _ = post.labels_and_probability(logits, True, pool)
    finally:
        post._labels_and_softmax_sum = real_part
        pool.close()
    assert len(seen) == post.LOGITS_PARTS_MAX == 2
    assert sorted(k for k0, k1 in seen for k in range(k0, k1)) == list(range(150))
    np.testing.assert_array_equal(labels, logits[0].argmax(axis=0))
    np.testing.assert_allclose(prob, _softmax_max(logits), rtol=1e-5)
    with pytest.raises(ValueError, match="host_threads"):
        resolve_host_threads(-1)


def test_an_error_in_a_band_reaches_the_caller():
    pool = HostThreads(2)

    def boom() -> None:
        raise RuntimeError("band failed")
    try:
        with pytest.raises(RuntimeError, match="band failed"):
            pool.run([boom, lambda: 1])
        assert pool.run([lambda: 1, lambda: 2]) == [1, 2]  # still usable
    finally:
        pool.close()


def test_depth_view_matches_the_float64_formula_within_one_index():
    rng = np.random.default_rng(3)
    depth = (0.5 + rng.random((504, 896)) * 9.5).astype(np.float32)
    depth[:7] = np.nan
    depth[10, :3] = [0.01, 500.0, np.inf]
    view = post.colorize_depth(depth)
    valid = np.isfinite(depth)
    sample = depth[::2, ::2]
    lo, hi = np.percentile(sample[np.isfinite(sample)], (2, 98))
    index = (np.clip((hi - np.where(valid, depth, hi)) / (hi - lo), 0, 1) * 255).astype(int)
    turbo = cv2.applyColorMap(np.arange(256, dtype=np.uint8)[None], cv2.COLORMAP_TURBO)[0]
    exact = (view == turbo[index]).all(axis=2)
    near = exact | (view == turbo[np.clip(index - 1, 0, 255)]).all(axis=2) \
        | (view == turbo[np.clip(index + 1, 0, 255)]).all(axis=2)
    assert (view[~valid] == 0).all()
    assert near[valid].all() and exact[valid].mean() > 0.9999


def test_normals_and_their_view_match_the_formulas():
    rng = np.random.default_rng(4)
    raw = rng.normal(size=(1, 3, 96, 80)).astype(np.float32)
    raw[0, :, 0, 0] = 0.0
    normals = post.normals_from_output(raw)
    vectors = raw[0].transpose(1, 2, 0).astype(np.float64)
    with np.errstate(invalid="ignore"):  # the zero vector
        unit = vectors / np.linalg.norm(vectors, axis=2, keepdims=True)
    np.testing.assert_allclose(normals[1:], unit[1:], atol=3e-7)
    assert np.isnan(normals[0, 0]).all() and normals.flags.c_contiguous
    view = post.colorize_normals(normals)
    formula = np.floor(np.nan_to_num((normals.astype(np.float64) + 1.0) * 127.5, nan=0.0) + 0.5)
    assert np.abs(view.astype(int) - formula).max() <= 1
    assert (view[0, 0] == 0).all()


def test_label_colours_and_packed_cloud_colour_match_the_formulas():
    rng = np.random.default_rng(5)
    labels = rng.integers(0, 256, (40, 60), dtype=np.uint8)
    np.testing.assert_array_equal(post.colorize_labels(labels), post.ade20k_palette()[labels])
    rgb = rng.integers(0, 256, (40, 60, 3), dtype=np.uint8)
    wide = rgb.astype(np.uint32)
    packed = (wide[..., 0] << 16) | (wide[..., 1] << 8) | wide[..., 2]
    np.testing.assert_array_equal(pack_rgb(rgb).view(np.uint32), packed)
    np.testing.assert_array_equal(pack_rgb(rgb[::3, ::2]).view(np.uint32), packed[::3, ::2])


@pytest.mark.timeout(60)
@pytest.mark.parametrize("encoding", ["rgb8", "bgr8", "rgba8", "bgra8", "mono8"])
def test_cloud_colour_from_the_whole_frame_words_equals_the_rgb_formula(encoding):
    """The node colours the cloud from the frame's 4-byte colour words (one conversion of the
    whole frame, then a sample): the same packed bits as the sampled RGB pixels' formula."""
    from dense_perception.core.geometry.intrinsics import Intrinsics
    from dense_perception.core.geometry.pointcloud import depth_to_points
    from dense_perception.core.preprocess import PIXEL_FORMATS, to_colour_words

    rng = np.random.default_rng(9)
    height, width = 37, 53  # odd sizes: the sample's last row and column
    rgb = rng.integers(0, 256, (height, width, 3), dtype=np.uint8)
    frame = {"rgb8": rgb, "bgr8": rgb[:, :, ::-1], "mono8": rgb[:, :, :1],
             "rgba8": np.dstack([rgb, np.full((height, width), 7, np.uint8)]),
             "bgra8": np.dstack([rgb[:, :, ::-1], np.full((height, width), 7, np.uint8)])}[encoding]
    frame = np.ascontiguousarray(frame)
    seen = np.repeat(rgb[:, :, :1], 3, axis=2) if encoding == "mono8" else rgb
    wide = seen.astype(np.uint32)
    formula = (wide[..., 0] << 16) | (wide[..., 1] << 8) | wide[..., 2]
    words = to_colour_words(frame, PIXEL_FORMATS[encoding])
    np.testing.assert_array_equal(words & 0x00FFFFFF, formula)
    depth = rng.uniform(0.5, 5.0, (height, width)).astype(np.float32)
    k = Intrinsics(fx=40.0, fy=40.0, cx=26.0, cy=18.0, width=width, height=height)
    for stride in (1, 2, 3):
        cloud = depth_to_points(depth, k, stride=stride, rgb=words, organized=True)
        np.testing.assert_array_equal(cloud["rgb"].view(np.uint32), formula[::stride, ::stride])
        from_rgb = depth_to_points(depth, k, stride=stride, rgb=seen, organized=True)
        assert cloud.tobytes() == from_rgb.tobytes()
