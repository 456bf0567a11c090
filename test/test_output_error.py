# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The error of the published scale when the motion scale and the temporal alignment work
together: its parts against the formula written out here, its honesty on a chain with known
noise, and on a real stretch with the colour camera's true motion (registered depth), as
``make eval-real`` judges it."""

import math

import numpy as np
import pytest

from dense_perception.core.motion.output_error import OutputError
from dense_perception.core.scale.metric_scale import ScaleConfig
from tools.eval.pose_noise import odometry_like
from tools.eval.real_scenes import FASTDEPTH
from tools.eval.stretches import SFM
from tools.eval.sequence import evaluate, read_sequence

pytestmark = [pytest.mark.numerics, pytest.mark.timeout(300)]


def written_out(gaps, estimate_sigma, carried):
    """1.5 x the gaps' robust spread (1.4826 x median |gap|), 0.3 x the estimate's sigma,
    3 % per sqrt(frame) carried, a 2 % floor: in quadrature."""
    spread = 1.4826 * float(np.median(np.abs(gaps)))
    return math.sqrt((1.5 * spread) ** 2 + (0.3 * estimate_sigma) ** 2 + 0.03 ** 2 * carried
                     + 0.02 ** 2)


def test_the_error_follows_the_gaps_the_estimate_and_the_frames_carried():
    error = OutputError()
    assert error.update(True, None, None) is None          # nothing measured yet
    # A fresh start on an estimate: fewer than three gaps, the estimate's sigma stands for them.
    first = error.update(False, None, 0.05)
    assert first == pytest.approx(math.sqrt((1.5 * 0.05) ** 2 + (0.3 * 0.05) ** 2 + 0.02 ** 2))
    gaps = [0.01, -0.02, 0.015, -0.005, 0.03]
    for gap in gaps:
        sigma = error.update(True, gap, 0.05)
    assert sigma == pytest.approx(written_out(gaps, 0.05, 0))
    # Frames carried without an estimate: the error grows as a random walk.
    for carried in (1, 2, 3, 4):
        assert error.update(True, None, None) == pytest.approx(written_out(gaps, 0.05, carried))
    assert error.why == "the scale was carried 4 frames without a motion estimate of its own"
    # Poses that jitter widen the gaps, and the error with them.
    for gap in [0.12, -0.1, 0.09, -0.11] * 8:
        wide = error.update(True, gap, 0.05)
    assert wide > 3 * sigma
    assert "the images contradict the poses" in error.why   # said in words one can act on
    # A fresh start without an estimate: nothing vouches for the scale.
    assert error.update(False, None, None) is None


def test_the_claimed_error_covers_a_carried_scale_with_known_noise():
    """A chain as the alignment makes it: each frame carries the last output's scale error
    plus the warp's noise (2 % a frame) and is pulled a tenth of the way towards its own
    estimate (error 4 %, the same for three frames in a row: estimates share partners). At
    least 90 % of the frames lie within their claimed 2 sigma, and the claim is not 3x wide."""
    rng = np.random.default_rng(3)
    error, out, inside, ratios = OutputError(), 0.0, [], []
    estimate = 0.0
    for i in range(3000):
        if i % 3 == 0:
            estimate = rng.normal(0.0, 0.04)
        carried = out + rng.normal(0.0, 0.02)
        out = carried + 0.1 * (estimate - carried)
        sigma = error.update(True, estimate - carried, 0.04)
        if i >= 30:
            inside.append(abs(out) <= 2 * sigma)
            ratios.append(abs(out) / sigma)
    assert np.mean(inside) >= 0.9
    assert np.percentile(ratios, 90) > 2 / 3  # not three times too wide


STRETCH = SFM / "frames-0200-0299"


@pytest.mark.skipif(not (STRETCH.is_dir() and FASTDEPTH.is_file()),
                    reason="../shared/real-scenes (7scenes-redkitchen-sfm, FastDepth) is absent")
def test_a_real_stretch_publishes_metres_where_right_and_claims_honest_errors():
    """FastDepth through the motion scale on frames 200-299 (the colour camera's SfM poses,
    registered depth): with good poses the default bound publishes metres, none more than
    10 % off; with odometry-like poses (2 % long a step, jittered, late) at least 90 % of
    the frames lie within the 2 sigma they claim, and no frame more than 10 % off is
    published."""
    from dense_perception.core.pipeline import DensePipeline, load_pipeline
    from dense_perception.core.settings.table import Settings
    from dataclasses import replace
    fast = load_pipeline(str(FASTDEPTH), Settings(
        model_type="depth", backend="cpu", output_resolution="input", fit="stretch",
        input_normalization="unit"), log=lambda *_: None)
    base = DensePipeline(fast.runner, fast.spec, replace(fast.config, depth_scale_source="none"))
    seq = read_sequence(STRETCH, STRETCH / "trajectory.tum", STRETCH / "camera.yaml")
    noisy = odometry_like(seq.poses, seq.stamps, 0)
    for poses, least in ((None, 30), (noisy, 0)):
        shown = evaluate(base, seq, poses=poses, rows=("motion scale",),
                         max_scale_error=ScaleConfig.max_scale_error)["motion scale"]
        every = evaluate(base, seq, poses=poses, rows=("motion scale",),
                         max_scale_error=1.0)["motion scale"]
        assert shown["frames"] >= least
        assert all(abs(e) <= 0.10 for e, _ in shown["per_frame"].values())
        assert every["frames"] >= 70
        assert every["within_2_sigma"] >= 0.9
