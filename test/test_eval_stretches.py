# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The stretch evaluation of ``make eval-real``: odometry-like poses from a true trajectory
(against formulas written out here), and one stretch with the colour camera's true motion
(``7scenes-redkitchen-sfm``) through the sequence tool's command line with them, as
docs/accuracy.md's tables are made, judged against its registered depth."""

import subprocess
import sys

import numpy as np
import pytest

from support.common import REPO
from tools.eval.pose_noise import late, odometry_like
from tools.eval.stretches import FASTDEPTH, POSE_KINDS, SFM, claimed, label, stretches
from dense_perception.core.motion.pose import pose_matrix, quaternion_from_rotation

pytestmark = [pytest.mark.numerics, pytest.mark.timeout(300)]


def straight(count: int, speed: float = 0.3, rate: float = 30.0):
    """A camera moving along x at ``speed`` m/s, turning about y at 6 deg/s."""
    stamps = [i / rate for i in range(count)]
    poses = []
    for t in stamps:
        a = np.radians(6.0 * t)
        rot = np.array([[np.cos(a), 0, np.sin(a)], [0, 1, 0], [-np.sin(a), 0, np.cos(a)]])
        poses.append(pose_matrix([speed * t, 0.0, 0.0], quaternion_from_rotation(rot)))
    return stamps, poses


def test_odometry_like_poses_are_late_long_and_jittered_as_said():
    stamps, poses = straight(31)
    # Late alone: the pose of t + 20 ms stamped t (x = 0.3 (t + 0.02)), held at the end.
    delayed = late(poses, stamps, 0.02)
    assert delayed[10][0, 3] == pytest.approx(0.3 * (10 / 30 + 0.02), abs=1e-9)
    assert delayed[-1][0, 3] == pytest.approx(0.3, abs=1e-9)
    # Long alone: every step 2 % longer, so 1.02 x the path (the turn is kept).
    longer = odometry_like(poses, stamps, 0, long=0.02, jitter_m=0.0, jitter_deg=0.0, delay=0.0)
    assert np.linalg.norm(longer[-1][:3, 3] - longer[0][:3, 3]) == pytest.approx(0.3 * 1.02,
                                                                                rel=1e-6)
    assert np.allclose(longer[-1][:3, :3], poses[-1][:3, :3], atol=1e-9)
    # Jitter: each step 1 mm off in translation (a random direction), seeded.
    a = odometry_like(poses, stamps, 7, long=0.0, jitter_deg=0.0, delay=0.0)
    b = odometry_like(poses, stamps, 7, long=0.0, jitter_deg=0.0, delay=0.0)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    steps = [np.linalg.inv(a[i]) @ a[i + 1] for i in range(30)]
    true_steps = [np.linalg.inv(poses[i]) @ poses[i + 1] for i in range(30)]
    offsets = [np.linalg.norm(s[:3, 3] - t[:3, 3]) for s, t in zip(steps, true_steps)]
    assert np.allclose(offsets, 0.001, atol=1e-9)


def test_the_claimed_error_is_2_sigma_of_the_log_as_a_fraction():
    assert claimed(None) is None
    assert claimed(0.05) == pytest.approx(np.exp(0.1) - 1)  # 2 x 0.05 of log scale: 10.5 %
    assert POSE_KINDS == ("good", "odometry-like", "tracker")


@pytest.mark.skipif(not (SFM.is_dir() and FASTDEPTH.is_file()),
                    reason="../shared/real-scenes (7scenes-redkitchen-sfm, FastDepth) is absent")
def test_a_stretch_through_the_sequence_tool_with_odometry_like_poses():
    assert [label(p) for p in stretches()] == ["0-99", "100-199", "200-299", "400-499",
                                               "500-599"]
    first = stretches()[0]
    assert all((first / name).is_file() for name in ("trajectory.tum",
                                                     "trajectory_kinectfusion.tum"))
    done = subprocess.run(
        [sys.executable, "-m", "tools.eval.sequence", "--sequence", str(first),
         "--trajectory", str(first / "trajectory.tum"),
         "--camera-info-yaml", str(first / "camera.yaml"), "--model", str(FASTDEPTH),
         "--pose-noise", "0", "--max-scale-error", "1"],
        cwd=REPO, capture_output=True, text=True, timeout=280)
    assert done.returncode == 0, done.stderr
    row = next(line for line in done.stdout.splitlines() if line.startswith("| motion scale"))
    published = int(row.rsplit("|", 2)[-2].split(" of ")[0])
    assert published >= 30, row
    # against the registered depth, odometry-like poses (2 % long a step) stay within 10 %
    median = float(row.split("|")[3].split("(")[1].split("%")[0])
    assert median <= 10.0, row
