# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Timing helpers of the benchmarks: the median of repeated calls, and several calls in
interleaved rounds so that the machine's drift hits all alike."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parents[2]


def median_ms(fn: Callable[[], object], runs: int, warmup: int = 1) -> float:
    """Median wall time of ``fn`` in milliseconds."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000.0)
    return statistics.median(times)


def interleaved_ms(fns: dict[str, Callable[[], object]], runs: int,
                   after_warmup: Callable[[], object] = lambda: None) -> dict[str, float]:
    """Median ms of several functions run in turn (A B A B ...), so drift hits all alike."""
    for fn in fns.values():
        fn()
    after_warmup()
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(runs):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            times[name].append((time.perf_counter() - start) * 1000.0)
    return {name: statistics.median(t) for name, t in times.items()}


def fresh_process_load(probe: str, args: list[str], load_key: str,
                       first_key: str) -> dict[str, float | None]:
    """Run ``probe`` (Python source that prints "load_s first_invoke_s" last) in a fresh
    process with this checkout on its path: its two figures (s) under the two keys, or the load
    key alone as None when the probe failed."""
    proc = subprocess.run([sys.executable, "-c", probe, *args], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    if proc.returncode != 0:
        return {load_key: None}
    load_s, first_s = (float(v) for v in proc.stdout.split()[-2:])
    return {load_key: round(load_s, 2), first_key: round(first_s, 2)}
