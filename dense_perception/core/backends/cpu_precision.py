# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""``cpu_precision``: fp32 or fp16 arithmetic for XNNPACK on the CPU.

XNNPACK computes in fp16 when asked to (``TFLITE_XNNPACK_DELEGATE_FLAG_FORCE_FP16``, passed
through LiteRT 2.x ``CpuOptions.xnnpack_flags`` of a ``CompiledModel``). That pays only on CPUs
with native fp16 arithmetic: ARMv8.2-A and later (Raspberry Pi 5's Cortex-A76, Jetson Orin,
phones), which the kernel reports as the ``fphp``/``asimdhp`` hardware capabilities. Elsewhere
(x86_64 here) the runner stays on fp32 and says why in one line.

The fp16 model runs in a worker process (:class:`~.gpu_runner.GpuProcessRunner`, as the GPU
and NPU do): ``CompiledModel.run_by_index`` holds the GIL for the whole inference (measured: a
Python thread spinning beside it got 0.2 % of its idle count), which would stop the node's
executor and host threads for every frame on exactly the machines that take this path.

* ``fp32``: the Interpreter with XNNPACK, as before.
* ``fp16``: fp16 inference where the CPU has it, else fp32 with the reason.
* ``auto``: fp16 where the CPU has it and the model passes a fidelity check at load (fp16 vs
  fp32 outputs on a smooth test input, correlation >= ``MIN_FP16_CORR`` for every output),
  else fp32 with the reason.
"""

from __future__ import annotations

import platform
import struct
from pathlib import Path
from typing import Callable

import numpy as np

from ..setting_values import CPU_PRECISIONS

MIN_FP16_CORR = 0.999

# XNNPACK delegate flags (tflite/delegates/xnnpack/xnnpack_delegate.h). Setting xnnpack_flags
# replaces the delegate's defaults, so the default quantised-inference flags are kept.
XNNPACK_FLAG_QS8 = 0x1
XNNPACK_FLAG_QU8 = 0x2
XNNPACK_FLAG_FORCE_FP16 = 0x4
# Convolutions build their indirection buffers per run instead of keeping one per op: TIPSv2
# class at 448 px, 97 MB less RSS (1355 -> 1258 MB after a run, x86_64 with fp16 forced).
XNNPACK_FLAG_TRANSIENT_INDIRECTION_BUFFER = 0x20
FP16_XNNPACK_FLAGS = (XNNPACK_FLAG_QS8 | XNNPACK_FLAG_QU8 | XNNPACK_FLAG_FORCE_FP16
                      | XNNPACK_FLAG_TRANSIENT_INDIRECTION_BUFFER)
# The fp16 worker's limits: XNNPACK does not hang like a GPU driver, and emulated aarch64
# (make test-arm64) takes minutes a run, so only a worker that is truly gone is replaced.
FP16_WORKER_TIMEOUT_S = 3600.0
FP16_WORKER_MAX_RESTARTS = 1

# Linux aarch64 AT_HWCAP bits (arch/arm64/include/uapi/asm/hwcap.h).
_AT_HWCAP = 16
_HWCAP_FPHP = 1 << 9
_HWCAP_ASIMDHP = 1 << 10


def _auxv_hwcap(path: str = "/proc/self/auxv") -> int | None:
    """AT_HWCAP of this process from the ELF auxiliary vector (also right under qemu-user)."""
    try:
        data = Path(path).read_bytes()
    except OSError:
        return None
    for key, value in struct.iter_unpack("<QQ", data[: len(data) // 16 * 16]):
        if key == _AT_HWCAP:
            return value
    return None


def native_fp16() -> tuple[bool, str]:
    """(whether this CPU has native fp16 arithmetic, a short reason)."""
    machine = platform.machine().lower()
    if machine not in ("aarch64", "arm64"):
        return False, f"no native fp16 arithmetic on {machine or 'this CPU'}"
    hwcap = _auxv_hwcap()
    if hwcap is None:  # no auxv: fall back to the kernel's feature list
        try:
            flags = Path("/proc/cpuinfo").read_text().split()
        except OSError:
            flags = []
        has = "asimdhp" in flags and "fphp" in flags
    else:
        has = bool(hwcap & _HWCAP_ASIMDHP) and bool(hwcap & _HWCAP_FPHP)
    if has:
        return True, "ARMv8.2 fp16 arithmetic (asimdhp, fphp)"
    return False, "this aarch64 CPU lacks ARMv8.2 fp16 arithmetic (no asimdhp/fphp)"


def smooth_test_input(shape: tuple[int, ...]) -> np.ndarray:
    """A smooth, deterministic float32 input (gradients and low-frequency waves in about
    -1..2): image-like for both ImageNet-normalised and [0, 1] models."""
    *lead, h, w = shape
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    channels = int(np.prod(lead)) if lead else 1
    planes = [0.5 + 0.8 * np.sin(2 * np.pi * (xx / w * (1 + c % 3) + yy / h * (0.5 + c % 2)))
              + 0.3 * (yy / h) for c in range(channels)]
    return np.stack(planes).reshape(shape).astype(np.float32)


def output_correlations(reference: list[np.ndarray], other: list[np.ndarray]) -> list[float]:
    """Pearson correlation of each output pair (NaN for a constant output)."""
    out = []
    for a, b in zip(reference, other):
        a64, b64 = np.ravel(a).astype(np.float64), np.ravel(b).astype(np.float64)
        ok = a64.std() > 0 and b64.std() > 0 and np.isfinite(b64).all()
        out.append(float(np.corrcoef(a64, b64)[0, 1]) if ok else float("nan"))
    return out


def check_fp16_fidelity(fp32_runner, fp16_runner) -> list[float]:
    """Run both runners on :func:`smooth_test_input`; the per-output correlations."""
    x = smooth_test_input(fp32_runner.input_shapes[0])
    results = []
    for runner in (fp32_runner, fp16_runner):
        runner.input_buffer()[...] = x
        results.append([np.array(o, copy=True) for o in runner.run()])
    return output_correlations(results[0], results[1])


def open_cpu_runner(model_path: str, threads: int, precision: str,
                    log: Callable[[str], None]):
    """The CPU runner for ``precision`` ('auto' | 'fp32' | 'fp16'); its ``description`` ends
    with the precision and, when fp16 was not used, why (one line)."""
    from .gpu_runner import GpuProcessRunner, GpuUnavailableError
    from .runner_base import InterpreterRunner

    if precision not in CPU_PRECISIONS:
        raise ValueError(f"cpu_precision '{precision}' is unknown; allowed: "
                         f"{', '.join(CPU_PRECISIONS)}")
    if precision == "fp32":
        return InterpreterRunner(model_path, threads)
    has_fp16, why = native_fp16()
    if not has_fp16:
        runner = InterpreterRunner(model_path, threads)
        runner.description += f", fp32: {why}"
        if precision == "fp16":
            log(f"cpu_precision fp16 unavailable ({why}); running fp32")
        return runner
    try:
        fp16 = GpuProcessRunner(model_path, cpu={"num_threads": threads,
                                                 "xnnpack_flags": FP16_XNNPACK_FLAGS},
                                startup_timeout_s=FP16_WORKER_TIMEOUT_S,
                                timeout_s=FP16_WORKER_TIMEOUT_S,
                                max_restarts=FP16_WORKER_MAX_RESTARTS)
    except GpuUnavailableError as exc:
        runner = InterpreterRunner(model_path, threads)
        reason = " ".join(str(exc).split())[:160]  # LiteRT's message spans lines
        runner.description += f", fp32: XNNPACK fp16 did not initialise ({reason})"
        return runner
    fp16.description = fp16.description[:-1] + ", fp16 arithmetic)"
    if precision == "fp16":
        return fp16
    fp32 = InterpreterRunner(model_path, threads)
    corr = check_fp16_fidelity(fp32, fp16)
    figures = ", ".join(f"{c:.5f}" for c in corr)
    if all(c >= MIN_FP16_CORR for c in corr):  # NaN fails
        fp16.description = fp16.description[:-1] + f"; fp16 vs fp32 corr {figures})"
        return fp16
    fp16.close()
    fp32.description += f", fp32: fp16 fidelity check failed (corr {figures} < {MIN_FP16_CORR})"
    return fp32
