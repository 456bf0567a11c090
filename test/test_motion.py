# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The camera's own motion in the ROS-free core: depth moved between views, TAE, the temporal
alignment and the metric scale from moving, in a painted world whose depth and camera path are
known exactly; TUM trajectories and their bad input."""

import cv2
import numpy as np
import pytest

from support.moving_scene import K, path, render
from dense_perception.core.motion.camera_motion import CameraMotion, MotionConfig
from dense_perception.core.motion.motion_scale import MotionScale
from dense_perception.core.motion.pose import invert, motion, pose_matrix
from dense_perception.core.motion.temporal import TemporalAligner
from dense_perception.core.motion.trajectory import TrajectoryError, read_tum
from dense_perception.core.motion.warp import backward_warp, forward_warp, tae

pytestmark = pytest.mark.numerics

S = 3.7  # the unknown factor: relative depth = true depth / S


def test_true_depth_moved_by_the_true_motion_is_the_next_views_depth():
    poses = path(2, step=0.03, turn_deg=1.0)
    (_, d0), (_, d1) = render(poses[0]), render(poses[1])
    moved = forward_warp(d0, K, motion(poses[0], poses[1]))
    both = np.isfinite(moved)
    assert both.mean() > 0.8
    # Nearest-pixel rounding moves a point by up to half a pixel; the depth there is exact.
    rel = np.abs(moved[both] - d1[both]) / d1[both]
    assert np.median(rel) < 0.002
    assert tae(d0, d1, K, motion(poses[0], poses[1])) < 0.01
    # A depth that does not hold still: 10 % more in the second view is a TAE of 1/11.
    assert tae(d0, d1 * 1.1, K, motion(poses[0], poses[1])) == pytest.approx(0.1 / 1.1, abs=0.01)


def test_true_depth_looked_up_from_the_next_view_is_that_views_depth():
    """Walking towards the wall (the view magnifies: a forward warp opens holes between the
    moved pixels), each pixel of the second view, at its own true depth, finds its point in
    the first view: every pixel the first view saw gets its depth, within the bilinear
    sampling of a plane; pixels that look beyond the first view's edge get none."""
    poses = [pose_matrix([0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0]),
             pose_matrix([0.02, 0.0, 0.3], [0.0, 0.0, 0.0, 1.0])]
    (_, d0), (_, d1) = render(poses[0]), render(poses[1])
    a_to_b = motion(poses[0], poses[1])
    assert np.isnan(forward_warp(d0, K, a_to_b)).mean() > 0.05  # holes between moved pixels
    moved, carried = backward_warp(d0, K, a_to_b, d1, np.full(d0.shape, 7.0, np.float32))
    seen = np.isfinite(moved)
    assert seen.mean() > 0.98
    assert np.median(np.abs(moved[seen] / d1[seen] - 1)) < 0.001
    assert (carried[seen] == 7.0).all()
    # Shifted sideways by 0.5 m at a 3 m wall, the first view's left edge leaves view: NaN.
    aside = motion(poses[0], pose_matrix([-0.5, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0]))
    _, d_aside = render(pose_matrix([-0.5, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0]))
    moved_aside, _ = backward_warp(d0, K, aside, d_aside)
    assert np.isnan(moved_aside[:, :20]).all() and np.isfinite(moved_aside[:120, -20:]).all()


def test_motion_scale_gives_the_metres_of_relative_depth_in_the_painted_world():
    poses = path(40)
    scaler = MotionScale(min_baseline=0.1)
    estimates = []
    for i, pose in enumerate(poses):
        grey, depth = render(pose)
        est = scaler.estimate(i / 30, pose, depth / S, K, grey)
        if i < 9:  # 1.1 cm a frame: 10 cm after 9 frames
            assert est.scale is None and "too little baseline" in est.reason
        if est.scale is not None:
            estimates.append(est.scale)
    assert len(estimates) >= 25
    assert np.max(np.abs(np.array(estimates) / S - 1)) < 0.03


def test_a_world_to_camera_trajectory_is_refused_with_what_to_check():
    poses = path(40)
    scaler = MotionScale(min_baseline=0.1)
    reasons = set()
    for i, pose in enumerate(poses):
        grey, depth = render(pose)
        est = scaler.estimate(i / 30, invert(pose), depth / S, K, grey)
        assert est.scale is None
        reasons.add(est.reason.split(" (")[0])
    assert any("does not fit the camera motion" in r or "against the camera motion" in r
               for r in reasons), reasons


def test_temporal_alignment_of_consistent_depth_is_the_true_depth_and_holds_still():
    poses = path(20)
    aligner = TemporalAligner()
    outputs = []
    for i, pose in enumerate(poses):
        _, depth = render(pose)
        fused, done = aligner.align(i / 30, pose, depth, K, "m", 1.0)
        assert done.aligned == (i > 0), done.reason
        valid = np.isfinite(depth)
        assert np.median(np.abs(fused[valid] / depth[valid] - 1)) < 0.002
        outputs.append(fused)
    flicker = [tae(outputs[i], outputs[i + 1], K, motion(poses[i], poses[i + 1]))
               for i in range(19)]
    assert max(flicker) < 0.01


def test_temporal_alignment_steadies_flicker_and_stays_anchored():
    # Each frame's own depth is off by a random 10 % (a relative model's units drifting);
    # each frame measures its own scale with 3 % noise: the output flickers less and its scale
    # stays within a few % of the truth.
    rng = np.random.default_rng(0)
    poses = path(30)
    aligner = TemporalAligner()
    raw, fused_all, truths = [], [], []
    for i, pose in enumerate(poses):
        _, depth = render(pose)
        wobble = float(np.exp(rng.normal(0.0, 0.1)))
        frame = depth * np.float32(wobble)
        measured = float(np.exp(rng.normal(0.0, 0.03))) / wobble  # this frame's own scale
        fused, _ = aligner.align(i / 30, pose, frame, K, "m", measured)
        raw.append(frame)
        fused_all.append(fused)
        truths.append(depth)
    steps = [motion(poses[i], poses[i + 1]) for i in range(29)]
    before = np.mean([tae(raw[i], raw[i + 1], K, steps[i]) for i in range(29)])
    after = np.mean([tae(fused_all[i], fused_all[i + 1], K, steps[i]) for i in range(29)])
    assert after < before / 2
    errors = [abs(np.nanmedian(f / t) - 1) for f, t in zip(fused_all[5:], truths[5:])]
    assert max(errors) < 0.06


def roughness(depth: np.ndarray) -> float:
    """Mean |log depth - its 5x5 median|: the fine detail of a depth image (cracks, blocks)."""
    log = np.log(depth).astype(np.float32)
    return float(np.nanmean(np.abs(log - cv2.medianBlur(log, 5))))


def test_temporal_alignment_adds_no_cracks_walking_forward():
    """Walking towards the wall, the moved past spreads: pixels nothing lands on open between
    the moved ones, and each frame's own depth is bent by another tilt (a network's shape
    flickering, 4 % over the view). The output may not gain fine detail the frames do not
    have: cracks where the frame shows through the moved past, blocks where moved pixels
    round to the grid. The planes' own roughness is ~0; cracks made it up to 0.36 %."""
    rng = np.random.default_rng(1)
    aligner = TemporalAligner()
    u = np.linspace(-1.0, 1.0, K.width, dtype=np.float32)[None, :]
    v = np.linspace(-1.0, 1.0, K.height, dtype=np.float32)[:, None]
    added, shares = [], []
    for i in range(20):
        pose = pose_matrix([0.005 * i, 0.0, 0.04 * i], [0.0, 0.0, 0.0, 1.0])
        _, depth = render(pose)
        a, b = rng.normal(0.0, 0.04, 2)
        frame = depth * np.exp(a * u + b * v).astype(np.float32)
        fused, done = aligner.align(i / 30, pose, frame, K, "m", 1.0)
        if i >= 3:
            added.append(roughness(fused) - roughness(frame))
            shares.append(done.fused_share)
    assert np.median(shares) > 0.8  # the past is blended nearly everywhere
    assert max(added) < 0.0003, max(added)


def test_temporal_alignment_resets_and_says_why():
    poses = path(3)
    aligner = TemporalAligner(max_translation=0.5)
    _, depth = render(poses[0])
    assert aligner.align(0.0, poses[0], depth, K, "m")[1].reason == "no previous output"
    assert "no camera pose" in aligner.align(0.033, None, depth, K, "m")[1].reason
    aligner.align(0.066, poses[0], depth, K, "m")
    far = poses[0].copy()
    far[:3, 3] += [1.0, 0, 0]
    assert "a jump" in aligner.align(0.1, far, depth, K, "m")[1].reason
    # A new scene: the same view with every depth 3x: no agreement.
    _, d1 = render(poses[1])
    aligner.align(0.133, poses[1], d1, K, "m")
    scrambled = d1.copy()
    scrambled[:, : d1.shape[1] // 2] *= 3.0
    scrambled[:, d1.shape[1] // 2:] /= 3.0
    reason = aligner.align(0.166, poses[1], scrambled, K, "m")[1].reason
    assert "a new scene" in reason
    assert "unit changed" in aligner.align(0.2, poses[1], d1, K, "relative")[1].reason


def test_camera_motion_reports_tae_of_its_last_two_outputs():
    poses = path(3)
    cam = CameraMotion(MotionConfig(temporal_alignment=False))
    for i, pose in enumerate(poses):
        _, depth = render(pose)
        out, report = cam.align(i / 30, pose, depth, K, "m", 1.0)
        assert out is depth and not report.aligned
        assert (report.tae is None) == (i == 0)
        assert report.tae is None or report.tae < 0.01


def write(tmp_path, text):
    p = tmp_path / "t.tum"
    p.write_text(text)
    return p


def test_tum_reads_camera_to_world_poses_and_refuses_bad_lines(tmp_path):
    traj = read_tum(write(tmp_path, "# t tx ty tz qx qy qz qw\n0 1 2 3 0 0 0 1\n"
                                    "0.5 1 2 4 0 0.7071068 0 0.7071068\n"))
    assert len(traj) == 2 and traj.poses[1][:3, 3].tolist() == [1, 2, 4]
    # 90 deg about y: the camera's z (forward) is the world's x.
    assert np.allclose(traj.poses[1][:3, 2], [1, 0, 0], atol=1e-6)
    with pytest.raises(TrajectoryError, match="line 2 is not 't tx ty tz qx qy qz qw'"):
        read_tum(write(tmp_path, "0 1 2 3 0 0 0 1\n1 2 3\n"))
    with pytest.raises(TrajectoryError, match="line 1: quaternion .* has length 2.0000, not 1"):
        read_tum(write(tmp_path, "0 1 2 3 0 0 0 2\n"))
    with pytest.raises(TrajectoryError, match="holds no pose"):
        read_tum(write(tmp_path, "# nothing\n"))
    with pytest.raises(TrajectoryError, match="has 2 poses but the input has 3 frames"):
        traj.for_frames(3)
    assert traj.for_frames(2)[1][0] == 0.5
    # A video at 2 fps whose 4 frames include both stamps: matched by stamp.
    matched = traj.for_frames(4, [0.0, 0.5, 1.0, 1.5])
    assert matched[0] is not None and matched[1] is not None and matched[2] is None
