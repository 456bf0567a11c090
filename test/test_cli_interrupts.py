# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Ctrl-C during the offline ``dense-perception`` command: the bag it writes is closed and
readable, a video run leaves its summary, a real SIGINT to the process does the same."""

import json
import os
import signal
import subprocess
import sys

import pytest

from support.common import REPO, TIPS_TEST_MODEL

pytest.importorskip("rosbags")

from support.bag_maker import COLOURS, read_bag, wait_for_flushed_messages, write_bag  # noqa: E402
from support.common import run_cli as run  # noqa: E402
from support.video_maker import write_video  # noqa: E402


# ---- Ctrl-C -------------------------------------------------------------------------------------
def ctrl_c_after(n):
    """A real SIGINT to this process once n frames are handed to inference (as a user's Ctrl-C:
    the CLI's handler asks the loop to stop after the frames in flight)."""
    def hook(done):
        if done == n:
            os.kill(os.getpid(), signal.SIGINT)
    return hook


def keyboard_interrupt_after(n):
    """KeyboardInterrupt raised inside the loop (as a second Ctrl-C: stop at once)."""
    def hook(done):
        if done == n:
            raise KeyboardInterrupt
    return hook


@pytest.mark.parametrize("fmt", ["mcap", "sqlite3"])
def test_ctrl_c_leaves_a_closed_readable_bag(tmp_path, capsys, fmt):
    src = write_bag(tmp_path / "in", "mcap", frames=6)
    out = tmp_path / "out"
    code, _, stderr = run(["process", src, "--model", TIPS_TEST_MODEL, "--backend", "cpu",
                           "--out", out, "--outputs", "depth", "--bag-format", fmt], capsys,
                          after_frame=ctrl_c_after(2))
    assert code == 130
    assert "stopping after the frames in flight" in stderr
    assert "interrupted after 2 frames" in stderr
    msgs, types = read_bag(out)
    assert len(msgs["/cam/depth/image"]) == 2
    assert len(msgs["/cam/image_raw"]) == 2  # input copied up to the last frame done
    summary = json.loads((out / "summary.json").read_text())
    assert summary["interrupted"] is True and summary["frames"] == 2
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # handler restored


def test_keyboard_interrupt_mid_loop_still_closes_the_bag(tmp_path, capsys):
    src = write_bag(tmp_path / "in", "sqlite3", frames=6)
    out = tmp_path / "out"
    code, _, stderr = run(["process", src, "--model", TIPS_TEST_MODEL, "--backend", "cpu",
                           "--out", out, "--outputs", "depth", "--bag-format", "sqlite3"],
                          capsys, after_frame=keyboard_interrupt_after(3))
    assert code == 130
    msgs, _ = read_bag(out)
    done = json.loads((out / "summary.json").read_text())["frames"]
    assert len(msgs["/cam/depth/image"]) == done <= 3


def test_interrupted_video_leaves_a_summary(tmp_path, capsys):
    video, _ = write_video(tmp_path / "clip", COLOURS)
    out = tmp_path / "out"
    code, _, _ = run(["process", video, "--model", TIPS_TEST_MODEL, "--backend", "cpu", "--out",
                      out, "--outputs", "depth"], capsys, after_frame=ctrl_c_after(3))
    assert code == 130
    assert len(list((out / "depth").iterdir())) == 3
    summary = json.loads((out / "summary.json").read_text())
    assert summary["interrupted"] is True and summary["frames"] == 3


@pytest.mark.slow
def test_real_sigint_to_the_process(tmp_path):
    src = write_bag(tmp_path / "in", "mcap", frames=400, extra=False)
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [sys.executable, "-m", "dense_perception", "process", str(src), "--model",
         TIPS_TEST_MODEL, "--backend", "cpu", "--out", str(out), "--outputs", "seg",
         "--copy", "none", "--bag-compression", "none"], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for_flushed_messages(out, proc)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 130, stderr
    msgs, _ = read_bag(out)
    done = len(msgs["/cam/segmentation/labels"])
    assert 0 < done < 400
    assert json.loads((out / "summary.json").read_text())["frames"] == done
    assert "Traceback" not in stderr

