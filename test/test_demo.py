# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""`make demo` end to end on one bundled model: the real node over DDS, files written."""

import json
import os
import subprocess
import sys

import cv2
import numpy as np
import pytest

pytest.importorskip("rclpy")

from support.common import REPO, TIPS_TEST_MODEL  # noqa: E402

pytestmark = [pytest.mark.ros, pytest.mark.slow]


def test_demo_runs_the_node_and_saves_every_output(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-m", "tools.demo.run", "--model",
                           TIPS_TEST_MODEL, "--out", str(tmp_path), "--frames", "1"],
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    out = tmp_path / "test_tipsv2_b14_dpt"
    for name in ("input.png", "depth_colored.png", "normals_colored.png",
                 "segmentation_colored.png", "segmentation_labels.png", "points.ply",
                 "depth_image.npy", "classes.json"):
        assert (out / name).is_file(), name
    depth = np.load(out / "depth_image.npy")
    assert depth.shape == (448, 448) and np.isfinite(depth).all()
    assert 0.5 <= depth.min() and depth.max() <= 4.0  # 0.5 + 2r + g + 0.5b
    labels = cv2.imread(str(out / "segmentation_labels.png"), cv2.IMREAD_UNCHANGED)
    assert labels.shape == (448, 448) and labels.max() <= 149
    assert len(json.loads((out / "classes.json").read_text())) == 150
    assert "inference mean (ms)" in proc.stdout  # the diagnostics table
