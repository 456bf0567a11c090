# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""``dense-perception process --poses``: a folder with a camera trajectory is a sequence (temporal
alignment, ``--depth-scale-source motion``); bad trajectories are refused in one line; on the
shared real 7-Scenes frames the motion scale gives metres that hold still."""

import json

import cv2
import numpy as np
import pytest

from support.common import DA3_TEST_MODEL
from support.common import run_cli as run
from support.seven_scenes import measured, published
from tools.common.metric_scene import paint
from tools.eval.real_scenes import PYDNET, REAL_SCENES
from dense_perception.core.motion.pose import invert, quaternion_from_rotation
from dense_perception.core.motion.trajectory import read_tum

pytestmark = pytest.mark.numerics

SEVEN = REAL_SCENES / "7scenes-redkitchen"
real = pytest.mark.skipif(not (SEVEN.is_dir() and PYDNET.is_file()),
                          reason="../shared/real-scenes/7scenes-redkitchen is absent")
COMMAND = ["--model", PYDNET, "--model-type", "depth", "--input-normalization", "unit",
           "--fit", "stretch", "--output-resolution", "input",
           "--camera-info-yaml", SEVEN / "camera.yaml", "--outputs", "depth"]


def folder_of_frames(tmp_path, count=3):
    folder = tmp_path / "frames"
    folder.mkdir()
    for i in range(count):
        z = np.full((60, 80), 2.0 + 0.1 * i, np.float32)
        cv2.imwrite(str(folder / f"f{i}.color.png"), cv2.cvtColor(paint(z), cv2.COLOR_RGB2BGR))
        cv2.imwrite(str(folder / f"f{i}.depth.png"), (z * 1000).astype(np.uint16))
    return folder


@pytest.mark.parametrize("lines,why", [
    (["0 0 0 0 0 0 0 1", "1 0 0 0 0 0 0 1"], "has 2 poses but the input has 3 frames"),
    (["0 0 0 0 0 0 0 1", "1 0 0 0 0 0 0 1", "2 0 0 0 0 0 0.5 1"], "has length 1.1180, not 1"),
    (["0 0 0 0 0 0 0 1", "1 0 0 0 0 0 1", "2 0 0 0 0 0 0 1"], "line 2 is not 't tx ty tz"),
])
def test_a_trajectory_that_does_not_fit_is_refused_in_one_line(tmp_path, capsys, lines, why):
    folder = folder_of_frames(tmp_path)  # its .depth.png files are not frames: 3 frames
    traj = tmp_path / "t.tum"
    traj.write_text("\n".join(lines) + "\n")
    code, _, stderr = run(["process", folder, "--model", DA3_TEST_MODEL, "--out",
                           tmp_path / "out", "--poses", traj], capsys)
    assert code == 2 and why in stderr and len(stderr.strip().splitlines()) == 1, stderr
    assert not (tmp_path / "out").exists()


def test_motion_scale_without_poses_says_what_to_give(tmp_path, capsys):
    code, _, stderr = run(["process", folder_of_frames(tmp_path), "--model", DA3_TEST_MODEL,
                           "--out", tmp_path / "out", "--depth-scale-source", "motion"], capsys)
    assert code == 2 and "needs the camera's motion: --poses FILE" in stderr


def test_a_posed_folder_is_one_sequence_with_the_trajectorys_times(tmp_path, capsys):
    folder = folder_of_frames(tmp_path)
    traj = tmp_path / "t.tum"
    traj.write_text("".join(f"{i / 30:.6f} {0.01 * i} 0 0 0 0 0 1\n" for i in range(3)))
    out = tmp_path / "out"
    code, _, stderr = run(["process", folder, "--model", DA3_TEST_MODEL, "--out", out,
                           "--poses", traj, "--outputs", "depth"], capsys)
    assert code == 0, stderr
    assert sorted(p.name for p in (out / "depth").iterdir()) == [
        "f0.color.npy", "f1.color.npy", "f2.color.npy"]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["frames"] == 3 and summary["poses"] == str(traj)


def test_the_jump_limit_reaches_the_alignment_of_a_moving_camera(tmp_path, capsys):
    """A camera driving 0.3 m a frame towards a wall of one colour (the TIPSv2 stand-in's depth
    is its colour's, every frame alike): within the default jump of 0.5 m each frame is fused
    with the last one moved 0.3 m nearer, so it differs from the colour's depth; with
    --temporal-max-translation 0.2 each frame is a jump and is its own depth."""
    from support.bag_maker import tips_depth
    from support.common import TIPS_TEST_MODEL
    colour = (120, 120, 120)
    folder = tmp_path / "frames"
    folder.mkdir()
    for i in range(3):
        cv2.imwrite(str(folder / f"f{i}.png"), np.full((48, 64, 3), colour, np.uint8))
    traj = tmp_path / "t.tum"
    traj.write_text("".join(f"{i / 10:.6f} 0 0 {0.3 * i} 0 0 0 1\n" for i in range(3)))
    last = {}
    for limit in ("0.5", "0.2"):
        out = tmp_path / f"out{limit}"
        code, _, stderr = run(["process", folder, "--model", TIPS_TEST_MODEL, "--out", out,
                               "--poses", traj, "--outputs", "depth", "--output-resolution",
                               "input", "--temporal-max-translation", limit], capsys)
        assert code == 0, stderr
        last[limit] = np.load(out / "depth" / "f2.npy")
    own = tips_depth(colour)
    np.testing.assert_allclose(last["0.2"][np.isfinite(last["0.2"])], own, rtol=1e-4)
    fused = last["0.5"][np.isfinite(last["0.5"])]
    assert np.median(np.abs(fused / own - 1)) > 0.02


def test_a_folder_named_by_stamps_matches_the_trajectory_by_stamp(tmp_path, capsys):
    """Frames named by their stamps (as TUM RGB-D names them) and a trajectory with a line for
    some of them: the lines go to the frames whose stamps they carry, and the summary says
    which frames had a pose."""
    folder = tmp_path / "rgb"
    folder.mkdir()
    stamps = ["100.000000", "100.500000", "101.000000", "101.500000"]
    for i, stamp in enumerate(stamps):
        z = np.full((60, 80), 2.0 + 0.1 * i, np.float32)
        cv2.imwrite(str(folder / f"{stamp}.png"), cv2.cvtColor(paint(z), cv2.COLOR_RGB2BGR))
    traj = tmp_path / "t.tum"
    traj.write_text("100.0 0 0 0 0 0 0 1\n101.0 0.01 0 0 0 0 0 1\n")  # 2 lines, 4 frames
    out = tmp_path / "out"
    code, _, stderr = run(["process", folder, "--model", DA3_TEST_MODEL, "--out", out,
                           "--poses", traj, "--outputs", "depth"], capsys)
    assert code == 0, stderr
    motion = json.loads((out / "summary.json").read_text())["motion"]
    assert motion == {"frames_with_motion": 2,
                      "frames_without_motion": {"no trajectory line": 2}}
    # The same two lines for frames named otherwise: no stamps to match, a count that differs.
    for i, stamp in enumerate(stamps):
        (folder / f"{stamp}.png").rename(folder / f"frame{i}.png")
    code, _, stderr = run(["process", folder, "--model", DA3_TEST_MODEL, "--out",
                           tmp_path / "out2", "--poses", traj], capsys)
    assert code == 2 and "has 2 poses but the input has 4 frames" in stderr


@real
def test_real_sequence_motion_scale_gives_steady_metres(tmp_path, capsys):
    from tools.eval.sequence import figures, read_sequence
    seq = read_sequence(SEVEN, SEVEN / "trajectory.tum", SEVEN / "camera.yaml")
    truths = [measured(i) for i in range(len(seq.colour))]
    # Before: the frames as the model gives them, each with its best scale, and one scale.
    plain = tmp_path / "plain"
    code, _, stderr = run(["process", SEVEN, *COMMAND, "--out", plain], capsys)
    assert code == 0, stderr
    relative = published(plain)
    assert len(relative) == 100  # the .depth.png beside each frame is not a frame
    rel = [relative[i] for i in range(100)]
    best = {i: r * np.float32(np.nanmedian(t / r)) for i, (r, t) in enumerate(zip(rel, truths))}
    before = figures(best, truths, rel, seq)
    assert before["tae"] == pytest.approx(0.084, abs=0.002)  # the figure measured before
    # After: the done-means command, with every frame's scale published whatever its error
    # (--max-scale-error 1), so that the error it claims can be checked against the truth.
    out = tmp_path / "motion"
    code, _, stderr = run(["process", SEVEN, *COMMAND, "--out", out, "--poses",
                           SEVEN / "trajectory.tum", "--depth-scale-source", "motion",
                           "--max-scale-error", "1"], capsys)
    assert code == 0, stderr
    after = figures(published(out), truths, rel, seq)
    assert after["frames"] >= 50
    assert after["max_error"] <= 0.10
    assert after["tae"] <= 0.04
    assert after["absrel"] <= after["best_absrel"] + 0.02
    summary = json.loads((out / "summary.json").read_text())
    assert summary["depth"]["source"] == "motion"
    assert summary["depth"]["frames_metric"] == after["frames"]
    # Each published frame's scale with its error: the truth within 2 sigma on 90 %.
    # (each frame's entry: its claimed error as /diagnostics gives it, 2 sigma in %)
    claimed = [f["error_2sigma_pct"] for f in summary["depth"]["frames"]]
    errors = [np.log(np.nanmedian(published(out)[i] / truths[i])) for i in published(out)]
    within = [abs(e) <= claimed[i] / 100 for i, e in zip(published(out), errors)]
    assert np.mean(within) >= 0.9
    # The default bound (2 sigma within 8 %) publishes only what it can vouch for, and says so.
    bounded = tmp_path / "bounded"
    code, _, stderr = run(["process", SEVEN, *COMMAND, "--out", bounded, "--poses",
                           SEVEN / "trajectory.tum", "--depth-scale-source", "motion"], capsys)
    assert code == 0, stderr
    kept = figures(published(bounded), truths, rel, seq)
    assert kept["frames"] == 0 or kept["max_error"] <= 0.10
    depth = json.loads((bounded / "summary.json").read_text())["depth"]
    assert depth["frames_not_sure_enough"] + kept["frames"] >= 50
    assert any("exceeds max_scale_error (8 %)" in f["reason"] for f in depth["frames"])
    # scale.png beside it: one tick per frame along the bottom, green in metres, red withheld
    picture = cv2.imread(str(bounded / "scale.png"))
    strip = picture[-8]
    green = (strip[:, 1] > 150) & (strip[:, 2] < 100)
    red = (strip[:, 2] > 200) & (strip[:, 1] < 100)
    runs = [int(np.count_nonzero(np.diff(np.r_[0, m.astype(np.int8)]) == 1))
            for m in (green, red)]
    assert runs == [depth["frames_metric"], len(depth["frames"]) - depth["frames_metric"]]
    # tallied by kind: the numbers are in each frame's reason, not in the key
    assert any(kind.startswith("the scale's error bound exceeds max_scale_error")
               for kind in depth["withheld_by_reason"])
    assert not any(ch.isdigit() for kind in depth["withheld_by_reason"] for ch in kind
                   if kind.startswith("the scale's error bound"))


@real
def test_real_sequence_with_a_world_to_camera_trajectory_gives_no_metres_and_says_why(
        tmp_path, capsys):
    traj = read_tum(SEVEN / "trajectory.tum")
    wrong = tmp_path / "world_to_camera.tum"
    lines = []
    for t, pose in zip(traj.stamps[:60], traj.poses[:60]):
        inv = invert(pose)
        q = quaternion_from_rotation(inv[:3, :3])
        lines.append(f"{t:.6f} " + " ".join(f"{v:.7f}" for v in (*inv[:3, 3], *q)))
    wrong.write_text("\n".join(lines) + "\n")
    out = tmp_path / "out"
    code, _, stderr = run(["process", SEVEN, *COMMAND, "--out", out, "--max-frames", "60",
                           "--poses", wrong, "--depth-scale-source", "motion"], capsys)
    # 60 lines for 100 frames: refused first, in one line.
    assert code == 2 and "has 60 poses but the input has 100 frames" in stderr
    folder = tmp_path / "first60"
    folder.mkdir()
    for i in range(60):
        (folder / f"frame-{i:06d}.color.jpg").symlink_to(SEVEN / f"frame-{i:06d}.color.jpg")
    code, stdout, stderr = run(["process", folder, *COMMAND, "--out", out, "--poses", wrong,
                                "--depth-scale-source", "motion"], capsys)
    assert code == 0, stderr
    depth = json.loads((out / "summary.json").read_text())["depth"]
    assert depth["frames_metric"] == 0
    reasons = " ".join(f["reason"] for f in depth["frames"])
    assert "does not fit the camera motion" in reasons and "camera-to-world" in reasons
    # The run's last line says so plainly, with the reasons counted by kind ...
    last = stdout.strip().splitlines()[-1]
    assert "depth: no frame came out in metres (depth_scale_source motion)" in last, stdout
    assert "does not fit the camera motion" in last
    assert sum(depth["withheld_by_reason"].values()) == 60 == len(depth["frames"])
    # ... and a script that needs the metres gets a failing exit status.
    code, _, stderr = run(["process", folder, *COMMAND, "--out", tmp_path / "required",
                           "--poses", wrong, "--depth-scale-source", "motion",
                           "--require-metres"], capsys)
    assert code == 2 and "no frame came out in metres" in stderr, stderr
