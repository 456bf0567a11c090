# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The temporal alignment and a thing that moves by itself: a painted world from the shared
7-Scenes frames (their measured depth, holes filled from the nearest measured pixel, painted
for the TIPSv2 test model, whose depth is a known function of colour) seen along their
measured camera path, with a 120 px square at 1.0 m sliding 4 px a frame across the view (the
camera's motion does not explain it). Each frame goes through the pipeline twice: as it is
(per frame) and aligned over time; both are scored against the painted truth (the test model's
closed form of the painted colours, :func:`support.model_truth.tips_depth_of`).

Without noise of its own the model's depth is the truth up to resampling: the alignment has
nothing to remove and must not smear the square or the scene. With a per-pixel noise of 1 %
painted into each frame it still removes noise from the scene, and the square is no worse
than per frame."""

import cv2
import numpy as np
import pytest

from support.camera_scenes import paint
from support.common import TIPS_TEST_MODEL
from support.model_truth import tips_depth_of
from tools.eval.real_scenes import REAL_SCENES
from dense_perception.core.geometry.intrinsics import Intrinsics
from dense_perception.core.motion.camera_motion import CameraMotion
from dense_perception.core.pipeline import load_pipeline
from dense_perception.core.settings.table import Settings

SEVEN = REAL_SCENES / "7scenes-redkitchen"
pytestmark = [pytest.mark.numerics, pytest.mark.timeout(180), pytest.mark.slow,
              pytest.mark.skipif(not (SEVEN / "frame-000029.depth.png").is_file(),
                                 reason="../shared/real-scenes/7scenes-redkitchen is absent")]
K = Intrinsics(525.0, 525.0, 320.0, 240.0, 640, 480)  # 7-Scenes' colour camera
FRAMES = 30                  # 1 s at 30 Hz
SIDE, SQUARE_Z = 120, 1.0    # the square: px, m
START, STEP = (140, 180), 4  # its top-left corner in the first frame (x, y), px a frame to the right


@pytest.fixture(scope="module")
def pipeline():
    return load_pipeline(TIPS_TEST_MODEL, Settings(backend="cpu", fit="stretch",
                                                   output_resolution="input"),
                         log=lambda _: None)


def measured(i):
    """Frame i's measured depth (m), its holes filled from the nearest measured pixel."""
    raw = cv2.imread(str(SEVEN / f"frame-{i:06d}.depth.png"), cv2.IMREAD_UNCHANGED)
    z = raw.astype(np.float64) / 1000.0
    hole = raw == 0
    _, label = cv2.distanceTransformWithLabels(hole.astype(np.uint8), cv2.DIST_L2, 5,
                                               labelType=cv2.DIST_LABEL_PIXEL)
    known = np.zeros(label.max() + 1, np.float64)  # each measured pixel's label -> its depth
    known[label[~hole]] = z[~hole]
    z[hole] = known[label[hole]]
    return z


def pose(i):
    """Frame i's camera-to-world pose, as the dataset writes it."""
    return np.loadtxt(SEVEN / f"frame-{i:06d}.pose.txt")


def absrel(depth, truth, mask):
    return float(np.nanmean(np.abs(depth[mask] - truth[mask]) / truth[mask]))


def run(pipeline, noise):
    """Mean AbsRel of the square and of the rest, per frame and aligned, over the aligned
    frames; ``noise``: the per-pixel log noise painted into each frame (a model's own)."""
    motion = CameraMotion()
    scores = {"square": ([], []), "static": ([], [])}
    rng = np.random.default_rng(7)
    for i in range(FRAMES):
        z = measured(i)
        square = np.zeros(z.shape, bool)
        x, y = START[0] + STEP * i, START[1]
        square[y:y + SIDE, x:x + SIDE] = True
        z[square] = SQUARE_Z
        truth = tips_depth_of(paint(z).astype(np.float64))
        wobble = cv2.GaussianBlur(rng.normal(0.0, 1.0, z.shape), (0, 0), 3)
        frame = paint(z * np.exp(noise * wobble / wobble.std()))
        raw = pipeline.infer(frame, "rgb8", camera=K)
        plain = pipeline.finish(raw).depth
        aligned = pipeline.finish(raw, None, None, i / 30.0, pose=pose(i), motion=motion)
        assert aligned.motion.aligned == (i > 0), aligned.motion.reason
        if i == 0:
            continue
        for part, mask in (("square", square), ("static", ~square)):
            scores[part][0].append(absrel(plain, truth, mask))
            scores[part][1].append(absrel(aligned.depth, truth, mask))
    return {part: (float(np.mean(a)), float(np.mean(b))) for part, (a, b) in scores.items()}


def test_a_moving_square_is_not_smeared_and_the_scene_is_no_worse(pipeline):
    scores = run(pipeline, noise=0.0)
    (square, square_aligned), (static, static_aligned) = scores["square"], scores["static"]
    assert 0.001 < square < 0.02 and 0.001 < static < 0.02, scores  # resampling's own error
    assert square_aligned <= 1.2 * square, scores
    assert static_aligned <= static * 1.0001, scores


def test_with_noise_the_scene_is_steadied_and_the_moving_square_not_smeared(pipeline):
    scores = run(pipeline, noise=0.01)
    (square, square_aligned), (static, static_aligned) = scores["square"], scores["static"]
    assert static_aligned < 0.85 * static, scores
    assert square_aligned <= square, scores
