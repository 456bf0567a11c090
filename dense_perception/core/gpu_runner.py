"""The GPU backend: LiteRT's WebGPU accelerator (Dawn over Vulkan) in a worker process.

Why a process: ``CompiledModel.run_by_index`` only queues the GPU work, and the following
``TensorBuffer.read`` waits for the GPU *while holding Python's GIL* (measured: a Python thread
gets no time slice during the read). In the node that would freeze the executor (parameter
services, diagnostics) and the post-processing thread for the whole inference. Here the model
lives in a child process; the input and outputs sit in one shared-memory file both map, and the
parent waits on a pipe, which releases the GIL.

The child also reports the adapter LiteRT selected (parsed from LiteRT's native log, see
:mod:`.native_log`) and whether the graph is fully accelerated, so ``backend: auto`` can refuse
a CPU emulation (Mesa's llvmpipe/lavapipe) and the node can name the adapter in /diagnostics.
"""

from __future__ import annotations

import contextlib
import json
import mmap
import os
import select
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable

import numpy as np

from .native_log import Adapter, NativeLog

Log = Callable[[str], None]
_ALIGN = 64  # bytes; each array in the shared file starts on a cache line
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])  # the folder holding dense_perception


class GpuUnavailableError(RuntimeError):
    """LiteRT could not compile the model on a GPU; the message says why (from its log)."""


class GpuProcessRunner:
    """A :class:`~.runner.Runner` whose CompiledModel runs on the GPU in a worker process.

    ``adapter`` names the selected GPU adapter (None if LiteRT did not log it),
    ``fully_accelerated`` says whether every op runs on it, ``native_log`` is the worker's
    LiteRT log from loading, and ``last_invoke_ms`` the worker's own run + read time.
    """

    backend = "gpu"

    def __init__(self, model_path: str, precision: str = "fp16",
                 startup_timeout_s: float = 300.0) -> None:
        self.fallback_note = ""
        self.last_invoke_ms = float("nan")
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (_PACKAGE_ROOT, env.get("PYTHONPATH"))
                                            if p)
        # Own session: a Ctrl-C in the terminal reaches the parent only, which then closes the
        # worker's stdin (the worker exits on EOF, also when the parent dies).
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "dense_perception.core.gpu_worker"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, start_new_session=True)
        self._shm: mmap.mmap | None = None
        self._shm_file = None
        try:
            hello = self._call({"model": model_path, "precision": precision},
                               timeout_s=startup_timeout_s)
        except GpuUnavailableError:
            self.close()
            raise
        self.native_log = NativeLog(hello.get("log", ""))
        if self.native_log.text:  # LiteRT's own log, where it went before: our stderr
            with contextlib.suppress(OSError):
                os.write(2, self.native_log.text.encode("utf-8", "replace"))
        if not hello["ok"]:
            self.close()
            reason = self.native_log.gpu_reason() or hello["error"]
            raise GpuUnavailableError(reason)
        self.adapter: Adapter | None = self.native_log.adapter()
        self.fully_accelerated: bool = hello["fully_accelerated"]
        self.precision = precision
        self.input_shapes = [tuple(s) for s in hello["inputs"]]
        self.output_shapes = [tuple(s) for s in hello["outputs"]]
        try:
            self._map_shared_memory()
        except GpuUnavailableError:
            self.close()
            raise
        where = self.adapter.describe() if self.adapter else "adapter not reported"
        self.description = (f"gpu (LiteRT CompiledModel, WebGPU, {precision}; {where}; "
                            "worker process)")

    # ---- Runner ----------------------------------------------------------------------------
    def input_buffer(self) -> np.ndarray:
        return self._views[0]

    def run(self) -> list[np.ndarray]:
        """Run once in the worker; outputs are views on shared memory, valid until next run."""
        reply = self._call({"run": True})
        if not reply["ok"]:
            raise RuntimeError(f"GPU inference failed: {reply['error']}")
        self.last_invoke_ms = reply["ms"]
        return self._views[1:]

    # ---- life cycle ------------------------------------------------------------------------
    def close(self) -> None:
        """Stop the worker and free the shared memory (idempotent)."""
        proc = self._proc
        if proc.poll() is None:
            try:
                proc.stdin.close()
                proc.wait(timeout=2.0)
            except (OSError, subprocess.TimeoutExpired):
                proc.kill()
                proc.wait(timeout=2.0)
        if self._shm is not None:
            self._views = []
            try:
                self._shm.close()
            except BufferError:  # a caller still holds an output view; the OS frees it at exit
                pass
            self._shm = None
        if self._shm_file is not None:
            self._shm_file.close()
            self._shm_file = None

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass

    # ---- internals -------------------------------------------------------------------------
    def _map_shared_memory(self) -> None:
        shapes = [self.input_shapes[0], *self.output_shapes]
        offsets, size = [], 0
        for shape in shapes:
            offsets.append(size)
            size += -(-int(np.prod(shape)) * 4 // _ALIGN) * _ALIGN
        self._shm_file = _reserved_file(size)
        self._shm = mmap.mmap(self._shm_file.fileno(), size)
        self._views = [np.frombuffer(self._shm, np.float32, int(np.prod(shape)), offset)
                       .reshape(shape) for shape, offset in zip(shapes, offsets)]
        reply = self._call({"shared": self._shm_file.name, "offsets": offsets})
        if not reply["ok"]:
            raise GpuUnavailableError(f"GPU worker could not map shared memory: {reply['error']}")

    def _call(self, message: dict[str, Any], timeout_s: float | None = None) -> dict[str, Any]:
        """Send one request line and wait (GIL released) for the one-line reply."""
        proc = self._proc
        try:
            proc.stdin.write((json.dumps(message) + "\n").encode())
            proc.stdin.flush()
        except (BrokenPipeError, ValueError, OSError):
            raise GpuUnavailableError(self._died()) from None
        if timeout_s is not None:
            ready, _, _ = select.select([proc.stdout], [], [], timeout_s)
            if not ready:
                proc.kill()
                raise GpuUnavailableError(f"GPU worker did not answer within {timeout_s:.0f} s")
        line = proc.stdout.readline()
        if not line:
            raise GpuUnavailableError(self._died())
        return json.loads(line)

    def _died(self) -> str:
        try:
            code = self._proc.wait(timeout=2.0)
        except subprocess.TimeoutExpired:
            return "GPU worker process stopped answering"
        return f"GPU worker process exited (status {code}); LiteRT's log above says why"


def _reserved_file(size: int):
    """A temporary file of ``size`` bytes with its space reserved: in /dev/shm (RAM) when it
    has room (containers often give it only 64 MB), else in the temp folder. Reserving first
    turns a full tmpfs into an error here instead of a SIGBUS on first touch."""
    for folder in ("/dev/shm", None):
        if folder and not os.path.isdir(folder):
            continue
        handle = tempfile.NamedTemporaryFile(prefix="dense_perception_gpu_", dir=folder)
        try:
            os.posix_fallocate(handle.fileno(), 0, size)
            return handle
        except OSError:
            handle.close()
    raise GpuUnavailableError(f"no room for the GPU worker's {size / 1e6:.0f} MB of input and "
                              "outputs in /dev/shm or the temp folder")


def open_gpu_runner(model_path: str, backend: str, precision: str, log: Log,
                    warn: Log) -> tuple[GpuProcessRunner | None, str]:
    """The GPU runner for ``backend`` 'gpu' or 'auto', or (None, why not) for 'auto'.

    'auto' refuses a CPU emulation of a GPU (llvmpipe/lavapipe, SwiftShader): XNNPACK is
    faster on the same cores. 'gpu' takes it, with a warning. A GPU that does not initialise
    raises ModelLoadError for 'gpu'. The adapter and whether the graph is fully accelerated are
    logged either way.
    """
    from .runner import ModelLoadError, litert_version

    global _software_adapter
    if backend == "auto" and _software_adapter is not None:  # this machine's, seen already
        note = _software_note(_software_adapter)
        log(note)
        return None, note
    try:
        if litert_version().startswith("1."):
            raise GpuUnavailableError(f"ai-edge-litert {litert_version()} has no GPU "
                                      "accelerator options in Python (needs 2.x)")
        runner = GpuProcessRunner(model_path, precision)
    except GpuUnavailableError as exc:
        reason = " ".join(str(exc).split())
        if backend == "gpu":
            raise ModelLoadError(
                f"the GPU backend did not initialise ({reason}). Install a Vulkan driver "
                "for the GPU (README: GPU), or set backend to 'auto' or 'cpu'.") from None
        note = f"GPU unavailable ({reason}); fell back to CPU (XNNPACK)"
        log(note)
        return None, note
    adapter = runner.adapter
    accelerated = "fully accelerated" if runner.fully_accelerated else \
        "NOT fully accelerated (some ops fall back to the CPU)"
    where = adapter.describe() if adapter else "an adapter LiteRT did not name"
    if adapter is not None and adapter.is_software:
        if backend == "auto":
            runner.close()
            _software_adapter = adapter
            note = _software_note(adapter)
            log(note)
            return None, note
        warn(f"backend gpu runs on {where}: a CPU emulation of a GPU, slower than backend cpu "
             "(no GPU Vulkan driver found; see README: GPU)")
    log(f"GPU adapter: {where}; graph {accelerated}; gpu_precision {precision}")
    if not runner.fully_accelerated:
        warn(f"the model's graph is {accelerated}: expect CPU/GPU copies between its parts")
    return runner, ""


_software_adapter: Adapter | None = None  # set once 'auto' found only a CPU emulation


def _software_note(adapter: Adapter) -> str:
    return (f"GPU unavailable (the only GPU adapter, {adapter.describe()}, is a CPU emulation "
            "and slower than XNNPACK); fell back to CPU (XNNPACK). Set backend: gpu to use it "
            "anyway")


def gpu_details(runner: object) -> dict[str, str]:
    """Diagnostic key/values for a GPU runner (adapter, type, acceleration); {} for others."""
    if getattr(runner, "backend", "") != "gpu":  # (duck-typed: tests wrap runners)
        return {}
    adapter = getattr(runner, "adapter", None)
    return {
        "gpu adapter": adapter.name if adapter else "not reported by LiteRT",
        "gpu adapter backend": adapter.backend if adapter else "-",
        "gpu adapter type": (adapter.type + (" (CPU emulation)" if adapter.is_software else ""))
        if adapter else "-",
        "gpu fully accelerated": "yes" if getattr(runner, "fully_accelerated", False) else "no",
        "gpu precision": getattr(runner, "precision", "-"),
    }
