# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The pose clock's offset against the image clock, measured from the flow and compensated:
on the shared real 7-Scenes frames, a trajectory whose every pose is 60 ms late (the pose of
t + 60 ms stamped t, as a late odometry stream gives them) is found to within 15 ms."""

import json

import numpy as np
import pytest

from support.common import run_cli as run
from tools.eval.pose_noise import late
from tools.eval.real_scenes import PYDNET, REAL_SCENES
from dense_perception.core.motion.clock_offset import ClockOffset, epipolar_residual, pose_at
from dense_perception.core.motion.pose import motion, pose_matrix, quaternion_from_rotation
from dense_perception.core.motion.trajectory import read_tum
from dense_perception.core.geometry.intrinsics import Intrinsics

pytestmark = [pytest.mark.numerics, pytest.mark.timeout(300)]
SEVEN = REAL_SCENES / "7scenes-redkitchen"
real = pytest.mark.skipif(not (SEVEN.is_dir() and PYDNET.is_file()),
                          reason="../shared/real-scenes/7scenes-redkitchen is absent")
K = Intrinsics(525.0, 525.0, 320.0, 240.0, 640, 480)


def turning(t: float) -> np.ndarray:
    """A camera 1 m/s forward-right, turning faster and faster (a delay changes its motion)."""
    angle = 0.5 * t * t
    rot = np.array([[np.cos(angle), 0, np.sin(angle)], [0, 1, 0],
                    [-np.sin(angle), 0, np.cos(angle)]])
    return pose_matrix([0.3 * t, 0.0, t], quaternion_from_rotation(rot))


def test_the_offset_is_where_the_matches_fit_their_epipolar_lines():
    """Points 2-6 m away, seen 0.1 s apart by a camera whose poses are stamped 40 ms late: the
    matches come from the true poses, the curves from the stamped ones."""
    rng = np.random.default_rng(0)
    stamps = [round(0.4 + 0.02 * i, 3) for i in range(30)]
    given = [turning(t + 0.04) for t in stamps]  # the pose of t + 40 ms stamped t
    clock = ClockOffset()
    for tb in np.round(np.arange(0.7, 0.9, 0.02), 3):  # ten pairs 0.1 s apart
        ta = round(tb - 0.1, 3)
        pts = np.column_stack([rng.uniform(-2, 2, 500), rng.uniform(-1, 1, 500),
                               rng.uniform(2, 6, 500)])
        ub, vb = K.fx * pts[:, 0] / pts[:, 2] + K.cx, K.fy * pts[:, 1] / pts[:, 2] + K.cy
        in_a = (motion(turning(tb), turning(ta))[:3, :3] @ pts.T).T + \
            motion(turning(tb), turning(ta))[:3, 3]
        ua, va = K.fx * in_a[:, 0] / in_a[:, 2] + K.cx, K.fy * in_a[:, 1] / in_a[:, 2] + K.cy
        clock.add_pair(ub, vb, ua, va, tb, ta, stamps, given, K)
        # The true motion explains the matches exactly; the stamped one does not.
        assert epipolar_residual(ub, vb, ua, va, motion(turning(tb), turning(ta)), K) < 1e-6
        assert epipolar_residual(ub, vb, ua, va,
                                 motion(pose_at(stamps, given, tb), pose_at(stamps, given, ta)),
                                 K) > 0.5
    assert clock.offset == pytest.approx(-0.04, abs=0.005)


@real
def test_a_60_ms_late_trajectory_is_found_and_compensated(tmp_path, capsys):
    traj = read_tum(SEVEN / "trajectory.tum")
    stamps = [float(t) for t in traj.stamps]
    poses = late(list(traj.poses), stamps, 0.060)
    lines = []
    for t, pose in zip(stamps, poses):
        q = quaternion_from_rotation(pose[:3, :3])
        lines.append(" ".join(f"{x:.9f}" for x in (t, *pose[:3, 3], *q)))
    delayed = tmp_path / "late.tum"
    delayed.write_text("\n".join(lines) + "\n")
    out = tmp_path / "out"
    code, _, stderr = run(["process", SEVEN, "--model", PYDNET, "--model-type", "depth",
                           "--input-normalization", "unit", "--fit", "stretch",
                           "--output-resolution", "input", "--camera-info-yaml",
                           SEVEN / "camera.yaml", "--outputs", "depth", "--out", out,
                           "--poses", delayed, "--depth-scale-source", "motion",
                           "--max-scale-error", "1"], capsys)
    assert code == 0, stderr
    depth = json.loads((out / "summary.json").read_text())["depth"]
    assert depth["pose_clock_offset_s"] == pytest.approx(-0.060, abs=0.015)


@real
def test_an_offset_set_by_hand_is_used_as_given_instead_of_measured(tmp_path, capsys):
    """The same 60 ms, set with --pose-clock-offset: reported as given, and the published
    metres are those of the true poses (the poses taken back at their own times)."""
    traj = read_tum(SEVEN / "trajectory.tum")
    stamps = [float(t) for t in traj.stamps]
    poses = late(list(traj.poses), stamps, 0.060)
    delayed = tmp_path / "late.tum"
    delayed.write_text("".join(" ".join(f"{x:.9f}" for x in (
        t, *pose[:3, 3], *quaternion_from_rotation(pose[:3, :3]))) + "\n"
        for t, pose in zip(stamps, poses)))
    common = ["process", SEVEN, "--model", PYDNET, "--model-type", "depth",
              "--input-normalization", "unit", "--fit", "stretch", "--output-resolution",
              "input", "--camera-info-yaml", SEVEN / "camera.yaml", "--outputs", "depth",
              "--depth-scale-source", "motion", "--max-scale-error", "1"]
    runs = {}
    for name, extra in (("true", ["--poses", SEVEN / "trajectory.tum"]),
                        ("set", ["--poses", delayed, "--pose-clock-offset", "-0.06"])):
        out = tmp_path / name
        code, _, stderr = run([*common, "--out", out, *extra], capsys)
        assert code == 0, stderr
        runs[name] = (json.loads((out / "summary.json").read_text())["depth"],
                      {p.name: np.load(p) for p in (out / "depth").glob("*.npy")})
    assert runs["set"][0]["pose_clock_offset_s"] == pytest.approx(-0.06)
    # Interpolated poses differ from the recorded ones by the trajectory's curvature only:
    # the scale each frame gets is the true poses' within 3 %.
    scales = {name: {f["input"]: f["scale"] for f in summary["frames"] if f["scale"]}
              for name, (summary, _) in runs.items()}
    shared = sorted(set(scales["true"]) & set(scales["set"]))
    assert len(shared) >= 50
    off = [scales["set"][n] / scales["true"][n] - 1.0 for n in shared]
    assert max(map(abs, off)) < 0.03, off
    # The published depth: between two measurements the alignment carries it by the
    # (interpolated) poses, which adds their curvature error: within 5 %.
    true, given = runs["true"][1], runs["set"][1]
    both = sorted(set(true) & set(given))
    assert len(both) >= 50
    ratios = [float(np.nanmedian(given[n] / true[n])) for n in both]
    assert max(abs(r - 1.0) for r in ratios) < 0.05, ratios
