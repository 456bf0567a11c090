# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The GPU worker process behind :class:`~.gpu_runner.GpuProcessRunner` (one model each).

Protocol: one JSON request per line on stdin, one JSON reply per line on the original stdout
(fd 1 itself is pointed at stderr, because LiteRT prints some of its log on stdout).

1. ``{"model": path, "precision": "fp16"|"fp32"}`` -> ``{"ok", "error", "log", "inputs",
   "outputs", "fully_accelerated"}``; ``log`` is LiteRT's native log while compiling. With
   ``"npu": {options}`` backend npu instead (:mod:`.npu_runner`), and ``"npu": {NPU_FACTS}``.
   With ``"cpu": {"num_threads", "xnnpack_flags"}``: XNNPACK through CompiledModel on the CPU
   (fp16 arithmetic, :mod:`.cpu_precision`), whose run holds the GIL as well.
2. ``{"shared_fd": fd, "offsets": [...]}`` -> ``{"ok"}``: the input, then the outputs, as
   float32 at those byte offsets of the shared memory, an anonymous memfd inherited as ``fd``.
3. ``{"run": true}`` -> ``{"ok", "ms"}``: inference on the shared input, outputs written there.

Started as ``python -m dense_perception.core.backends.gpu_worker --parent PID``: it asks the
kernel to SIGKILL it when that parent dies (``PR_SET_PDEATHSIG``), so a killed or crashed node
never leaves a worker behind, not even one hung in the GPU driver.
"""

from __future__ import annotations

import ctypes
import json
import mmap
import os
import signal
import sys
import time
from typing import Any

import numpy as np

from .native_log import capture_native_stderr


NPU_FACTS = ("vendor", "device", "plugin", "compile_note", "from_cache", "description", "notes")


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:300] or type(exc).__name__


def serve(requests, reply) -> int:
    """Answer requests until stdin closes."""
    from .runner_base import CompiledModelRunner

    def send(message: dict[str, Any]) -> None:
        reply.write(json.dumps(message) + "\n")
        reply.flush()

    first = json.loads(requests.readline() or "{}")
    runner = None
    error = ""
    with capture_native_stderr() as log:
        try:
            if "npu" in first:  # backend npu (a RuntimeError says why it cannot start)
                from .npu_runner import open_npu_runner
                notes: list[str] = []  # its log lines, for the parent's log
                runner = open_npu_runner(first["model"], log=notes.append, warn=notes.append,
                                         **first["npu"])
                runner.notes = notes
            elif "cpu" in first:
                runner = CompiledModelRunner(
                    first["model"], "cpu", num_threads=int(first["cpu"]["num_threads"]),
                    cpu_options={"xnnpack_flags": int(first["cpu"]["xnnpack_flags"])})
            else:
                runner = CompiledModelRunner(first["model"], "gpu",
                                             gpu_precision=first.get("precision", "fp16"))
        except (RuntimeError, ValueError) as exc:
            # backend npu's startup errors are one line already, with the fix at their end.
            error = " ".join(str(exc).split()) if "npu" in first else _one_line(exc)
    if runner is None:
        send({"ok": False, "error": error, "log": log.text})
        return 1
    send({"ok": True, "error": "", "log": log.text, "inputs": runner.input_shapes,
          "outputs": runner.output_shapes, "fully_accelerated": runner.fully_accelerated,
          **({"npu": {k: getattr(runner, k) for k in NPU_FACTS}} if "npu" in first else {})})
    shapes = [runner.input_shapes[0], *runner.output_shapes]
    views: list[np.ndarray] = []
    for line in requests:
        request = json.loads(line)
        if "shared_fd" in request:
            try:
                shared = mmap.mmap(request["shared_fd"], 0)
                views = [np.frombuffer(shared, np.float32, int(np.prod(shape)), offset)
                         .reshape(shape) for shape, offset in zip(shapes, request["offsets"])]
                send({"ok": True})
            except (OSError, ValueError) as exc:
                send({"ok": False, "error": _one_line(exc)})
        elif request.get("run"):
            start = time.perf_counter()
            try:
                runner.run_into(views[0], views[1:])
                send({"ok": True, "ms": (time.perf_counter() - start) * 1000.0})
            except (RuntimeError, ValueError, IndexError) as exc:
                error = _one_line(exc)
                if "Failed to lock" in error:
                    # LiteRT's WebGPU accelerator waits at most 120 s for the GPU, then leaves
                    # the output buffer unusable (seen: lavapipe, DA3-Small, ~125 CPU-s).
                    error = (f"the GPU did not finish within LiteRT's wait (run took "
                             f"{time.perf_counter() - start:.0f} s; LiteRT gives up after "
                             f"120 s): this adapter is too slow for this model ({error})")
                send({"ok": False, "error": error})
    return 0


def die_with_parent(parent: int) -> None:
    """SIGKILL this process when ``parent`` dies (Linux; elsewhere stdin EOF still ends it)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # it died before the request took effect
        os._exit(1)


def main() -> int:
    """Entry point: ``python -m dense_perception.core.backends.gpu_worker [--parent PID]``
    (started by the runner)."""
    if len(sys.argv) == 3 and sys.argv[1] == "--parent":
        die_with_parent(int(sys.argv[2]))
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when we stop (stdin EOF)
    reply = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return serve(sys.stdin, reply)


if __name__ == "__main__":
    sys.exit(main())
