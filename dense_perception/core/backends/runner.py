# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""LiteRT model runner: GPU through ``CompiledModel``, CPU through the XNNPACK ``Interpreter``.

Works with ai-edge-litert 2.x (x86_64 and aarch64 wheels, e.g. a Raspberry Pi 5) and detects
features instead of pinning a version:

* CPU: ``Interpreter`` with XNNPACK (on by default) and ``num_threads``. Its ``invoke`` releases
  the GIL, so pre/post-processing of other frames can overlap inference, and its tensors can be
  read and written in place.
* CPU fp16 (``cpu_precision``, see :mod:`.cpu_precision`): ``CompiledModel`` on the CPU with
  XNNPACK's force-fp16 flag, where the CPU has native fp16 arithmetic (ARMv8.2+), in a worker
  process (:mod:`.gpu_runner`) because its run holds the GIL.
* GPU: ``CompiledModel`` with ``HardwareAccelerator.GPU`` (2.x only: LiteRT's WebGPU
  accelerator, Dawn over Vulkan), run in a worker process by :mod:`.gpu_runner` because its
  output reads hold the GIL. ``backend='auto'`` falls back to the CPU, and says why, when the
  GPU does not work or is a CPU emulation (llvmpipe).
* NPU: ``CompiledModel`` with ``HardwareAccelerator.NPU`` through a LiteRT vendor plugin (Intel
  OpenVINO, Qualcomm), in :mod:`.npu_runner`; only when asked for (``backend='npu'``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from .cpu_precision import open_cpu_runner
from .logits_head import LogitsHead, graph_with_labels
from .runner_base import (BACKENDS, InterpreterRunner, Log, ModelLoadError, Runner,
                          default_num_threads, litert_version)
from ..model.tensors import ModelIO, ModelIOError, check_model_io
from ..model.specs import format_signature
from ..model.tflite_file import CorruptModelError, TfliteSignature, read_signature


def resolve_model_path(model_path: str) -> str:
    """An existing file for ``model_path``: as given, else a file of that name in the installed
    package's share/dense_perception/models/ (colcon) or the source tree's models/ folder."""
    if not model_path or Path(model_path).is_absolute() or Path(model_path).exists():
        return model_path
    candidates = [Path(__file__).resolve().parents[3] / "models" / model_path]
    try:
        from ament_index_python.packages import get_package_share_directory
        candidates.insert(0, Path(get_package_share_directory("dense_perception")) / "models"
                          / model_path)
    except Exception:  # noqa: BLE001 - not installed with colcon (or no ament_index): fine
        pass
    for candidate in candidates:
        if candidate.is_file():
            return str(candidate)
    return model_path


def check_model_file(model_path: str, check_io: bool = True) -> TfliteSignature:
    """The file's signature; ModelLoadError with a fix when ``model_path`` is missing,
    unreadable, not a .tflite or damaged (before LiteRT, which may crash on a damaged file),
    or (``check_io``) when its inputs or outputs cannot be read right: a dtype, quantisation
    or dynamic size :func:`~..model.tensors.check_model_io` refuses."""
    path = Path(model_path)
    hint = ("Put the model file there (see models/README.md for where the real files come "
            "from) or set the model_path parameter")
    if not model_path:
        raise ModelLoadError(f"model_path is empty. {hint}.")
    if not path.is_file():
        raise ModelLoadError(f"model file '{model_path}' does not exist. {hint}.")
    try:
        with path.open("rb") as f:
            head = f.read(8)
    except OSError as exc:
        raise ModelLoadError(f"model file '{model_path}' cannot be read ({exc.strerror}). "
                             "Check its permissions.") from None
    if len(head) < 8 or head[4:8] != b"TFL3":
        raise ModelLoadError(f"model file '{model_path}' is not a LiteRT/TFLite flatbuffer "
                             "(no TFL3 identifier). Use a .tflite file (see models/README.md).")
    try:
        signature = read_signature(path)
    except CorruptModelError as exc:
        raise ModelLoadError(f"model file '{model_path}' is damaged: {exc}. Download it again "
                             "(see models/README.md).") from None
    if check_io:
        model_io(signature, model_path)
    return signature


def model_io(signature: TfliteSignature, model_path: str) -> ModelIO:
    """:func:`~..model.tensors.check_model_io` of the file, its refusal as ModelLoadError."""
    try:
        return check_model_io(signature, f"model file '{model_path}'")
    except ModelIOError as exc:
        raise ModelLoadError(str(exc)) from None


@dataclass(frozen=True)
class BackendConfig:
    """Where and how the model runs: the settings of the same names (``core/wiring/derived.py``
    builds it; each value is checked there, in the settings table)."""

    backend: str = "auto"          # auto | gpu | cpu | npu
    num_threads: int = -1          # CPU threads; -1 = all cores
    gpu_precision: str = "fp16"    # fp16 | fp32 GPU arithmetic
    cpu_precision: str = "fp32"    # auto | fp32 | fp16 (:mod:`.cpu_precision`); exact by default
    gpu_timeout: float | None = None       # s per GPU inference (None: gpu_runner's default)
    gpu_max_restarts: int | None = None    # GPU worker restarts (None: gpu_runner's default)
    npu: dict[str, Any] | None = None      # the NPU plugin's vendor, device, cache_dir, ...


def open_runner(model_path: str, config: BackendConfig = BackendConfig(), *, log: Log = print,
                warn: Log | None = None, warmup: bool = True,
                labels_from: int | None = None) -> Runner:
    """Load ``model_path`` on ``config.backend`` ('auto' | 'gpu' | 'cpu' | 'npu') and warm it up.

    ``auto`` tries the GPU and falls back to the CPU, logging which one runs and why (a CPU
    emulation of a GPU counts as no GPU); ``gpu`` raises ModelLoadError when the GPU does not
    initialise. ``cpu_precision`` applies on the CPU (:mod:`.cpu_precision`); ``gpu_timeout``
    and ``gpu_max_restarts`` bound a GPU inference and the worker's restarts
    (:mod:`.gpu_runner`); ``npu`` runs a LiteRT vendor plugin (:mod:`.npu_runner`) or raises
    ModelLoadError; 'auto' never picks it. ``warn`` logs warnings (default: ``log``). The
    warm-up's time is kept as ``runner.warmup_ms`` (what a frame costs before one is timed).
    ``labels_from``: the index of a segmentation logits output whose labels and probability
    the graph computes (:mod:`.logits_head`; the CPU and the accelerators each load their own
    copy); ``runner.logits_head`` says where they come out (None: the logits are read here).
    """
    def load_path(where: str) -> tuple[str, LogitsHead | None]:
        if labels_from is None:
            return model_path, None
        return graph_with_labels(model_path, labels_from, warn or log, where == "cpu")

    backend = config.backend
    if backend not in BACKENDS:  # a library caller's typo (the settings table checks it)
        raise ModelLoadError(f"backend '{backend}' is unknown; allowed: {', '.join(BACKENDS)}")
    signature = check_model_file(model_path, check_io=False)
    io = model_io(signature, model_path)
    runner: Runner | None = None
    fallback_note = ""
    if not io.float32:  # CompiledModel backends are fed float32 here: XNNPACK Interpreter
        if backend == "auto":
            fallback_note = f"GPU not used: {io.describe()}, read on the CPU (XNNPACK)"
            log(fallback_note)
        backend, config = _interpreter_only(backend, config, io, model_path, log)
    head: LogitsHead | None = None
    if backend == "npu":
        from .npu_runner import open_npu_process_runner
        path, head = load_path("npu")
        runner = open_npu_process_runner(path, config.npu or {}, log, warn or log,
                                         config.gpu_timeout, config.gpu_max_restarts)
    if backend in ("auto", "gpu"):
        from .gpu_runner import open_gpu_runner
        from ..setting_values import GPU_MAX_RESTARTS, GPU_TIMEOUT_S
        path, head = load_path("gpu")
        runner, fallback_note = open_gpu_runner(
            path, backend, config.gpu_precision, log, warn or log,
            GPU_TIMEOUT_S if config.gpu_timeout is None else config.gpu_timeout,
            GPU_MAX_RESTARTS if config.gpu_max_restarts is None else config.gpu_max_restarts)
    if runner is None:
        threads = default_num_threads() if config.num_threads == -1 else config.num_threads
        path, head = load_path("cpu")
        if path != model_path:  # the shapes checked below are the copy's
            signature = check_model_file(path, check_io=False)
        try:
            runner = open_cpu_runner(path, threads, config.cpu_precision, log)
        except (ValueError, RuntimeError) as exc:
            raise ModelLoadError(f"model file '{model_path}' could not be loaded by LiteRT "
                                 f"({_first_line(exc)}). Re-download it (see "
                                 "models/README.md).") from None
    runner.fallback_note, runner.logits_head = fallback_note, head
    if head is not None:
        log("segmentation labels and confidence are computed in the model's graph "
            f"({head.path})")
    if isinstance(runner, InterpreterRunner) and (
            list(runner.input_shapes), list(runner.output_shapes)) != (
            list(signature.input_shapes), list(signature.output_shapes)):
        runner.close()  # the spec was read from the stored shapes: they must be the run's
        ran = format_signature(runner.input_shapes, runner.output_shapes)
        stored = format_signature(signature.input_shapes, signature.output_shapes)
        raise ModelLoadError(f"model file '{model_path}' runs at {ran} but stores {stored} "
                             "(dynamic sizes); convert it with fixed input and output sizes")
    if warmup:
        runner.input_buffer()[...] = 0.0
        start = time.perf_counter()
        runner.run()
        runner.warmup_ms = (time.perf_counter() - start) * 1000.0
    log(f"running on {runner.description}, ai-edge-litert {litert_version()}")
    return runner


def _interpreter_only(backend: str, config: BackendConfig, io: ModelIO, model_path: str,
                      log: Log) -> tuple[str, BackendConfig]:
    """The backend and config for a file whose I/O is not float32: the XNNPACK Interpreter,
    which (de)quantises with the file's own scale and zero point; backend gpu or npu is
    refused in one line, 'auto' says why it stays on the CPU, fp16 CPU arithmetic is off."""
    if backend in ("gpu", "npu"):
        raise ModelLoadError(
            f"backend {backend} cannot run model file '{model_path}': its {io.describe()}, "
            f"and the {backend.upper()} path here reads and writes float32 only. Set backend "
            "to 'cpu' or 'auto' (XNNPACK reads it with the file's own scale and zero point).")
    if config.cpu_precision == "fp16":  # asked for; 'auto' quietly keeps fp32
        log(f"cpu_precision {config.cpu_precision} not used: {io.describe()}; running fp32")
    return "cpu", replace(config, backend="cpu", cpu_precision="fp32")


def _first_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return (text[:200] + "...") if len(text) > 200 else (text or type(exc).__name__)
