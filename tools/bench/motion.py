"""The camera-motion stages per 504x280 frame (DA3-Small's published grid): the temporal
alignment (forward warp with z-buffer, robust alignment, fusion), the TAE of the last two
outputs, and the motion scale (two DIS flows at 320 px wide, the fit), on a painted textured
scene seen along a hand-held-like path. Medians of interleaved rounds; the goal for the
alignment is <= 5 ms on the project's 2-core machine. Run: ``make bench`` (one of its
steps), or ``python -m tools.bench.motion --rounds 40``.
"""

from __future__ import annotations

import argparse
import statistics
import time

import cv2
import numpy as np

from dense_perception.core.geometry.intrinsics import Intrinsics
from dense_perception.core.motion.motion_scale import MotionScale
from dense_perception.core.motion.pose import motion, pose_matrix
from dense_perception.core.motion.temporal import TemporalAligner
from dense_perception.core.motion.warp import tae

WIDTH, HEIGHT = 504, 280
K = Intrinsics(400.0, 400.0, 251.5, 139.5, WIDTH, HEIGHT)
GOAL_MS = 5.0


def scene(i: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(pose, depth, grey) of frame ``i``: a wall 3 m ahead with a floor, 1 cm a frame."""
    pose = pose_matrix([0.01 * i, 0.0, 0.005 * i], [0.0, 0.0, 0.0, 1.0])
    v = np.arange(HEIGHT, dtype=np.float32)[:, None]
    floor = np.where(v > K.cy + 5, 1.0 * K.fy / np.maximum(v - K.cy, 1e-3), np.inf)
    depth = np.minimum(floor, 3.0 - 0.005 * i).astype(np.float32) * np.ones((1, WIDTH),
                                                                             np.float32)
    u = np.arange(WIDTH, dtype=np.float32)[None, :] + 4.0 * i
    grey = (128 + 60 * np.sin(u / 7.0) * np.cos(v / 5.0)).astype(np.uint8)
    return pose, depth, grey


def bench(rounds: int) -> dict[str, float]:
    """Median ms per frame of each stage over ``rounds`` interleaved rounds."""
    frames = [scene(i) for i in range(rounds + 12)]
    aligner, scaler = TemporalAligner(), MotionScale(min_baseline=0.1)
    times: dict[str, list[float]] = {"temporal alignment": [], "TAE of the last two": [],
                                     "motion scale": []}
    for i, (pose, depth, grey) in enumerate(frames):
        start = time.perf_counter()
        fused, _ = aligner.align(i / 30, pose, depth, K, "m", 1.0)
        aligned = time.perf_counter()
        if i:
            tae(frames[i - 1][1], fused, K, motion(frames[i - 1][0], pose))
        flicker = time.perf_counter()
        scaler.estimate(i / 30, pose, depth, K, grey)
        done = time.perf_counter()
        if i >= 12:  # past the first baseline: every stage does its full work
            times["temporal alignment"].append(1000 * (aligned - start))
            times["TAE of the last two"].append(1000 * (flicker - aligned))
            times["motion scale"].append(1000 * (done - flicker))
    return {name: statistics.median(v) for name, v in times.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=40)
    args = parser.parse_args(argv)
    cv2.setNumThreads(1)  # beside inference's threads, as in the node
    results = bench(args.rounds)
    print(f"| camera motion, per {WIDTH}x{HEIGHT} frame | ms (median of {args.rounds}) |")
    print("|---|---|")
    for name, ms in results.items():
        goal = f" (goal <= {GOAL_MS:g})" if name == "temporal alignment" else ""
        print(f"| {name} | {ms:.2f}{goal} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
