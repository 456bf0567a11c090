# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""``dense-perception process --poses`` on frames named by their stamps: they run in time order
(the stamp's value, not its digits), each takes the trajectory's pose at its own stamp (never a
line by its position), a trajectory on another clock or with a repeated stamp is refused in one
line (exit 2), and ``--temporal-alignment`` without the camera's motion is refused by the
settings' relevance rule like the other motion flags."""

import json
from decimal import Decimal

import cv2
import numpy as np
import pytest

from support.common import DA3_TEST_MODEL
from support.common import run_cli as run
from support.motion_bags import driving, write_motion_bag
from support.video_maker import write_video
from tools.common.metric_scene import paint
from tools.eval.real_scenes import PYDNET, REAL_SCENES

pytestmark = pytest.mark.timeout(300)
SEVEN = REAL_SCENES / "7scenes-redkitchen"
real = pytest.mark.skipif(not (SEVEN.is_dir() and PYDNET.is_file()),
                          reason="../shared/real-scenes/7scenes-redkitchen is absent")
COMMAND = ["--model", PYDNET, "--model-type", "depth", "--input-normalization", "unit",
           "--fit", "stretch", "--output-resolution", "input",
           "--camera-info-yaml", SEVEN / "camera.yaml", "--outputs", "depth",
           "--poses"]  # the trajectory follows
OFFSET = Decimal(1000)  # the stamps that name the frames: 1000 s + the trajectory's


def name_of(stamp):
    """A stamp written without trailing zeros, as some tools name frames: 1000.1, 1000."""
    return format(stamp.normalize(), "f")


def stamp_folder(tmp_path, lines, shift=Decimal(0)):
    """The 7-Scenes frames linked under the names of their stamps (OFFSET + the line's), and
    the trajectory with its stamps OFFSET + ``shift`` later; the names in frame order."""
    folder, names = tmp_path / "stamped", []
    folder.mkdir()
    traj = tmp_path / "stamped.tum"
    rows = []
    for i, line in enumerate(lines):
        stamp, rest = line.split(" ", 1)
        names.append(name_of(OFFSET + Decimal(stamp)))
        (folder / f"{names[-1]}.jpg").symlink_to(SEVEN / f"frame-{i:06d}.color.jpg")
        rows.append(f"{OFFSET + shift + Decimal(stamp):.6f} {rest}")
    traj.write_text("\n".join(rows) + "\n")
    return folder, traj, names


def seven_lines():
    return [line for line in (SEVEN / "trajectory.tum").read_text().splitlines()
            if line.strip() and not line.startswith("#")]


def measured(i):
    raw = cv2.imread(str(SEVEN / f"frame-{i:06d}.depth.png"), cv2.IMREAD_UNCHANGED)
    return np.where(raw > 0, raw.astype(np.float32) / 1000, np.nan)


@real
def test_stamp_named_frames_run_in_time_order_with_their_own_poses(tmp_path, capsys):
    """1000.1 comes after 1000.033333 (compared as digits, 1 < 33333 put 92 of the 100 frames
    out of order): the run gives the frames, scales and figures of the same frames named
    frame-000000 ... in order."""
    lines = seven_lines()
    folder, traj, names = stamp_folder(tmp_path, lines)
    assert names[:4] == ["1000", "1000.033333", "1000.066667", "1000.1"]
    ref = tmp_path / "ref"
    # Every frame in metres whatever its error (--max-scale-error 1): the same frames to compare.
    code, _, stderr = run(["process", SEVEN, *COMMAND, SEVEN / "trajectory.tum", "--out", ref,
                           "--depth-scale-source", "motion", "--max-scale-error", "1"], capsys)
    assert code == 0, stderr
    out = tmp_path / "out"
    code, _, stderr = run(["process", folder, *COMMAND, traj, "--out", out,
                           "--depth-scale-source", "motion", "--max-scale-error", "1"], capsys)
    assert code == 0, stderr
    summary = json.loads((out / "summary.json").read_text())
    expected = json.loads((ref / "summary.json").read_text())
    assert summary["motion"] == {"frames_with_motion": 100, "frames_without_motion": {}}
    # The scale filter saw the frames in the same order, with the same poses and time steps.
    scales = [f["scale"] for f in summary["depth"]["frames"]]
    ref_scales = [f["scale"] for f in expected["depth"]["frames"]]
    assert [s is None for s in scales] == [s is None for s in ref_scales]
    assert [s for s in scales if s is not None] == pytest.approx(
        [s for s in ref_scales if s is not None], rel=1e-4)
    assert summary["depth"]["frames_metric"] == expected["depth"]["frames_metric"] >= 50
    written = {p.stem for p in (ref / "depth").iterdir()}  # the frames in metres
    assert {p.stem for p in (out / "depth").iterdir()} == {
        name for i, name in enumerate(names) if f"frame-{i:06d}.color" in written}
    errors = []
    for i, name in enumerate(names):
        if f"frame-{i:06d}.color" not in written:
            continue
        depth = np.load(out / "depth" / f"{name}.npy")
        assert np.allclose(depth, np.load(ref / "depth" / f"frame-{i:06d}.color.npy"),
                           rtol=1e-4, atol=1e-5, equal_nan=True), name
        errors.append(abs(float(np.nanmedian(depth / measured(i))) - 1))
    # Against the measured depth: the metres of the motion scale (docs/accuracy.md's figure).
    assert len(errors) >= 50 and max(errors) <= 0.10


@real
def test_a_trajectory_on_another_clock_is_refused_for_stamp_named_frames(tmp_path, capsys):
    """The same 100 frames and 100 lines, the lines 5 s later: no frame's stamp is in the
    trajectory, so no pose is taken by line order: exit 2, one line, nothing written."""
    folder, traj, _ = stamp_folder(tmp_path, seven_lines(), shift=Decimal(5))
    out = tmp_path / "out"
    code, _, stderr = run(["process", folder, *COMMAND, traj, "--out", out,
                           "--depth-scale-source", "motion", "--max-scale-error", "1"], capsys)
    assert code == 2 and len(stderr.strip().splitlines()) == 1, stderr
    assert "no frame's stamp (1000.000-1003.300 s" in stderr
    assert "(1005.000-1008.300 s)" in stderr and "clock" in stderr
    assert not out.exists()


def painted_folder(tmp_path, stamps):
    """Frames of a flat scene at 2 m named by ``stamps`` (strings)."""
    folder = tmp_path / "rgb"
    folder.mkdir()
    z = np.full((60, 80), 2.0, np.float32)
    for stamp in stamps:
        cv2.imwrite(str(folder / f"{stamp}.png"), cv2.cvtColor(paint(z), cv2.COLOR_RGB2BGR))
    return folder


def test_frames_outside_the_trajectory_get_no_pose_and_are_counted(tmp_path, capsys):
    """Four frames 0.1 s apart, a trajectory of four lines of which two cover the first two
    frames and two lie 5 s later: two frames with a pose, two without, said in summary.json
    and once on stderr."""
    folder = painted_folder(tmp_path, ["100.0", "100.1", "100.2", "100.3"])
    traj = tmp_path / "t.tum"
    traj.write_text("100.0 0 0 0 0 0 0 1\n100.1 0.01 0 0 0 0 0 1\n"
                    "105.0 0.02 0 0 0 0 0 1\n105.1 0.03 0 0 0 0 0 1\n")
    out = tmp_path / "out"
    code, _, stderr = run(["process", folder, "--model", DA3_TEST_MODEL, "--out", out,
                           "--poses", traj, "--outputs", "depth"], capsys)
    assert code == 0, stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["motion"] == {"frames_with_motion": 2,
                                 "frames_without_motion": {"no trajectory line": 2}}
    assert len(summary["warnings"]) == 1 and "2 of 4 frames have no pose" in stderr
    assert "the first at 100.200 s" in summary["warnings"][0]


def test_a_repeated_stamp_is_refused_in_one_line(tmp_path, capsys):
    """A video of three frames and three lines, two of them at one stamp: no frame gets a
    second frame's pose; exit 2 naming the line."""
    video, _ = write_video(tmp_path / "v", [(90, 120, 150)] * 3)
    traj = tmp_path / "t.tum"
    traj.write_text("0.0 0 0 0 0 0 0 1\n0.0 0.01 0 0 0 0 0 1\n0.2 0.02 0 0 0 0 0 1\n")
    out = tmp_path / "out"
    code, _, stderr = run(["process", video, "--model", DA3_TEST_MODEL, "--out", out,
                           "--poses", traj], capsys)
    assert code == 2 and len(stderr.strip().splitlines()) == 1, stderr
    assert "line 2: stamp 0.0 is the previous line's too" in stderr
    assert not out.exists()


@pytest.mark.parametrize("flag", ["--temporal-alignment", "--no-temporal-alignment"])
def test_temporal_alignment_without_motion_is_refused_in_one_line(tmp_path, capsys, flag):
    """Without --poses (a folder) or --odometry-topic (a bag) there is no motion to align
    with: the flag would do nothing, so it is refused as the other settings are; with the
    trajectory it is taken."""
    folder = painted_folder(tmp_path, ["100.0", "100.1"])
    out = tmp_path / "out"
    code, _, stderr = run(["process", folder, "--model", DA3_TEST_MODEL, "--out", out, flag],
                          capsys)
    assert code == 2 and len(stderr.strip().splitlines()) == 1, stderr
    assert ("--temporal-alignment has no effect without the camera's motion (offline: "
            "--poses FILE") in stderr
    assert not out.exists()
    bag = write_motion_bag(tmp_path / "b", [0.2], driving(0.0, 0.4))
    code, _, stderr = run(["process", bag, "--model", DA3_TEST_MODEL, "--out", out, flag],
                          capsys)
    assert code == 2 and "--odometry-topic TOPIC for a bag" in stderr, stderr
    traj = tmp_path / "t.tum"
    traj.write_text("100.0 0 0 0 0 0 0 1\n100.1 0.01 0 0 0 0 0 1\n")
    code, _, stderr = run(["process", folder, "--model", DA3_TEST_MODEL, "--out", out, flag,
                           "--poses", traj, "--outputs", "depth"], capsys)
    assert code == 0, stderr
    motion = json.loads((out / "summary.json").read_text())["motion"]
    assert motion["frames_with_motion"] == 2


def test_stamp_names_are_listed_in_time_order_and_frame_numbers_as_before(tmp_path):
    """Stamps by value (1000.1 after 1000.066667, 1000 first); whole numbers alone are frame
    numbers, in their natural order, and mixed names stay in name order."""
    from dense_perception.offline.inputs.file_io import list_images, name_stamps
    stamped = ["1000.1", "1000.033333", "1000", "1000.3", "1000.066667", "1000.233333",
               "1000.133333", "1000.2", "1000.166667", "1000.266667"]
    folder = painted_folder(tmp_path, stamped)
    assert [p.stem for p in list_images(folder)] == [
        "1000", "1000.033333", "1000.066667", "1000.1", "1000.133333", "1000.166667",
        "1000.2", "1000.233333", "1000.266667", "1000.3"]
    numbered = tmp_path / "numbered"
    numbered.mkdir()
    for name in ("10", "9", "0100", "2"):
        (numbered / f"{name}.png").write_bytes(b"")
    assert [p.stem for p in list_images(numbered)] == ["2", "9", "10", "0100"]
    assert name_stamps(list_images(numbered)) is None  # frame numbers: one line per frame


def test_a_frame_between_two_lines_takes_their_interpolated_pose(tmp_path):
    """At a quarter of the way from a line at 0 s (x = 0, no turn) to one at 0.2 s (x = 0.2 m,
    a quarter turn about z): x = 0.05 m and a turn of 22.5 deg; 0.04 s past the last line its
    pose, 0.1 s past it none; across a gap of 1 s none."""
    from dense_perception.core.motion.trajectory import read_tum
    traj = tmp_path / "t.tum"
    s = np.sqrt(0.5)
    traj.write_text(f"0.0 0 0 0 0 0 0 1\n0.2 0.2 0 0 0 0 {s} {s}\n1.2 0.3 0 0 0 0 {s} {s}\n")
    matched = read_tum(traj).at_stamps([0.05, 0.2 + 0.0005, 0.7, 1.24, 1.3])
    stamp, pose = matched[0]
    a = np.radians(22.5)
    assert stamp == 0.05 and np.allclose(pose[:3, 3], [0.05, 0, 0])
    assert np.allclose(pose[:3, :3], [[np.cos(a), -np.sin(a), 0], [np.sin(a), np.cos(a), 0],
                                      [0, 0, 1]], atol=1e-9)
    assert np.allclose(matched[1][1][:3, 3], [0.2, 0, 0])  # on the line (within 2 ms)
    assert matched[2] is None  # 0.2 s - 1.2 s: a gap of 1 s
    assert np.allclose(matched[3][1][:3, 3], [0.3, 0, 0]) and matched[4] is None
