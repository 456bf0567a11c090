# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The host path through the node over DDS: per 1280x720 frame, the node's own stage means from
/diagnostics (everything but inference), with every output subscribed and with depth only.

The set-up: the bundled test models (inference about 1 and 14 ms), 1280x720 bgr8 at
5 Hz with CameraInfo, default parameters (DA3: ``depth_scale_source: fixed``, so that it has
points), ``points_stride`` 2 and 1. Host ms = preprocess + extract + postprocess + publish (the
sub-stages scale and labels_confidence are parts of them); the host ceiling is 1000 / host ms,
the fastest model rate the host path allows. Run: ``make bench-host``.

``--before PATH`` (a checkout of older code, e.g. ``git worktree add /tmp/before e0b2fd7``)
measures that code's node beside this one in paired rounds (before, after, before, after, ...
on the same feed, so a noisy machine's drift hits both) and prints after / before per row.

It runs in a ROS domain of its own (``--domain-id``; by default 10 + pid % 100, below the
tests' 110-209): on a shared machine another process's camera on ``image`` would otherwise
feed the measured node too. ``--reliable`` plays the frames reliable: best effort (a driver's
QoS, the default), most 1280x720 frames lose a UDP fragment on a busy 2-core machine, and the
few that arrive leave the start-up frames in the means.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

from dense_perception.ros.diagnostics import HOST_STAGES
from tools.bench.loadgen import run_stream

MODELS = {"da3": "models/test_da3_small.tflite", "tipsv2": "models/test_tipsv2_b14_dpt.tflite"}
GOALS_MS = {("da3", 2): 6.0, ("da3", 1): 20.0, ("tipsv2", 2): 15.0, ("tipsv2", 1): 22.0}


def node_script(checkout: Path | None) -> list[str] | None:
    """The node started from ``checkout`` (its package first on sys.path), or this one."""
    if checkout is None:
        return None
    return ["-c", f"import runpy, sys; sys.path.insert(0, {str(checkout.resolve())!r}); "
                  "runpy.run_module('dense_perception.ros.node', run_name='__main__')"]


def measure(kind: str, stride: int, everything: bool, seconds: float,
            extra: list[str], checkout: Path | None = None, reliable: bool = False,
            fps: float = 5.0) -> dict:
    """One node run (from ``checkout``, or this code) on a camera at ``fps``: its stage means
    (ms), host ms and ceiling."""
    args = ["-p", f"model_path:={MODELS[kind]}", "-p", f"points_stride:={stride}", *extra]
    if kind == "da3":
        args += ["-p", "depth_scale_source:=fixed"]
    # A best-effort camera, as a driver's (REP 2003): on loopback about a third of the 2.7 MB
    # frames arrive, so the node's means cover some 40 frames of a 30 s window. ``reliable``
    # delivers every frame (110+ frames: the start-up frames leave the 100-frame means).
    result = run_stream(args, script=node_script(checkout), fps=fps, seconds=seconds,
                        subscribe_all=everything, encoding="bgr8", log=lambda *_: None,
                        reliable=reliable)
    d = result.diagnostics
    stages = {k[:-len(" mean (ms)")]: float(v) for k, v in d.items()
              if k.endswith(" mean (ms)") and v != "-"}
    host = sum(stages.get(s, 0.0) for s in HOST_STAGES)
    return {"model": kind, "points_stride": stride,
            "outputs": "all" if everything else "depth only",
            "host_ms": round(host, 2), "host_ceiling_hz": round(1000.0 / host, 1) if host else None,
            "goal_ms": GOALS_MS[(kind, stride)] if everything else None,
            "frames": int(d.get("frames processed", 0)),
            "input_hz": float(d.get("input rate (Hz)", 0)),
            "stages_ms": {k: round(v, 2) for k, v in stages.items()}}


def paired(kind: str, stride: int, everything: bool, args: argparse.Namespace) -> dict:
    """``args.rounds`` rounds of (before, after): the medians of each side's host ms, the
    after row's stages from its median round, and the median of the per-round ratios."""
    before, after = [], []
    for _ in range(args.rounds):
        before.append(measure(kind, stride, everything, args.seconds, args.ros_args,
                              args.before, args.reliable, args.fps))
        after.append(measure(kind, stride, everything, args.seconds, args.ros_args,
                             reliable=args.reliable, fps=args.fps))
    ratios = [a["host_ms"] / b["host_ms"] for a, b in zip(after, before) if b["host_ms"]]
    row = sorted(after, key=lambda r: r["host_ms"])[len(after) // 2]
    return {**row, "host_ms": round(statistics.median(r["host_ms"] for r in after), 2),
            "before_host_ms": round(statistics.median(r["host_ms"] for r in before), 2),
            "before_stages_ms": sorted(before, key=lambda r: r["host_ms"])[len(before) // 2][
                "stages_ms"],
            "ratio": round(statistics.median(ratios), 3) if ratios else None,
            "rounds": args.rounds}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0, help="measured window per run")
    parser.add_argument("--reliable", action="store_true",
                        help="play the frames reliable, so that every frame reaches the node")
    parser.add_argument("--fps", type=float, default=5.0,
                        help="the camera's frame rate (5: the default set-up; a higher rate "
                             "keeps the cores from idling between frames, as on a GPU host)")
    parser.add_argument("--models", nargs="+", choices=sorted(MODELS), default=sorted(MODELS))
    parser.add_argument("--before", type=Path, default=None,
                        help="a checkout of older code, measured in paired rounds beside this")
    parser.add_argument("--rounds", type=int, default=1, help="paired rounds with --before")
    parser.add_argument("--ros-args", nargs=argparse.REMAINDER, default=[],
                        help="extra node arguments, e.g. -p host_threads:=1")
    parser.add_argument("--domain-id", type=int, default=10 + os.getpid() % 100,
                        help="ROS_DOMAIN_ID of the node and this client")
    args = parser.parse_args(argv)
    # Before rclpy.init (run_stream) and the node's start: both read it from the environment.
    os.environ["ROS_DOMAIN_ID"] = str(args.domain_id)
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    rows = []
    for kind in args.models:
        for stride, everything in ((2, True), (1, True), (2, False)):
            if args.before is None:
                row = measure(kind, stride, everything, args.seconds, args.ros_args,
                              reliable=args.reliable, fps=args.fps)
            else:
                row = paired(kind, stride, everything, args)
            rows.append(row)
            print(json.dumps(row), flush=True)
    print("\n| model | outputs | points_stride | host ms | goal | host ceiling | largest stages |"
          + (" before ms | after / before |" if args.before else ""))
    print("|---|---|---|---|---|---|---|" + ("---|---|" if args.before else ""))
    for r in rows:
        top = sorted(((v, k) for k, v in r["stages_ms"].items() if k in HOST_STAGES), reverse=True)
        print(f"| {r['model']} | {r['outputs']} | {r['points_stride']} | {r['host_ms']} | "
              f"{'<= %g' % r['goal_ms'] if r['goal_ms'] else '-'} | {r['host_ceiling_hz']} Hz | "
              + ", ".join(f"{k} {v}" for v, k in top[:3]) + " |"
              + (f" {r['before_host_ms']} | {r['ratio']} |" if args.before else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
