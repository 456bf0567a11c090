# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The scale map from motion: a network bent by a known shape error (a power law, a tilt across
the view) is corrected over the view, so the published depth beats the network's own depth at
its best single scale; a correction never crosses a depth edge."""

import numpy as np
import pytest

from support.moving_scene import K, path, render
from dense_perception.core.motion.motion_scale import MotionScale
from dense_perception.core.motion.pose import motion
from dense_perception.core.motion.scale_map import (MIN_CELL, carried_correction, cell_medians,
                                                    fit_map, fit_scale_map)

pytestmark = [pytest.mark.numerics, pytest.mark.timeout(120)]


def absrel(depth, truth):
    ok = np.isfinite(depth) & np.isfinite(truth) & (truth > 0)
    return float(np.mean(np.abs(depth[ok] - truth[ok]) / truth[ok]))


@pytest.mark.parametrize("name,shape", [
    ("a power law", lambda z: z ** 1.6),          # measured = a * predicted^b, b = 0.6
    ("a tilt", lambda z: z * np.linspace(0.6, 1.4, z.shape[1], dtype=np.float32)[None, :]),
])
def test_the_map_makes_the_depth_better_than_the_networks_best_single_scale(name, shape):
    scaler = MotionScale(min_baseline=0.1)
    published, best = [], []
    for i, pose in enumerate(path(40)):
        grey, depth = render(pose)
        network = shape(depth).astype(np.float32)
        est = scaler.estimate(i / 30, pose, network, K, grey)
        if est.scale is None:
            continue
        assert est.correction is not None and est.correction.shape == depth.shape
        published.append(absrel(network * est.scale * np.exp(est.correction), depth))
        best.append(absrel(network * np.float32(np.nanmedian(depth / network)), depth))
    assert len(published) >= 20, name
    assert np.mean(published) <= 0.8 * np.mean(best), (name, np.mean(published), np.mean(best))


def shape_error(depth, truth):
    """The median |log error| of ``depth`` at its best single scale (the shape left wrong)."""
    ok = np.isfinite(depth) & np.isfinite(truth) & (depth > 0) & (truth > 0)
    logs = np.log(depth[ok] / truth[ok])
    return float(np.median(np.abs(logs - np.median(logs))))


def test_a_map_carried_to_a_later_frame_corrects_that_frames_own_shape():
    """A network whose tilt across the view turns from frame to frame (0.6-1.4 on the
    keyframe, 1.4-0.6 six frames later): the keyframe's map read on the later frame was fitted
    to the keyframe's errors; its metric points moved by the poses and fitted on the later
    frame's own depth correct the later frame's."""
    def network(depth, tilt):
        ramp = np.linspace(1 - tilt, 1 + tilt, depth.shape[1], dtype=np.float32)[None, :]
        return (depth * ramp).astype(np.float32)

    scaler = MotionScale(min_baseline=0.1)
    poses = path(40)
    est = None
    for i, pose in enumerate(poses[:30]):
        grey, depth = render(pose)
        est = scaler.estimate(i / 30, pose, network(depth, 0.4), K, grey)
    assert est.scale is not None and est.points is not None
    _, truth = render(poses[35])
    later = network(truth, -0.4)
    stale = later * np.exp(est.scale_map.correction(later))
    fixed = later * np.exp(carried_correction(est.points, motion(poses[29], poses[35]), K,
                                              later))
    assert shape_error(later, truth) > 0.15  # the tilt alone: up to 0.5 at the view's edges
    assert shape_error(fixed, truth) < 0.15 * shape_error(later, truth)
    assert shape_error(fixed, truth) < 0.5 * shape_error(stale, truth)


def test_points_carried_out_of_the_view_give_no_correction():
    """A keyframe's points behind the later camera (turned round) land nowhere: no map."""
    scaler = MotionScale(min_baseline=0.1)
    est = None
    for i, pose in enumerate(path(30)):
        grey, depth = render(pose)
        est = scaler.estimate(i / 30, pose, depth / 3.7, K, grey)
    turned = np.diag([-1.0, 1.0, -1.0, 1.0])  # half a turn about y
    assert carried_correction(est.points, turned, K, depth / 3.7) is None


def test_the_maps_level_is_the_median_of_its_field_over_every_seventh_valid_pixel():
    """What a keyframe's scale takes from its map without reading it over the whole view:
    the same number, bit for bit, as the full field's median (numpy's, written out here)."""
    rng = np.random.default_rng(5)
    h, w = 90, 120
    view = np.log(rng.uniform(0.5, 5.0, (h, w))).astype(np.float32)
    view[rng.random((h, w)) < 0.1] = np.nan
    u, v = rng.uniform(0, w, 3000), rng.uniform(0, h, 3000)
    log_rel = rng.choice(view[np.isfinite(view)], 3000)
    logs = 0.3 * log_rel + 0.2 * np.sin(u / 30.0) + rng.normal(0, 0.05, 3000)
    fitted = fit_map(logs, u, v, log_rel, view)
    full = fitted.field(view)
    assert np.ptp(full[np.isfinite(view)]) > 0.1  # a map that varies: the median matters
    assert fitted.level(view) == float(np.median(full[np.isfinite(view)][::7]))


def test_without_the_map_there_is_no_correction():
    scaler = MotionScale(min_baseline=0.1, scale_map=False)
    for i, pose in enumerate(path(20)):
        grey, depth = render(pose)
        assert scaler.estimate(i / 30, pose, depth / 3.7, K, grey).correction is None


def test_a_correction_never_crosses_a_depth_edge():
    """A near box (1 m, left half) before a far wall (4 m): the trusted pixels say the box's
    ratio is 2 and the wall's 1. Each side takes its own, up to the edge, with no blend in
    between, although the grid's cells span the edge."""
    h, w = 120, 160
    view = np.full((h, w), 4.0, np.float32)
    view[:, :75] = 1.0                                  # the edge falls inside a grid cell
    rng = np.random.default_rng(0)
    u, v = rng.uniform(0, w, 4000), rng.uniform(0, h, 4000)
    near = u < 75
    logs = np.where(near, np.log(2.0), 0.0)
    rel = np.where(near, 1.0, 4.0)
    field = fit_scale_map(logs, u, v, np.log(rel), np.log(view))
    ratio = np.exp(field[:, :75] - field[:, 75:].mean())
    assert np.allclose(ratio, 2.0, rtol=0.06)
    assert np.allclose(field[:, 75:], field[:, 75:].mean(), atol=0.02)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cell_medians_are_numpys_median_of_each_full_cell(dtype):
    rng = np.random.default_rng(3)
    for trial in range(40):
        values = rng.normal(size=int(rng.integers(0, 2500))).astype(dtype)
        if trial % 2:
            values = np.round(values, 1)  # ties, and cells of even counts
        cells = rng.integers(0, 24, len(values))
        filled, medians, counts = cell_medians(values, cells, 24)
        full = [c for c in range(24) if np.count_nonzero(cells == c) >= MIN_CELL]
        assert filled.tolist() == full
        for cell, median, count in zip(filled, medians, counts):
            expected = np.median(values[cells == cell])
            assert median == expected and median.dtype == expected.dtype  # bit for bit
            assert count == np.count_nonzero(cells == cell)
