"""The host path through the node over DDS: per 1280x720 frame, the node's own stage means from
/diagnostics (everything but inference), with every output subscribed and with depth only.

The issue's set-up: the bundled test models (inference about 1 and 14 ms), 1280x720 bgr8 at
5 Hz with CameraInfo, default parameters (DA3: ``depth_scale_source: fixed``, so that it has
points), ``points_stride`` 2 and 1. Host ms = preprocess + extract + postprocess + publish (the
sub-stages scale and labels_confidence are parts of them); the host ceiling is 1000 / host ms,
the fastest model rate the host path allows. Run: ``make bench-host``.
"""

from __future__ import annotations

import argparse
import json
import sys

from tools.loadgen import run_stream

HOST_STAGES = ("preprocess", "extract", "postprocess", "publish")
MODELS = {"da3": "models/test_da3_small.tflite", "tipsv2": "models/test_tipsv2_b14_dpt.tflite"}
GOALS_MS = {("da3", 2): 8.0, ("da3", 1): 20.0, ("tipsv2", 2): 15.0, ("tipsv2", 1): 25.0}


def measure(kind: str, stride: int, everything: bool, seconds: float,
            extra: list[str]) -> dict:
    """One node run: its stage means (ms), host ms and ceiling."""
    args = ["-p", f"model_path:={MODELS[kind]}", "-p", f"points_stride:={stride}", *extra]
    if kind == "da3":
        args += ["-p", "depth_scale_source:=fixed"]
    # A best-effort camera, as a driver's (REP 2003): on loopback about a third of the 2.7 MB
    # frames arrive, so the node's means cover some 40 frames of a 30 s window.
    result = run_stream(args, fps=5.0, seconds=seconds, subscribe_all=everything,
                        encoding="bgr8", log=lambda *_: None)
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0, help="measured window per run")
    parser.add_argument("--models", nargs="+", choices=sorted(MODELS), default=sorted(MODELS))
    parser.add_argument("--ros-args", nargs=argparse.REMAINDER, default=[],
                        help="extra node arguments, e.g. -p host_threads:=1")
    args = parser.parse_args(argv)
    rows = []
    for kind in args.models:
        for stride, everything in ((2, True), (1, True), (2, False)):
            row = measure(kind, stride, everything, args.seconds, args.ros_args)
            rows.append(row)
            print(json.dumps(row), flush=True)
    print("\n| model | outputs | points_stride | host ms | goal | host ceiling | largest stages |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        top = sorted(((v, k) for k, v in r["stages_ms"].items() if k in HOST_STAGES), reverse=True)
        print(f"| {r['model']} | {r['outputs']} | {r['points_stride']} | {r['host_ms']} | "
              f"{'<= %g' % r['goal_ms'] if r['goal_ms'] else '-'} | {r['host_ceiling_hz']} Hz | "
              + ", ".join(f"{k} {v}" for v, k in top[:3]) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
