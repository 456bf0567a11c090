# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The runner base types every backend shares: the ``Runner`` protocol, ``ModelLoadError``,
the LiteRT version, and the two in-process LiteRT runners (``Interpreter`` on XNNPACK and
``CompiledModel``) that the CPU, GPU and NPU openers build on.

Kept apart from :mod:`.runner` (which picks a backend) so that :mod:`.cpu_precision`,
:mod:`.gpu_runner`, :mod:`.gpu_worker` and :mod:`.npu_runner` import these without importing
the module that imports them: the import graph stays a tree.
"""

from __future__ import annotations

import os
from typing import Callable, Protocol

import numpy as np

from .logits_head import LogitsHead
from .model_pages import release_file_pages
from ..setting_values import BACKENDS, GPU_PRECISIONS  # BACKENDS: for runner.py's check
from ..model.tensors import FLOAT32, details_codec

Log = Callable[[str], None]


class ModelLoadError(RuntimeError):
    """The model file cannot be used; the message says what is wrong and how to fix it."""


class RunnerLostError(RuntimeError):
    """The backend is unusable for this process (a GPU worker that kept dying): every later
    ``run`` raises this too, so a node exits rather than skip every frame."""


class Runner(Protocol):
    """What the pipeline and the front ends need from a loaded model (every backend has it:
    :class:`RunnerBase`), so they never import a backend."""

    backend: str        # "cpu", "gpu" or "npu"
    description: str    # e.g. "cpu (XNNPACK Interpreter, 4 threads)"
    fallback_note: str  # why backend 'auto' is not on the GPU ("" otherwise)
    warmup_ms: float | None  # the warm-up inference's time (what a frame costs), None: not run
    logits_head: LogitsHead | None  # where labels computed in the graph come out, or None
    input_shapes: list[tuple[int, ...]]
    output_shapes: list[tuple[int, ...]]

    def details(self) -> dict[str, str]:
        """Diagnostic key/values of the backend (adapter, device, restarts; {} for XNNPACK)."""

    def close(self) -> None:
        """Free what the backend holds outside this process's heap (a worker process)."""

    def input_buffer(self) -> np.ndarray:
        """The model input to write in place (do not keep it past the next ``run``)."""

    def run(self) -> list[np.ndarray]:
        """Run once; outputs in model order, valid until the next ``run``."""


class RunnerBase:
    """The defaults every runner shares (see :class:`Runner`)."""

    backend = "cpu"
    description = ""
    fallback_note = ""
    warmup_ms: float | None = None
    logits_head: LogitsHead | None = None

    def details(self) -> dict[str, str]:
        """Diagnostic key/values of a GPU or NPU runner; {} for others."""
        return {**gpu_details(self), **npu_details(self)}

    def close(self) -> None:
        """Nothing to free beyond the heap."""


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
        "gpu timeout (s)": f"{getattr(runner, 'timeout_s', float('nan')):g}",
        "gpu worker restarts": str(getattr(runner, "restarts", 0)),
    }


def npu_details(runner: object) -> dict[str, str]:
    """Diagnostic key/values for an NPU runner (vendor, device, plugin, acceleration, compile
    or cache time); {} for others."""
    if getattr(runner, "backend", "") != "npu":  # (duck-typed: tests wrap runners)
        return {}
    return {
        "npu vendor": getattr(runner, "vendor", "-"),
        "npu device": getattr(runner, "device", "-"),
        "npu plugin": getattr(runner, "plugin", "-"),
        "npu fully accelerated": "yes" if getattr(runner, "fully_accelerated", False) else "no",
        "npu compile": getattr(runner, "compile_note", "-"),
        "npu worker restarts": str(getattr(runner, "restarts", 0)),
    }


def litert_version() -> str:
    """The installed ai-edge-litert version."""
    import ai_edge_litert  # LiteRT loads when a model does: the settings and --help need none
    return getattr(ai_edge_litert, "__version__", "unknown")


def default_num_threads() -> int:
    """All cores this process may use (4 on a Raspberry Pi 5)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


class InterpreterRunner(RunnerBase):
    """CPU inference with the LiteRT Interpreter and its default XNNPACK delegate."""

    backend = "cpu"

    def __init__(self, model_path: str, num_threads: int) -> None:
        from ai_edge_litert.interpreter import Interpreter
        self._interpreter = Interpreter(model_path=model_path, num_threads=num_threads)
        self._interpreter.allocate_tensors()
        inputs = self._interpreter.get_input_details()
        outputs = self._interpreter.get_output_details()
        self.input_shapes = [tuple(int(d) for d in t["shape"]) for t in inputs]
        self.output_shapes = [tuple(int(d) for d in t["shape"]) for t in outputs]
        # tensor() gives callables returning views into the interpreter's own memory: no copies.
        self._input = self._interpreter.tensor(inputs[0]["index"])
        self._outputs = [self._interpreter.tensor(t["index"]) for t in outputs]
        # Quantised or float16 I/O: the caller writes and reads float32 all the same (the
        # file's own scale and zero point, :mod:`..model.tensors`); float32 stays zero-copy.
        self._in_codec = details_codec(inputs[0])
        self._out_codecs = [details_codec(t) for t in outputs]
        self._staging = None if self._in_codec == FLOAT32 else \
            (np.zeros(self.input_shapes[0], np.float32), np.zeros(self.input_shapes[0],
                                                                  np.float32))
        self._decoded = [None if c == FLOAT32 else np.zeros(shape, np.float32)
                         for c, shape in zip(self._out_codecs, self.output_shapes)]
        self.description = f"cpu (XNNPACK Interpreter, {num_threads} threads)"
        if any(c != FLOAT32 for c in [self._in_codec, *self._out_codecs]):
            self.description = self.description[:-1] + ", I/O read with the file's own " \
                "scale and zero point)"
        # XNNPACK has packed the weights into its own buffers: the mapped file's pages are
        # not needed resident any more (-300 MB RSS for TIPSv2; see model_pages).
        self.released_bytes = release_file_pages(model_path)

    def input_buffer(self) -> np.ndarray:
        return self._input() if self._staging is None else self._staging[0]

    def run(self) -> list[np.ndarray]:
        if self._staging is not None:
            self._in_codec.encode(self._staging[0], self._input(), self._staging[1])
        self._interpreter.invoke()
        return [view() if out is None else codec.decode(view(), out)
                for view, codec, out in zip(self._outputs, self._out_codecs, self._decoded)]


class CompiledModelRunner(RunnerBase):
    """Inference with the LiteRT CompiledModel API (2.x) on an accelerator: the GPU, or the CPU
    (which lets tests exercise this code path on machines without a GPU)."""

    def __init__(self, model_path: str, accelerator: str = "gpu", num_threads: int = 1,
                 weight_cache: str | None = None, gpu_precision: str = "fp16",
                 cpu_options: dict | None = None, options=None, environment=None) -> None:
        from ai_edge_litert import compiled_model as cm  # slow import: only when asked for

        if not hasattr(cm, "Options"):
            raise RuntimeError(f"ai-edge-litert {litert_version()} has no accelerator options "
                               "in Python (CompiledModel options need 2.x)")
        if options is not None:  # the caller's (the NPU backend: vendor plugin options)
            pass
        elif accelerator == "gpu":
            options = _gpu_options(cm, gpu_precision)
        else:
            # The XNNPACK weight cache (a file) makes later loads skip weight packing. It must
            # belong to this exact model: a stale one silently gives another model's results.
            # cpu_options: further CpuOptions fields (xnnpack_flags, enable_ynnpack, kernel_mode).
            cpu = cm.CpuOptions(num_threads=num_threads, **(cpu_options or {}), **(
                {"xnnpack_weight_cache_path": weight_cache} if weight_cache else {}))
            options = cm.Options(cm.HardwareAccelerator.CPU, cpu_options=cpu)
        self.backend = accelerator
        self._model = cm.CompiledModel.from_file(model_path, options=options,
                                                 environment=environment)
        self._inputs = self._model.create_input_buffers(0)
        self._outputs = self._model.create_output_buffers(0)
        # Buffers come in the signature's order; read shapes by name in that same order.
        signature = self._model.get_signature_by_index(0)
        details_in = self._model.get_input_tensor_details(signature["key"])
        details_out = self._model.get_output_tensor_details(signature["key"])
        odd = [f"{n} is {d[n]['dtype']}" for d in (details_in, details_out) for n in d
               if str(d[n].get("dtype", "float32")) != "float32"]
        if odd:  # its buffers are written and read as float32 here (open_runner keeps such
            # files on the Interpreter, which reads them with their scale and zero point)
            raise RuntimeError(f"CompiledModel runs float32 inputs and outputs only; {odd[0]}")
        self.input_shapes = [tuple(int(d) for d in details_in[n]["shape"])
                             for n in signature["inputs"]]
        self.output_shapes = [tuple(int(d) for d in details_out[n]["shape"])
                              for n in signature["outputs"]]
        self._input = np.zeros(self.input_shapes[0], np.float32)
        self.fully_accelerated = bool(self._model.is_fully_accelerated())
        self.description = f"{accelerator} (LiteRT CompiledModel)"
        # On the CPU, XNNPACK packed the weights while compiling: as for the Interpreter, the
        # mapped file's pages need not stay resident (-300 MB RSS for TIPSv2).
        self.released_bytes = release_file_pages(model_path) if accelerator == "cpu" else 0

    def input_buffer(self) -> np.ndarray:
        return self._input

    def run(self) -> list[np.ndarray]:
        outputs = [np.empty(shape, np.float32) for shape in self.output_shapes]
        self.run_into(self._input, outputs)
        return outputs

    def run_into(self, image: np.ndarray, outputs: list[np.ndarray]) -> None:
        """Run on ``image`` and read the outputs into the given float32 arrays (e.g. shared
        memory). On the GPU the run is queued and the reads wait for it; both hold the GIL."""
        self._inputs[0].write(image)
        self._model.run_by_index(0, self._inputs, self._outputs)
        for buf, out in zip(self._outputs, outputs):
            _read_into(buf, out)


def _gpu_options(cm, precision: str):
    """CompiledModel options for the GPU: ``fp16`` (LiteRT's default: fp16 arithmetic) or
    ``fp32`` (``GpuOptions(enforce_f32=True)``, slower, for values beyond fp16's range)."""
    if precision not in GPU_PRECISIONS:
        raise ValueError(f"gpu_precision '{precision}' is unknown; allowed: "
                         f"{', '.join(GPU_PRECISIONS)}")
    from ai_edge_litert.gpu_options import GpuOptions
    return cm.Options(cm.HardwareAccelerator.GPU,
                      gpu_options=GpuOptions(enforce_f32=precision == "fp32"))


def _read_into(buf, out: np.ndarray) -> None:
    """Read a TensorBuffer straight into ``out`` (C-contiguous float32), without the extra
    array ``TensorBuffer.read`` allocates; falls back to it on wheels without the wrapper."""
    try:
        from ai_edge_litert.tensor_buffer import _tb
        _tb.ReadTensorToBuffer(buf.capsule, out.reshape(-1), "float32")
    except (ImportError, AttributeError):
        out.reshape(-1)[...] = buf.read(out.size, np.float32)
