# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The camera-motion stages per 504x280 frame (DA3-Small's published grid): the temporal alignment
(the previous output looked up from the new view, robust alignment, fusion), the TAE of the
last two outputs, and the motion scale (two DIS flows at 320 px wide, the fit with its error,
the pose clock's offset, each from the estimator's own stage timers), the scale map (on a full
frame with a third of its pixels trusted) and the scale filter, on a painted textured scene
seen along a hand-held-like path. Medians of interleaved rounds; the goals on the project's
2-core machine: the alignment <= 5 ms, the filter and the map together <= 8 ms. Each stage is
also given per second of 30 Hz video (ms of one core per second, every frame posed) and, with
``--model LABEL=PATH`` (``make bench`` passes its real-size DA3 and TIPSv2 stand-ins), as a
share of that model's own CPU inference on this machine.
Run: ``make bench`` (one of its steps), or
``python -m tools.bench.motion --rounds 40``.

``--json PATH`` keeps the stages' ms; ``--compare A.json B.json`` prints A / B per stage:
``make bench-arm64`` runs the bench in the emulated arm64 userland of ``make test-arm64`` and on
this machine's x86_64 under the same qemu-user, where only the ratio means something.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import cv2
import numpy as np

from dense_perception.core.backends.runner import BackendConfig, open_runner
from dense_perception.core.geometry.intrinsics import Intrinsics
from dense_perception.core.motion.motion_scale import MotionScale
from dense_perception.core.motion.scale_map import fit_scale_map
from dense_perception.core.motion.pose import motion, pose_matrix
from dense_perception.core.motion.temporal import DepthUnit, TemporalAligner
from dense_perception.core.motion.warp import tae
from dense_perception.core.scale.scale_filter import ScaleFilter

WIDTH, HEIGHT = 504, 280
K = Intrinsics(400.0, 400.0, 251.5, 139.5, WIDTH, HEIGHT)
GOAL_MS = 5.0
GOAL_MAP_FILTER_MS = 8.0
VIDEO_HZ = 30.0
MODEL_RUNS = 5  # timed inferences per model (after its warm-up)


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
    scale_filter = ScaleFilter(5.0)
    times: dict[str, list[float]] = {"temporal alignment": [], "TAE of the last two": [],
                                     "motion scale": [], "of which the two DIS flows": [],
                                     "of which the pose clock's offset": [],
                                     "scale map": [], "scale filter": [],
                                     "scale map + filter": []}
    rng = np.random.default_rng(0)  # the map's input: a third of the view trusted
    u = rng.uniform(0, WIDTH - 1, WIDTH * HEIGHT // 3)
    v = rng.uniform(0, HEIGHT - 1, WIDTH * HEIGHT // 3)
    logs = rng.normal(0.0, 0.1, len(u))
    for i, (pose, depth, grey) in enumerate(frames):
        start = time.perf_counter()
        fused, _ = aligner.align(i / 30, pose, depth, K, DepthUnit("fixed", True), 1.0)
        aligned = time.perf_counter()
        if i:
            tae(frames[i - 1][1], fused, K, motion(frames[i - 1][0], pose))
        flicker = time.perf_counter()
        scaler.stage_ms = {}
        estimate = scaler.estimate(i / 30, pose, depth, K, grey)
        done = time.perf_counter()
        stages = scaler.stage_ms  # the estimator's own stage timers
        scale_filter.update(i / 30, estimate.scale, estimate.sigma)
        filtered = time.perf_counter()
        if i >= 12:  # past the first baseline: every stage does its full work
            times["temporal alignment"].append(1000 * (aligned - start))
            times["TAE of the last two"].append(1000 * (flicker - aligned))
            times["motion scale"].append(1000 * (done - flicker))
            times["of which the two DIS flows"].append(stages.get("flow", 0.0))
            times["of which the pose clock's offset"].append(stages.get("clock offset", 0.0))
            start = time.perf_counter()  # the map on a full frame of trusted pixels
            fit_scale_map(logs, u, v, np.log(depth[v.astype(int), u.astype(int)]), np.log(depth))
            map_ms = 1000 * (time.perf_counter() - start)
            times["scale map"].append(map_ms)
            times["scale filter"].append(1000 * (filtered - done))
            times["scale map + filter"].append(map_ms + 1000 * (filtered - done))
    return {name: statistics.median(v) for name, v in times.items()}


def model_ms(path: str) -> float:
    """Median ms of one CPU inference of the model at ``path`` (LiteRT, the default threads)."""
    runner = open_runner(path, BackendConfig("cpu"), log=lambda *_: None)
    times = []
    for _ in range(MODEL_RUNS):
        start = time.perf_counter()
        runner.run()
        times.append(1000 * (time.perf_counter() - start))
    runner.close()
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--model", action="append", default=[], metavar="LABEL=PATH",
                        help="a model whose CPU inference each stage is compared with")
    parser.add_argument("--json", metavar="PATH", help="also write the stages' ms here")
    parser.add_argument("--compare", nargs=2, metavar=("A", "B"),
                        help="print A / B per stage from two --json files (no bench)")
    args = parser.parse_args(argv)
    if args.compare:
        return compare(*args.compare)
    models = dict(m.split("=", 1) for m in args.model)
    cv2.setNumThreads(1)  # beside inference's threads, as in the node
    results = bench(args.rounds)
    inference = {label: model_ms(path) for label, path in models.items()}
    shares = "".join(f" share of {label} ({ms:.0f} ms) |" for label, ms in inference.items())
    print(f"| camera motion, per {WIDTH}x{HEIGHT} frame | ms (median of {args.rounds}) | "
          f"ms per s of {VIDEO_HZ:g} Hz video |{shares}")
    print("|---|---|---|" + "---|" * len(inference))
    for name, ms in results.items():
        goal = {"temporal alignment": f" (goal <= {GOAL_MS:g})",
                "scale map + filter": f" (goal <= {GOAL_MAP_FILTER_MS:g})"}.get(name, "")
        share = "".join(f" {100 * ms / model:.1f} % |" for model in inference.values())
        print(f"| {name} | {ms:.2f}{goal} | {ms * VIDEO_HZ:.0f} |{share}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump({"rounds": args.rounds, "stages_ms": results}, out, indent=1)
    return 0


def compare(path_a: str, path_b: str) -> int:
    """Print each stage's ms in the runs written to ``path_a`` and ``path_b`` and their ratio
    (the way to read emulated runs, whose wall time means nothing on its own)."""
    runs = []
    for path in (path_a, path_b):
        with open(path, encoding="utf-8") as f:
            runs.append(json.load(f)["stages_ms"])
    print(f"| camera motion, per {WIDTH}x{HEIGHT} frame | {path_a} ms | {path_b} ms | ratio |")
    print("|---|---|---|---|")
    for name, a in runs[0].items():
        b = runs[1].get(name)
        ratio = f"{a / b:.0f}" if b and b > 0.05 else "-"  # a stage of a few us: no ratio
        print(f"| {name} | {a:.2f} | {'-' if b is None else f'{b:.2f}'} | {ratio} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
