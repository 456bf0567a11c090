# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""``make bench``'s node rows: the node as its own process over DDS under a 30 fps feed, against
a bare invoke under the same feed."""

from __future__ import annotations

import statistics

import numpy as np

from dense_perception.core.backends.runner_base import InterpreterRunner
from tools.bench.timing import median_ms


def bench_node(model_path: str, threads: int, seconds: float, runs: int, rounds: int) -> dict:
    """The node as its own process over DDS, fed 30 fps 1280x720, every output subscribed,
    in A/B rounds with a bare invoke in this process under the very same feed (the node idle:
    lazy, nobody watches its outputs). The feed itself costs CPU on a small machine; comparing
    under the same feed leaves only what the node adds."""
    from tools.bench.loadgen import run_stream
    runner = InterpreterRunner(model_path, threads)
    runner.run()
    cmd = ["-p", f"model_path:={model_path}", "-p", "backend:=cpu",
           "-p", f"num_threads:={threads}",
           "-p", "depth_scale_source:=fixed"]  # the node's --ros-args; DA3: asserted metres
    first = run_stream(cmd, fps=30.0, seconds=seconds, subscribe_all=True,
                       bare=lambda: median_ms(runner.run, runs, warmup=0), rounds=rounds)
    # A second start, for the load time with whatever LiteRT caches between runs.
    second = run_stream(cmd, fps=30.0, seconds=3.0, subscribe_all=True)
    node_hz = statistics.median(first.node_hz_rounds)
    bare_ms = statistics.median(first.bare_ms_rounds)
    ratios = [hz * ms / 1000.0 for hz, ms in zip(first.node_hz_rounds, first.bare_ms_rounds)]
    stage_means = {k.split(" mean")[0]: float(v) for k, v in first.diagnostics.items()
                   if k.endswith("mean (ms)") and v != "-"}
    return {
        "node_output_hz": round(node_hz, 4),
        "bare_invoke_ms_under_feed": round(bare_ms, 1),
        "bare_invoke_hz_under_feed": round(1000.0 / bare_ms, 4),
        "node_vs_bare": round(statistics.median(ratios), 3),
        "node_vs_bare_rounds": [round(r, 3) for r in ratios],
        "node_frames_in": first.frames_in,
        "node_frames_dropped": int(first.diagnostics.get("frames dropped", -1)),
        "node_stage_mean_ms": stage_means,
        "node_period_vs_own_inference": round(
            1000.0 / node_hz / stage_means["inference"], 3) if stage_means.get("inference")
        else None,
        "first_output_s": round(first.first_output_s, 2),
        "first_output_second_start_s": round(second.first_output_s, 2),
        "rss_mb": round(first.rss_at(seconds / 2), 1),
        "output_age_p50_s": round(float(np.median(first.ages_s)), 3),
    }
