# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Soak / back-pressure run (``make soak``): 30 fps 1280x720 into a node whose model is slowed
to about 1 s per inference, for 60 s. Prints and writes soak_out/soak.json.

Not a unit test: it reports figures and checks them against the design's promises (one output
per inference, dropped frames counted, outputs never older than two inferences, flat memory).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from tools.bench.loadgen import run_stream  # noqa: E402

def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--inference-s", type=float, default=1.0)
    parser.add_argument("--out", default=str(REPO / "soak_out"))
    args = parser.parse_args()
    model = REPO / "models" / "test_tipsv2_b14_dpt.tflite"
    result = run_stream(["-p", f"model_path:={model}", "-p", "backend:=cpu"],
                        script=[str(REPO / "tools" / "common" / "slow_node.py"),
                                str(args.inference_s)],
                        fps=30.0, seconds=args.seconds)
    ages = np.array(result.ages_s)
    warm_rss, end_rss = result.rss_at(5.0), result.rss_mb[-1][1]
    figures = {
        "seconds": args.seconds, "inference_s": args.inference_s,
        "frames_in": result.frames_in, "frames_out": result.frames_out,
        "node_frames_received_total": int(result.diagnostics.get("frames received", -1)),
        "node_frames_processed_total": int(result.diagnostics.get("frames processed", -1)),
        "frames_dropped_total": int(result.diagnostics.get("frames dropped", -1)),
        "output_hz": round(result.output_hz(), 3),
        "output_age_s": {"p50": round(float(np.percentile(ages, 50)), 3),
                         "p95": round(float(np.percentile(ages, 95)), 3),
                         "max": round(float(ages.max()), 3)},
        "rss_mb_after_warmup": round(warm_rss, 1), "rss_mb_end": round(end_rss, 1),
        "node_exit_code": result.exit_code,
    }
    checks = {
        "about one output per inference": 0.8 / args.inference_s <= figures["output_hz"]
        <= 1.2 / args.inference_s,
        # Every frame the node received is either processed or counted as dropped (two may be
        # in flight when the diagnostics were taken).
        "dropped frames counted": figures["frames_dropped_total"]
        + figures["node_frames_processed_total"] >= figures["node_frames_received_total"] - 2,
        "outputs younger than 2 inferences": figures["output_age_s"]["max"]
        < 2 * args.inference_s,
        "memory within 10% of warm-up": end_rss <= 1.10 * warm_rss,
        "clean exit": result.exit_code == 0,
    }
    figures["checks"] = checks
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "soak.json").write_text(json.dumps(figures, indent=2))
    print(f"in the {args.seconds:.0f} s window: frames in {figures['frames_in']}, frames out "
          f"{figures['frames_out']}, output {figures['output_hz']} Hz")
    print(f"node totals since start: received {figures['node_frames_received_total']}, "
          f"processed {figures['node_frames_processed_total']}, dropped "
          f"{figures['frames_dropped_total']} (the rest of the frames played were lost by "
          f"best-effort DDS before reaching the node)")
    print("output age p50 / p95 / max: {p50} / {p95} / {max} s".format(**figures["output_age_s"]))
    print(f"RSS after warm-up {warm_rss:.1f} MB, at the end {end_rss:.1f} MB")
    for name, ok in checks.items():
        print(f"  [{'ok' if ok else 'FAIL'}] {name}")
    print(f"written {out / 'soak.json'}")
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
