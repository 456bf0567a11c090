# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""LiteRT CPU options side by side on one model: the Interpreter (what the runner uses for
fp32), CompiledModel with default XNNPACK, with YNNPACK (``enable_ynnpack``), with the builtin
kernels (``kernel_mode``), and - on CPUs with native fp16 - XNNPACK's fp16 arithmetic.

Bare invokes in interleaved rounds (A B C ... A B C ...) so the machine's drift hits all alike;
outputs are compared with the Interpreter's (correlation of the first output).

    .venv/bin/python -m tools.bench.cpu_options MODEL.tflite [--threads N] [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from typing import Callable

import numpy as np


def candidates(path: str, threads: int) -> dict[str, Callable[[], object]]:
    """Runners by label (those that fail to initialise are reported and left out)."""
    from ai_edge_litert.cpu_kernel_mode import CpuKernelMode

    from dense_perception.core.backends.cpu_precision import FP16_XNNPACK_FLAGS, native_fp16
    from dense_perception.core.backends.runner_base import CompiledModelRunner, InterpreterRunner

    makers: dict[str, Callable[[], object]] = {
        "Interpreter (XNNPACK)": lambda: InterpreterRunner(path, threads),
        "CompiledModel XNNPACK": lambda: CompiledModelRunner(path, "cpu", threads),
        "CompiledModel YNNPACK": lambda: _compiled(path, threads, enable_ynnpack=True),
        "CompiledModel builtin kernels": lambda: _compiled(
            path, threads, kernel_mode=CpuKernelMode.BUILTIN),
    }
    if native_fp16()[0]:
        makers["CompiledModel XNNPACK fp16"] = lambda: _compiled(
            path, threads, xnnpack_flags=FP16_XNNPACK_FLAGS)
    runners = {}
    for label, make in makers.items():
        try:
            runners[label] = make()
        except (RuntimeError, ValueError, TypeError) as exc:
            print(f"{label}: unavailable ({exc})")
    return runners


def _compiled(path: str, threads: int, **cpu_options):
    """A CompiledModel CPU runner with extra CpuOptions fields."""
    from dense_perception.core.backends.runner_base import CompiledModelRunner

    return CompiledModelRunner(path, "cpu", threads, cpu_options=cpu_options)


def main(argv: list[str] | None = None) -> int:
    """Print median invoke ms and output agreement per option set."""
    from dense_perception.core.backends.runner import default_num_threads

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model")
    parser.add_argument("--threads", type=int, default=default_num_threads())
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    runners = candidates(args.model, args.threads)
    x = np.random.default_rng(0).normal(0, 1, runners["Interpreter (XNNPACK)"].input_shapes[0])
    outs = {}
    for label, r in runners.items():
        r.input_buffer()[...] = x
        outs[label] = np.array(r.run()[0], copy=True)
    times: dict[str, list[float]] = {label: [] for label in runners}
    for _ in range(args.rounds):
        for label, r in runners.items():
            t0 = time.perf_counter()
            r.run()
            times[label].append((time.perf_counter() - t0) * 1000.0)
    base = statistics.median(times["Interpreter (XNNPACK)"])
    ref = np.ravel(outs["Interpreter (XNNPACK)"]).astype(np.float64)
    print(f"{args.model}, {args.threads} threads, {args.rounds} interleaved rounds")
    for label, t in times.items():
        ms = statistics.median(t)
        corr = float(np.corrcoef(ref, np.ravel(outs[label]).astype(np.float64))[0, 1])
        print(f"  {label:32} {ms:9.1f} ms  x{base / ms:5.2f} vs Interpreter   corr {corr:.6f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
