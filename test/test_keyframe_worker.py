# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The motion scale off the frame path: the node's frames never wait for a keyframe's flow
(newest wins, nothing queues), offline every keyframe is measured and lands a fixed number of
keyframes later (the same published depth under any CPU load, bit for bit)."""

import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from dense_perception.core.geometry.intrinsics import Intrinsics
from dense_perception.core.motion.keyframes import KeyframeWorker
from dense_perception.core.motion.motion_scale import MotionScale
from dense_perception.core.motion.pose import pose_matrix
from support.common import run_cli as run
from tools.eval.real_scenes import FASTDEPTH
from tools.eval.stretches import SFM

pytestmark = [pytest.mark.numerics, pytest.mark.timeout(300)]

W, H = 160, 120
K = Intrinsics(120.0, 120.0, 79.5, 59.5, W, H)


def frame(i: int):
    """(pose, relative depth, grey) of a camera sliding 4 cm a frame past a textured wall."""
    pose = pose_matrix([0.04 * i, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0])
    u = np.arange(W, dtype=np.float32)[None, :] + 120.0 * 0.04 * i / 2.0
    v = np.arange(H, dtype=np.float32)[:, None]
    grey = (128 + 60 * np.sin(u / 5.0) * np.cos(v / 4.0)).astype(np.uint8)
    return pose, np.full((H, W), 0.5, np.float32), grey


class HeldScale(MotionScale):
    """The real motion scale, whose measurement starts only when the test lets it (to hold
    the worker busy for as long as the test looks)."""

    def __init__(self) -> None:
        super().__init__(min_baseline=0.05)
        self.go = threading.Event()
        self.started = threading.Semaphore(0)
        self.measured: list[float] = []

    def measure(self, pair, relative, k):
        self.started.release()
        assert self.go.wait(60)
        self.measured.append(pair.t)
        return super().measure(pair, relative, k)


def pairs(scale: MotionScale, count: int):
    """The first ``count`` frames that have a partner, as the frame path pairs them."""
    out, i = [], 0
    while len(out) < count:
        pose, rel, grey = frame(i)
        got = scale.pair(i / 10, pose, grey)
        if not hasattr(got, "reason"):
            out.append((got, rel))
        i += 1
    return out


def test_a_busy_worker_never_holds_the_frame_and_the_newest_keyframe_wins():
    scale = HeldScale()
    worker = KeyframeWorker(scale, wait=False)
    (a, rel), (b, _), (c, _) = pairs(scale, 3)
    worker.submit(a, rel, K)
    assert scale.started.acquire(timeout=30)  # the worker holds a: busy
    assert worker.collect() is None          # the frame goes on at once, nothing landed
    worker.submit(b, rel, K)
    worker.submit(c, rel, K)                 # b has not started: c replaces it
    assert worker.dropped == 1
    scale.go.set()
    landed, deadline = [], time.monotonic() + 60
    while (len(scale.measured) < 2 or not landed) and time.monotonic() < deadline:
        got = worker.collect()  # never blocks: polled as frames would
        if got is not None:
            landed.append(got.t)
    assert scale.measured == [a.t, c.t]  # never b: nothing queues
    assert set(landed) <= {a.t, c.t} and landed
    worker.close()


def test_offline_every_keyframe_is_measured_and_lands_in_order():
    scale = MotionScale(min_baseline=0.05)
    worker = KeyframeWorker(scale, wait=True)
    seen = []
    for pair, rel in pairs(scale, 4):
        worker.submit(pair, rel, K)
        got = worker.collect()  # waits for the one outstanding
        seen.append(got.t)
        assert got.estimate.reason == "" or got.estimate.scale is None
    assert seen == sorted(seen) and len(seen) == 4 and worker.dropped == 0
    worker.close()


@pytest.mark.parametrize("lag", [1, 2])
def test_offline_a_measurement_lands_lag_keyframes_later_and_none_is_lost(lag):
    """Each keyframe collects before it submits: the first ``lag`` find nothing outstanding
    enough; from then on each gets the keyframe ``lag`` before it, in order, none dropped."""
    scale = MotionScale(min_baseline=0.05)
    worker = KeyframeWorker(scale, wait=True, lag=lag)
    submitted, landed = [], []
    for pair, rel in pairs(scale, 6):
        got = worker.collect()
        landed.append(None if got is None else got.serial)
        submitted.append(worker.submit(pair, rel, K))
    assert landed == [None] * lag + submitted[:6 - lag]
    assert worker.dropped == 0
    worker.close()


STRETCH = SFM / "frames-0000-0099"


@pytest.mark.skipif(not (STRETCH.is_dir() and FASTDEPTH.is_file()),
                    reason="../shared/real-scenes (7scenes-redkitchen-sfm, FastDepth) is absent")
def test_process_publishes_the_same_depth_under_any_cpu_load(tmp_path, capsys):
    """The motion scale's worker runs beside the frames; offline its results land by stamps,
    so a run with both cores busy elsewhere gives the same bytes as one without."""
    command = ["process", STRETCH, "--model", FASTDEPTH, "--model-type", "depth",
               "--input-normalization", "unit", "--fit", "stretch",
               "--output-resolution", "input", "--camera-info-yaml", STRETCH / "camera.yaml",
               "--outputs", "depth", "--poses", STRETCH / "trajectory.tum",
               "--depth-scale-source", "motion", "--max-scale-error", "1"]
    depth = {}
    for name in ("idle", "loaded"):
        burners = [] if name == "idle" else [
            subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
        try:
            code, _, stderr = run([*command, "--out", tmp_path / name], capsys)
        finally:
            for burner in burners:
                burner.kill()
                burner.wait()
        assert code == 0, stderr
        depth[name] = {p.name: np.load(p) for p in (tmp_path / name / "depth").glob("*.npy")}
    assert len(depth["idle"]) >= 50  # frames in metres
    assert depth["idle"].keys() == depth["loaded"].keys()
    for name, array in depth["idle"].items():
        assert np.array_equal(array, depth["loaded"][name], equal_nan=True), name


def test_a_late_measurement_pulls_by_the_time_since_the_last_one():
    """A keyframe's gap landing on a later frame pulls the output by 1 - exp(-dt / 0.3 s), dt
    since the last frame a measurement pulled (not since the previous frame): the same pull
    per second whichever frames the measurements land on; the pulls are summed for the
    ledger (``pulled``)."""
    import math
    from dense_perception.core.motion.temporal import DepthUnit, TemporalAligner
    aligner = TemporalAligner()
    depth = np.full((H, W), 2.0, np.float32)
    pose = pose_matrix([0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0])  # a still camera
    unit = DepthUnit("motion", True)
    out, done = aligner.align(0.0, pose, depth, K, unit, None)
    assert not done.aligned and done.pulled == 0.0
    pulled = 0.0
    # gaps landing at 0.1 s, none at 0.2 s, one at 0.3 s (0.2 s after the last pull)
    for t, gap, dt in ((0.1, 0.1, 0.1), (0.2, None, None), (0.3, 0.1, 0.2)):
        out, done = aligner.align(t, pose, depth, K, unit, None, gap=gap)
        assert done.aligned
        if gap is None:
            assert done.pulled == pytest.approx(pulled)
            continue
        pull = 1.0 - math.exp(-dt / 0.3)
        pulled += pull * gap
        assert done.pulled == pytest.approx(pulled, rel=1e-6)
        # the still scene: the past carries the earlier pulls, this one adds its own
        assert float(np.median(out / depth)) == pytest.approx(math.exp(pulled), rel=1e-4)


def test_a_closed_worker_starts_again_on_the_next_keyframe():
    """A camera closed and used again (a lifecycle node deactivated and activated): the next
    keyframe is measured, offline waited for as ever."""
    scale = MotionScale(min_baseline=0.05)
    worker = KeyframeWorker(scale, wait=True)
    (a, rel), (b, _) = pairs(scale, 2)
    worker.submit(a, rel, K)
    assert worker.collect().t == a.t
    worker.close()
    worker.submit(b, rel, K)
    assert worker.collect().t == b.t  # measured: it would wait forever on a stopped worker
    worker.close()
