# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""docs/odometry.md's table of bad input to motion says what the code does: each row's case is
run here (ROS-free: the odometry buffer, the TUM reader, the trajectory's matching, the
settings' rules) and what happened is compared with the row: its outcomes in bold (refused,
waited for, restarted, withheld, kept apart, counted, taken) with what the code did, and each
quoted message with the text the code gave. The node's own messages (frame pairs, the mounting,
a frame of a run before a restart) are run over DDS by test_node_odometry_timing.py and
test_node_mounting_suspect.py; here each is checked to be a message the code writes, word for
word. Every row has its check and every check its row."""

import math
import re
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from dense_perception.core.motion.odometry import OdometryBuffer, mountings_problem
from dense_perception.core.motion.trajectory import TrajectoryError, read_tum
from dense_perception.core.wiring.relevance import Where, why_ignored
from dense_perception.core.settings.table import Settings

pytestmark = pytest.mark.timeout(60)

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "odometry.md"
PACKAGE = REPO / "dense_perception"
OUTCOMES = {"refused", "waited for", "restarted", "withheld", "kept apart", "counted", "taken"}
S = 1_000_000_000
STILL = [0.0, 0.0, 0.0, 1.0]


def rows():
    """{(bad input, where): (what happens, said)} of the table under "## Bad input to motion"."""
    text = DOC.read_text().split("## Bad input to motion", 1)[1]
    found = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[0] not in ("bad input", "---"):
            found[(cells[0], cells[1])] = (cells[2], cells[3])
    return found


def driving(*times, **limits):
    buffer = OdometryBuffer(**limits)
    for t in times:
        buffer.add(round(t * S), [t, 0.0, 0.0], STILL)
    return buffer


def tum(tmp_path, lines):
    path = tmp_path / "t.tum"
    path.write_text("\n".join(lines) + "\n")
    return path


def refused_tum(tmp_path, lines):
    with pytest.raises(TrajectoryError) as caught:
        read_tum(tum(tmp_path, lines))
    return {"refused"}, [str(caught.value)]


def in_source(*texts, where="dense_perception"):
    """The node's messages: each must be written, word for word, in the package's code."""
    code = "\n".join(p.read_text() for p in (REPO / where).rglob("*.py"))
    missing = [t for t in texts if t not in code]
    assert not missing, missing
    return list(texts)


# ---- one check per row: what the code did (outcomes) and what it said ----------------------
def late_or_slow(tmp_path):
    buffer = driving(*(k / 10 for k in range(11)), wait_s=5.0)
    got = []
    lookup = threading.Thread(target=lambda: got.append(
        buffer.pose_at(round(1.05 * S), np.eye(4), deadline=time.monotonic() + 5.0)))
    lookup.start()
    deadline = time.monotonic() + 10
    while buffer.waited == 0:
        assert time.monotonic() < deadline
        time.sleep(0.002)
    buffer.add(round(1.1 * S), [1.1, 0.0, 0.0], STILL)
    lookup.join(5)
    assert got[0].pose[0, 3] == pytest.approx(1.05)  # interpolated once it came
    outcomes = {"waited for"}
    gave_up = buffer.pose_at(round(1.15 * S), np.eye(4), deadline=time.monotonic() - 1)
    outcomes |= {"withheld"} if gave_up.pose is None and gave_up.kind == "late odometry" else set()
    buffer.add(round(1.2 * S), [1.2, 0.0, 0.0], STILL)
    outcomes |= {"counted"} if buffer.late == 1 else set()
    return outcomes, [gave_up.reason]


def stopped(tmp_path):
    buffer = driving(0.0, 0.1, wait_s=0.3, max_gap_s=0.5)
    found = buffer.pose_at(round(2.0 * S), np.eye(4), deadline=time.monotonic() + 30)
    assert buffer.waited == 0
    return ({"withheld"} if found.pose is None else set()), [found.reason]


def past_the_bag(tmp_path):
    found = driving(0.0, 0.1).pose_at(round(0.12 * S), np.eye(4))  # read ahead: no deadline
    return ({"withheld"} if found.pose is None and found.kind == "out of range" else set()), \
        [found.reason]


def past_the_last_line(tmp_path):
    trajectory = read_tum(tum(tmp_path, ["1.0 0 0 0 0 0 0 1", "1.1 0.1 0 0 0 0 0 1"]))
    (_, pose), = trajectory.at_stamps([1.13])
    return ({"taken"} if pose[0, 3] == pytest.approx(0.1) else set()), []


def jump_back(tmp_path):
    buffer = driving(9.8, 9.9, 10.0)
    buffer.add(round(9.41 * S), [0.0, 0.0, 0.0], STILL)
    # a frame of the old run is withheld by the node (generation), run in the node tests
    return ({"restarted", "withheld"} if buffer.restarts == 1 else set()), \
        [buffer.restart_note, *in_source("started again after this frame came")]


def lost(tmp_path):
    found = driving(0.0, 0.1, 0.9, 1.0, max_gap_s=0.5).pose_at(round(0.5 * S), np.eye(4))
    from dense_perception.ros.odometry_input import SequenceGaps  # noqa: PLC0415 (rclpy)
    gaps = SequenceGaps()
    for n in (1, 2, 5):
        gaps.seen({"publisher_gid": {"data": b"p"}, "publication_sequence_number": n})
    return ({"withheld"} if found.kind == "gap" else set()) | ({"counted"} if gaps.lost == 2
                                                                else set()), [found.reason]


def alternating(tmp_path):
    return {"kept apart"}, in_source("kept apart, not used for the camera's pose",
                                     "odometry frames changed to")


def wrong_mounting(tmp_path):
    return {"withheld"}, in_source("off the epipolar lines", "suspect the camera's mounting first")


def quaternion_message(tmp_path):
    buffer = driving(0.0)
    problem = buffer.add(round(0.1 * S), [0.1, 0.0, 0.0], [0.0, 0.0, 0.0, 2.0])
    buffer.add(round(0.2 * S), [0.2, 0.0, 0.0], STILL)
    near = buffer.pose_at(round(0.15 * S), np.eye(4))
    return ({"refused"} if problem else set()) | ({"withheld"} if near.pose is None else set()), \
        [problem, near.reason]


def quaternion_setting(tmp_path):
    outcomes, said = refused_tum(tmp_path, ["0 0 0 0 0 0 0.5 1"])
    problem = mountings_problem([0.0, 0.0, 0.0, 0.0, 0.0, 0.5, 1.0])
    assert problem and problem.split("mounting ", 1)[1] in said[0]  # the same words for both
    return outcomes, [*said, problem]


def nan_message(tmp_path):
    problem = OdometryBuffer().add(0, [math.nan, 0.0, 0.0], STILL)
    return ({"refused"} if problem else set()), [problem]


def no_mounting(tmp_path):
    found = driving(0.0, 0.1).pose_at(round(0.05 * S), None)
    return ({"withheld", "refused"} if found.pose is None else set()), in_source(
        "set camera_in_base", "the camera's mounting is not in the bag")


def stamps_not_covered(tmp_path):
    from dense_perception.offline.inputs.poses import posed_frames  # noqa: PLC0415
    trajectory = read_tum(tum(tmp_path, ["1.0 0 0 0 0 0 0 1", "1.1 0.1 0 0 0 0 0 1"]))
    notes = []
    posed_frames(iter(()), trajectory, None, stamps=[1.05, 5.0], notes=notes)
    with pytest.raises(TrajectoryError) as caught:
        trajectory.at_stamps([7.0, 8.0])
    return {"withheld", "refused"}, [*notes, str(caught.value)]


def lines_not_frames(tmp_path):
    trajectory = read_tum(tum(tmp_path, ["0 0 0 0 0 0 0 1", "1 0 0 0 0 0 0 1"]))
    with pytest.raises(TrajectoryError) as caught:
        trajectory.for_frames(3)
    return {"refused"}, [str(caught.value)]


def alignment_without_poses(tmp_path):
    why = why_ignored("temporal_alignment", Settings(), Where("depth", False, "images",
                                                             motion=False))
    return ({"refused"} if why else set()), [why]


CHECKS = {
    ("late or slow odometry (the message after a frame's stamp not there yet: 200 ms late, "
     "10 Hz beside 30 Hz images)", "node"): late_or_slow,
    ("odometry that stopped (or a clock far ahead of it)", "node"): stopped,
    ("a frame stamped past the last odometry message", "bag"): past_the_bag,
    ("a frame stamped just past a trajectory's last line", "`--poses`, stamp-named frames"):
        past_the_last_line,
    ("clock jump back (any stamp before the newest message)", "node, bag"): jump_back,
    ("lost messages", "node"): lost,
    ("`child_frame_id` alternating (`base_link`, `base_footprint`)", "node"): alternating,
    ("wrong mounting (an identity `camera_in_base` on a forward camera)", "node, bag"):
        wrong_mounting,
    ("non-unit quaternion", "node, bag: odometry message"): quaternion_message,
    ("non-unit quaternion", "`camera_in_base`, `--camera-in-base`; a `--poses` line"):
        quaternion_setting,
    ("NaN or inf in an odometry message", "node, bag"): nan_message,
    ("NaN in a TUM file", "`--poses`"): lambda p: refused_tum(p, ["0 0 nan 0 0 0 0 1"]),
    ("unsorted TUM stamps", "`--poses`"): lambda p: refused_tum(
        p, ["1 0 0 0 0 0 0 1", "0.5 0 0 0 0 0 0 1"]),
    ("duplicate TUM stamps", "`--poses`"): lambda p: refused_tum(
        p, ["1 0 0 0 0 0 0 1", "1 0 0 0 0 0 0 1"]),
    ("a TUM file with another number of lines than the frames (not named by stamps)",
     "`--poses`"): lines_not_frames,
    ("stamp-named frames whose stamps the trajectory does not cover", "`--poses`"):
        stamps_not_covered,
    ("`--temporal-alignment` / `--no-temporal-alignment` without poses",
     "offline (no `--poses`, a bag without `--odometry-topic`)"): alignment_without_poses,
    ("no mounting", "node; bag"): no_mounting,
}


def test_every_row_has_its_check_and_every_check_its_row():
    assert set(rows()) == set(CHECKS)


@pytest.mark.parametrize("case", list(CHECKS), ids=lambda c: f"{c[0][:40]} ({c[1][:20]})")
def test_each_row_says_what_the_code_does(tmp_path, case):
    what, said = rows()[case]
    claimed = set(re.findall(r"\*\*(.+?)\*\*", what))
    assert claimed <= OUTCOMES, claimed
    outcomes, texts = CHECKS[case](tmp_path)
    assert claimed == outcomes, (claimed, outcomes)
    quoted = re.findall(r"`([^`]+)`", said)
    for phrase in quoted:
        assert any(phrase in t for t in texts), (phrase, texts)
    assert bool(quoted) == bool(texts), (quoted, texts)  # a message given is quoted
