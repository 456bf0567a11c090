# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""docs/robot-bag-in-metres.md, tried as a new user would: each of its bash blocks run as
written, in order, from a folder laid out as the repository is (``.venv``, ``tools`` and
``../shared`` where the page expects them); what they print against the page's own output
blocks, and the metres they publish against the kitchen's measured depth."""

import json
import re
import subprocess
import sys
from pathlib import Path

import cv2
import numpy as np
import pytest

from support.bag_maker import read_bag
from support.common import REPO
from tools.eval.real_scenes import FASTDEPTH, REAL_SCENES

from dense_perception.core import conversions

PAGE = REPO / "docs" / "robot-bag-in-metres.md"
STRETCH = REAL_SCENES / "7scenes-redkitchen-sfm" / "frames-0200-0299"
IN_METRES = re.compile(r"(\d+) of (\d+) frames in metres")

# repository: a page of this repository, tried once (make test), in the venv that set it up
pytestmark = [pytest.mark.slow, pytest.mark.repository, pytest.mark.rerun,
              pytest.mark.timeout(300),
              pytest.mark.skipif(not (STRETCH.is_dir() and FASTDEPTH.is_file()),
                                 reason="../shared/real-scenes is not beside the repository")]


def blocks(kind: str) -> list[str]:
    """The page's fenced blocks of ``kind`` (bash, text), in order."""
    return re.findall(rf"```{kind}\n(.*?)```", PAGE.read_text(), re.S)


def workspace(tmp_path: Path) -> Path:
    """A folder where the page's relative paths lead where they do in the repository."""
    root = tmp_path / "repo"
    root.mkdir()
    (root / ".venv").symlink_to(Path(sys.prefix))  # the venv running these tests
    (root / "tools").symlink_to(REPO / "tools")
    (tmp_path / "shared").symlink_to(REAL_SCENES.parent)
    return root


def test_the_worked_page_runs_as_written_and_its_metres_are_right(tmp_path):
    commands, shown = blocks("bash"), blocks("text")
    assert len(commands) == 4 and len(shown) == 3
    root = workspace(tmp_path)
    printed = []
    for command in commands:
        done = subprocess.run(["bash", "-c", command.strip()], cwd=root, capture_output=True,
                              text=True, timeout=240)
        assert done.returncode == 0, f"{command}\n{done.stdout}\n{done.stderr}"
        printed.append(done.stdout + done.stderr)
    # The process run: the page's count of frames in metres, give or take a frame or three of
    # another CPU's arithmetic, and the same kinds of reasons.
    page_n, page_m = map(int, IN_METRES.search(shown[0]).groups())
    run_n, run_m = map(int, IN_METRES.search(printed[1]).groups())
    assert run_m == page_m == 100 and abs(run_n - page_n) <= 3, printed[1]
    for kind in ("the camera moved less than motion_scale_min_baseline within N s",
                 "each frame's motion estimate and the scale the poses carried"):
        assert kind in printed[1] and kind in shown[0]
    # The summary's one-liner prints the same count as the run's closing line.
    assert IN_METRES.search(printed[2]).groups() == (str(run_n), "100")
    assert shown[1].split(" frames in metres")[1].split("%")[0] in printed[2]
    # --require-metres on the first 20 frames: exit 2, said in one line.
    assert "exit 2" in printed[3] and "exit 2" in shown[2]
    assert ("no frame came out in metres and --require-metres was given" in printed[3])
    run = root / "robot_run"
    assert {"scale.png", "summary.json", "foxglove_layout.json"} <= \
        {p.name for p in run.iterdir()}
    assert cv2.imread(str(run / "scale.png")) is not None
    # The rerun recording, read back: a frame marked in metres for each one published.
    from support.rerun_recordings import column, read_recording
    found = read_recording(root / "robot_run.rrd")
    frames, in_metres = column(found, "/scale/in_metres", "Scalars:scalars")
    assert frames == list(range(100))
    assert sum(v.as_py()[0] for v in in_metres) == run_n
    assert len(column(found, "/world/points", "Points3D:positions")[0]) == run_n
    # Every published depth against the measured depth of its frame (registered to the colour
    # camera, millimetres), by stamp: none more than 10 % off, most within 2 %.
    stamps = np.array([float(line.split()[0]) for line in
                       (STRETCH / "trajectory.tum").read_text().splitlines()
                       if line.strip() and not line.startswith("#")])
    measured = sorted(STRETCH.glob("*.depth.png"))
    messages, _ = read_bag(run)
    off = []
    for _, msg in messages["/camera/depth/image"]:
        t = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
        i = int(np.argmin(np.abs(stamps - t)))
        assert abs(stamps[i] - t) < 1e-3
        depth = conversions.image_msg_to_array(msg)
        truth = cv2.imread(str(measured[i]), cv2.IMREAD_UNCHANGED).astype(np.float32) / 1000
        truth = cv2.resize(truth, depth.shape[::-1], interpolation=cv2.INTER_NEAREST)
        ok = (truth > 0) & np.isfinite(depth)
        off.append(float(np.median(depth[ok] / truth[ok])) - 1)
    assert len(off) == run_n
    assert max(np.abs(off)) <= 0.10 and float(np.median(np.abs(off))) <= 0.02, off
    summary = json.loads((run / "summary.json").read_text())
    assert summary["depth"]["frames_metric"] == run_n
    assert summary["depth"]["units"].startswith("metres (scale from motion) for") and \
        f"for {run_n} of 100 frames; the others relative" in summary["depth"]["units"]
