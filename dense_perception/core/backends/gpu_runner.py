# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The GPU backend: LiteRT's WebGPU accelerator (Dawn over Vulkan) in a worker process.

The NPU backend and the CPU's fp16 path (:mod:`.cpu_precision`) share the worker (GIL too).

Why a process: ``CompiledModel.run_by_index`` only queues the GPU work, and the following
``TensorBuffer.read`` waits for the GPU *while holding Python's GIL* (measured: a Python thread
gets no time slice during the read). In the node that would freeze the executor (parameter
services, diagnostics) and the post-processing thread for the whole inference. Here the model
lives in a child process; the input and outputs sit in one shared memory both map, and the
parent waits on a pipe, which releases the GIL.

The worker can neither hang the caller, nor outlive it, nor leave files behind:

* Every inference has a timeout (``timeout_s``, the node's ``gpu_timeout``). A worker that does
  not answer in time, or dies, is killed and a fresh one started (model loaded and warmed up
  again); that frame fails with :class:`GpuWorkerError`. After ``max_restarts`` restarts with no
  good inference between them, :class:`GpuWorkerFailedError`: the GPU is unusable, and the node
  exits non-zero so that ``respawn`` can act.
* The shared memory is an anonymous memfd the worker inherits: it is in no folder (nothing in
  ``/dev/shm``), so a SIGKILL or OOM kill of either side leaves nothing behind.
* The worker asks the kernel for SIGKILL when its parent dies (``PR_SET_PDEATHSIG``), so even a
  hung worker goes with a killed node. That signal follows the *thread* that started the
  worker, so workers are always started from one thread of the runner's own.

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
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, NoReturn

import numpy as np

from .native_log import Adapter, NativeLog
from .runner_base import RunnerBase, RunnerLostError
from ..setting_values import GPU_MAX_RESTARTS, GPU_TIMEOUT_S

Log = Callable[[str], None]
_ALIGN = 64  # bytes; each array in the shared memory starts on a cache line
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[3])  # the folder holding dense_perception
STARTUP_TIMEOUT_S = 300.0  # loading, compiling and the first (shader-compiling) inference
MEMFD_NAME = "dense_perception_gpu"  # shows in /proc/<pid>/maps as /memfd:<name> (deleted)


class GpuUnavailableError(RuntimeError):
    """LiteRT could not compile the model on a GPU; the message says why (from its log)."""


class GpuWorkerError(RuntimeError):
    """An inference did not finish within the timeout, or the worker died: this frame failed
    and the worker was restarted (the next ``run`` uses the fresh one)."""


class GpuWorkerFailedError(GpuWorkerError, RunnerLostError):
    """The worker hung or died more than ``max_restarts`` times in a row, or could not be
    restarted: the GPU is unusable for this process (every later ``run`` raises this too)."""


class _NoAnswer(GpuUnavailableError):
    """The worker did not answer in time (it was killed)."""


class GpuProcessRunner(RunnerBase):
    """A :class:`~.runner.Runner` whose CompiledModel runs on the GPU in a worker process.

    ``adapter`` names the selected GPU adapter (None if LiteRT did not log it),
    ``fully_accelerated`` says whether every op runs on it, ``native_log`` is the worker's
    LiteRT log from loading, ``last_invoke_ms`` the worker's own run + read time and
    ``restarts`` how many times a hung or dead worker was replaced. ``run`` is thread-safe
    (calls take turns). See the module docstring for ``timeout_s`` and ``max_restarts``.
    """

    backend = "gpu"

    def __init__(self, model_path: str, precision: str = "fp16",
                 startup_timeout_s: float = STARTUP_TIMEOUT_S,
                 timeout_s: float = GPU_TIMEOUT_S,
                 max_restarts: int = GPU_MAX_RESTARTS, npu: dict | None = None,
                 cpu: dict | None = None) -> None:
        """``npu``: run backend npu instead (:func:`~.npu_runner.open_npu_runner`'s options):
        OpenVINO's dispatch holds the GIL for the whole inference too (measured). ``cpu``
        (``num_threads``, ``xnnpack_flags``): XNNPACK through CompiledModel on the CPU, the
        fp16 path of :mod:`.cpu_precision`, whose run holds the GIL too (measured)."""
        if not timeout_s > 0 or max_restarts < 0:
            raise ValueError(f"GPU timeout must be > 0 and restarts >= 0, got {timeout_s} s "
                             f"and {max_restarts}")
        self.fallback_note = ""
        self.last_invoke_ms = float("nan")
        self.timeout_s, self.max_restarts, self.restarts = timeout_s, max_restarts, 0
        self._model = {"model": model_path, "precision": precision,
                       **({"npu": npu} if npu is not None else {}),
                       **({"cpu": cpu} if cpu is not None else {})}
        self._kind = "NPU" if npu is not None else "CPU" if cpu is not None else "GPU"
        self._startup_timeout_s = startup_timeout_s
        self._lost_in_a_row = 0  # hung or dead workers since the last good inference
        self._failed = ""  # why the GPU is unusable (GpuWorkerFailedError), once it is
        self._warm = False  # the current worker has run once (compiled its shaders)
        self._closed = False
        self._run_lock = threading.Lock()  # one request at a time on the pipe
        self._shm: mmap.mmap | None = None
        self._views: list[np.ndarray] = []
        self._offsets: list[int] = []
        # The one thread that starts workers (see the module docstring: PR_SET_PDEATHSIG).
        self._spawner = ThreadPoolExecutor(1, thread_name_prefix="gpu_worker_start")
        self._memfd = os.memfd_create(MEMFD_NAME, os.MFD_CLOEXEC)
        self._proc: subprocess.Popen | None = None
        try:
            hello = self._start_worker()
        except GpuUnavailableError:
            self.close()
            raise
        self.native_log = NativeLog(hello.get("log", ""))
        if self.native_log.text:  # LiteRT's own log, where it went before: our stderr
            with contextlib.suppress(OSError):
                os.write(2, self.native_log.text.encode("utf-8", "replace"))
        if not hello["ok"]:
            self.close()
            reason = hello["error"] if self._kind != "GPU" else \
                (self.native_log.gpu_reason() or hello["error"])
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
        if npu is not None:  # vendor, device, plugin, compile_note, from_cache, description
            self.backend = "npu"
            self.__dict__.update(hello["npu"])
            self.description = self.description[:-1] + "; worker process)"
        if cpu is not None:
            self.backend = "cpu"
            self.description = (f"cpu (XNNPACK CompiledModel in a worker process, "
                                f"{cpu['num_threads']} threads)")

    # ---- Runner ----------------------------------------------------------------------------
    def input_buffer(self) -> np.ndarray:
        return self._views[0]

    def run(self) -> list[np.ndarray]:
        """Run once in the worker; outputs are views on shared memory, valid until next run.

        GpuWorkerError when the worker did not answer within ``timeout_s`` (the first run of a
        worker, which compiles its shaders, gets the startup timeout) or died; it was then
        restarted. GpuWorkerFailedError once restarting is over (see the class docstring).
        """
        with self._run_lock:
            if self._failed:
                raise GpuWorkerFailedError(self._failed)
            timeout = self.timeout_s if self._warm else max(self.timeout_s,
                                                            self._startup_timeout_s)
            try:
                reply = self._call({"run": True}, timeout_s=timeout)
            except _NoAnswer:
                allowance = "gpu_timeout" if self._warm else "a worker's first inference"
                self._replace_worker(f"{self._kind} inference did not finish within "
                                     f"{timeout:g} s "
                                     f"({allowance})")
            except GpuUnavailableError as exc:
                self._replace_worker(str(exc))
            self._warm = True
            if not reply["ok"]:
                raise RuntimeError(f"{self._kind} inference failed: {reply['error']}")
            self._lost_in_a_row = 0
            self.last_invoke_ms = reply["ms"]
            return self._views[1:]

    # ---- life cycle ------------------------------------------------------------------------
    def close(self) -> None:
        """Stop the worker and free the shared memory (idempotent)."""
        self._closed = True
        self._stop_worker(gently=True)
        self._spawner.shutdown(wait=False)
        if self._shm is not None:
            self._views = []
            try:
                self._shm.close()
            except BufferError:  # a caller still holds an output view; the OS frees it at exit
                pass
            self._shm = None
        if self._memfd >= 0:
            os.close(self._memfd)
            self._memfd = -1

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass

    @property
    def worker_pid(self) -> int | None:
        """The worker process's id (None while there is none)."""
        proc = self._proc
        return proc.pid if proc is not None and proc.poll() is None else None

    # ---- internals -------------------------------------------------------------------------
    def _start_worker(self) -> dict[str, Any]:
        """Start a worker (from the spawner thread) and load the model: its hello reply."""
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (_PACKAGE_ROOT, env.get("PYTHONPATH"))
                                            if p)
        # Own session: a Ctrl-C in the terminal reaches the parent only, which then closes the
        # worker's stdin (the worker exits on EOF; on SIGKILL when the parent dies).
        command = [sys.executable, "-m", "dense_perception.core.backends.gpu_worker",
                   "--parent", str(os.getpid())]
        self._proc = self._spawner.submit(
            subprocess.Popen, command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            env=env, start_new_session=True, pass_fds=(self._memfd,)).result()
        self._warm = False
        return self._call(self._model, timeout_s=self._startup_timeout_s)

    def _map_shared_memory(self) -> None:
        shapes = [self.input_shapes[0], *self.output_shapes]
        offsets, size = [], 0
        for shape in shapes:
            offsets.append(size)
            size += -(-int(np.prod(shape)) * 4 // _ALIGN) * _ALIGN
        try:
            # Reserve the pages now: no memory is an error here, not a SIGBUS on first touch.
            os.posix_fallocate(self._memfd, 0, size)
        except OSError as exc:
            raise GpuUnavailableError(f"no memory for the {self._kind} worker's "
                                      f"{size / 1e6:.0f} MB of input and outputs "
                                      f"({exc.strerror})") from None
        self._shm = mmap.mmap(self._memfd, size)
        self._offsets = offsets
        self._views = [np.frombuffer(self._shm, np.float32, int(np.prod(shape)), offset)
                       .reshape(shape) for shape, offset in zip(shapes, offsets)]
        self._share()

    def _share(self) -> None:
        """Have the worker map the shared memory (its inherited memfd)."""
        reply = self._call({"shared_fd": self._memfd, "offsets": self._offsets})
        if not reply["ok"]:
            raise GpuUnavailableError(f"{self._kind} worker could not map shared memory: "
                                      f"{reply['error']}")

    def _replace_worker(self, why: str) -> NoReturn:
        """The worker hung or died: kill it, start another (bounded), and raise for this frame."""
        self._stop_worker(gently=False)
        if self._closed:
            raise GpuWorkerError(f"{why} (the {self._kind} runner was closed)")
        self._lost_in_a_row += 1
        if self._lost_in_a_row > self.max_restarts:
            self._failed = (f"{why}, {self._lost_in_a_row} times in a row (gpu_max_restarts "
                            f"{self.max_restarts}): the {self._kind} or its driver is not "
                            "working")
            raise GpuWorkerFailedError(self._failed)
        try:
            hello = self._start_worker()
            if not hello["ok"]:
                raise GpuUnavailableError(hello["error"])
            self._share()
            # The first inference compiles the shaders: done now, under the startup timeout.
            warm = self._call({"run": True}, timeout_s=self._startup_timeout_s)
            if not warm["ok"]:
                raise GpuUnavailableError(warm["error"])
            self._warm = True
        except GpuUnavailableError as exc:
            self._stop_worker(gently=False)
            self._failed = f"{why}; restarting the {self._kind} worker failed: {exc}"
            raise GpuWorkerFailedError(self._failed) from None
        if self._closed:  # closed while restarting
            self._stop_worker(gently=False)
        self.restarts += 1
        raise GpuWorkerError(f"{why}; {self._kind} worker restarted ({self._lost_in_a_row} of "
                             f"{self.max_restarts} restarts in a row)")

    def _stop_worker(self, gently: bool) -> None:
        """End the worker: EOF on its stdin first when ``gently``, else (or then) SIGKILL."""
        proc = self._proc
        if proc is None:
            return
        if proc.poll() is None and gently:
            try:
                proc.stdin.close()
                proc.wait(timeout=2.0)
            except (OSError, ValueError, subprocess.TimeoutExpired):
                pass
        if proc.poll() is None:
            proc.kill()  # SIGKILL also ends a stopped (SIGSTOP) process
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5.0)
        for pipe in (proc.stdin, proc.stdout):
            with contextlib.suppress(OSError, ValueError):
                pipe.close()

    def _call(self, message: dict[str, Any], timeout_s: float | None = None) -> dict[str, Any]:
        """Send one request line and wait (GIL released) for the one-line reply."""
        proc = self._proc
        try:
            proc.stdin.write((json.dumps(message) + "\n").encode())
            proc.stdin.flush()
        except (BrokenPipeError, ValueError, OSError, AttributeError):
            raise GpuUnavailableError(self._died()) from None
        try:
            if timeout_s is not None:
                ready, _, _ = select.select([proc.stdout], [], [], timeout_s)
                if not ready:
                    proc.kill()
                    raise _NoAnswer(f"{self._kind} worker did not answer within "
                                    f"{timeout_s:g} s")
            line = proc.stdout.readline()
        except (OSError, ValueError):  # closed meanwhile (close() from another thread)
            line = b""
        if not line:
            raise GpuUnavailableError(self._died())
        return json.loads(line)

    def _died(self) -> str:
        try:
            code = self._proc.wait(timeout=2.0)
        except subprocess.TimeoutExpired:
            return f"{self._kind} worker process stopped answering"
        return (f"{self._kind} worker process exited (status {code}); LiteRT's log above says "
                "why")


def open_gpu_runner(model_path: str, backend: str, precision: str, log: Log,
                    warn: Log, timeout_s: float = GPU_TIMEOUT_S,
                    max_restarts: int = GPU_MAX_RESTARTS
                    ) -> tuple[GpuProcessRunner | None, str]:
    """The GPU runner for ``backend`` 'gpu' or 'auto', or (None, why not) for 'auto';
    ``timeout_s`` and ``max_restarts`` as :class:`GpuProcessRunner`'s.

    'auto' refuses a CPU emulation of a GPU (llvmpipe/lavapipe, SwiftShader): XNNPACK is
    faster on the same cores. 'gpu' takes it, with a warning. A GPU that does not initialise
    raises ModelLoadError for 'gpu'. The adapter and whether the graph is fully accelerated are
    logged either way.
    """
    from .runner_base import ModelLoadError, litert_version

    global _software_adapter
    if backend == "auto" and _software_adapter is not None:  # this machine's, seen already
        note = _software_note(_software_adapter)
        log(note)
        return None, note
    try:
        if litert_version().startswith("1."):
            raise GpuUnavailableError(f"ai-edge-litert {litert_version()} has no GPU "
                                      "accelerator options in Python (needs 2.x)")
        runner = GpuProcessRunner(model_path, precision, timeout_s=timeout_s,
                                  max_restarts=max_restarts)
    except GpuUnavailableError as exc:
        reason = " ".join(str(exc).split())
        if backend == "gpu":
            raise ModelLoadError(
                f"the GPU backend did not initialise ({reason}). Install a Vulkan driver "
                "for the GPU (docs/gpu.md), or set backend to 'auto' or 'cpu'.") from None
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
             "(no GPU Vulkan driver found; see docs/gpu.md)")
    log(f"GPU adapter: {where}; graph {accelerated}; gpu_precision {precision}")
    if not runner.fully_accelerated:
        warn(f"the model's graph is {accelerated}: expect CPU/GPU copies between its parts")
    return runner, ""


_software_adapter: Adapter | None = None  # set once 'auto' found only a CPU emulation


def _software_note(adapter: Adapter) -> str:
    return (f"GPU unavailable (the only GPU adapter, {adapter.describe()}, is a CPU emulation "
            "and slower than XNNPACK); fell back to CPU (XNNPACK). Set backend: gpu to use it "
            "anyway")
