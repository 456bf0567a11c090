# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The model and backend rows of the settings table (:class:`ModelSettings`, the first fields of
:class:`.table.Settings`): which network, how its input and output are read, and where it runs.
Kept apart from the rest of the table only for size; the rules are the same (see
:mod:`.table`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..model.depth_network import mean_std_problem
from ..model.specs import MODEL_TYPES
from ..setting_names import Syntax
from .row import setting
from ..setting_values import (BACKENDS, CPU_PRECISIONS, DEPTH_OUTPUT_KINDS, DEPTH_OUTPUT_UNITS,
                              GPU_MAX_RESTARTS, GPU_PRECISIONS, GPU_TIMEOUT_S, NORMALIZATIONS,
                              NPU_VENDORS, OPENVINO_DEVICES)


def _threads_problem(value: int, syntax: Syntax) -> str | None:
    return f"{syntax.name('num_threads')} must be >= 1, or -1 for all cores; got 0" \
        if value == 0 else None


def _mean_problem(value: Any, syntax: Syntax) -> str | None:
    return mean_std_problem(list(value), [1.0] * 3, syntax)  # alone: the std at its default


def _std_problem(value: Any, syntax: Syntax) -> str | None:
    return mean_std_problem([0.0] * 3, list(value), syntax)


@dataclass(frozen=True)
class ModelSettings:
    """The model and backend settings (the first rows of :class:`.table.Settings`)."""

    model_path: str = setting(
        "", "Path to the .tflite model (DA3-Small, TIPSv2-B14-DPT, or any "
        "single-image depth network with model_type depth); "
        "relative paths are looked up in the package's models/ folder too.",
        offline="--model")
    model_type: str = setting(
        "auto", "Model kind: da3, tipsv2, or depth (any single-image "
        "depth network, relative or metric, read per input_normalization, depth_output, "
        "depth_output_kind and depth_output_unit); 'auto' detects DA3 and TIPSv2 from the file's signature and "
        "never picks depth.", choices=MODEL_TYPES, offline="--model-type")
    input_normalization: str = setting(
        "unit", "model_type depth: how RGB pixels are normalised "
        "for the model: unit (RGB/255), imagenet (RGB/255, then ImageNet's mean and std) "
        "or custom (RGB/255, then input_mean and input_std). DA3 and TIPSv2 ignore it "
        "(their cards fix it).", choices=NORMALIZATIONS,
        offline="--input-normalization")
    input_mean: tuple[float, ...] = setting(
        [0.0, 0.0, 0.0], "model_type depth, input_normalization custom: "
        "the mean subtracted from RGB/255, per channel (R, G, B).",
        offline="--input-mean", check=_mean_problem)
    input_std: tuple[float, ...] = setting(
        [1.0, 1.0, 1.0], "model_type depth, input_normalization custom: "
        "the standard deviation that RGB/255 minus input_mean is divided by, per channel "
        "(R, G, B; > 0).",
        offline="--input-std", check=_std_problem)
    depth_output: int = setting(
        -1, "model_type depth: which output (counted from 0) is the "
        "depth; -1 = the first output that is one plane at the input's resolution.",
        low=-1, high=1000,
        offline="--depth-output")
    depth_output_kind: str = setting(
        "depth", "model_type depth: what the depth output holds: "
        "depth (grows with distance) or inverse_depth (disparity-like, shrinks with "
        "distance; depth = 1/x, x <= 0 is invalid), in the unit depth_output_unit "
        "says.", choices=DEPTH_OUTPUT_KINDS,
        offline="--depth-output-kind")
    depth_output_unit: str = setting(
        "relative", "model_type depth: relative (scale-free: "
        "metres come from depth_scale_source) or metres (a metric network, e.g. Metric3D, "
        "Depth Anything V2 metric, FastDepth: its output is published in metres with no "
        "scale source, like TIPSv2's; a depth_scale_source other than none then checks and "
        "corrects its metres, each by its error: metric_depth_error).",
        choices=DEPTH_OUTPUT_UNITS, offline="--depth-output-unit")
    backend: str = setting(
        "auto", "'gpu' (LiteRT CompiledModel, WebGPU over Vulkan), 'cpu' "
        "(XNNPACK), 'npu' (a LiteRT vendor plugin: npu_vendor) or 'auto' (the GPU if it "
        "initialises and is not a CPU emulation such as llvmpipe, else the CPU; never the "
        "NPU).", choices=BACKENDS,
        offline="--backend")
    gpu_precision: str = setting(
        "fp16", "GPU arithmetic for backend gpu/auto: fp16 (LiteRT's "
        "default, fastest) or fp32 (GpuOptions enforce_f32: for values beyond fp16's "
        "range of 65504 or its 3 significant digits).", choices=GPU_PRECISIONS,
        offline="--gpu-precision")
    gpu_timeout: float = setting(
        GPU_TIMEOUT_S, "Seconds one GPU inference may take (real "
        "models: milliseconds to tenths of a second); past it the GPU worker process is "
        "killed and restarted, and that frame fails.", low=0.1, high=3600.0,
        unit="s", offline="--gpu-timeout", affects_output=False)
    gpu_max_restarts: int = setting(
        GPU_MAX_RESTARTS, "GPU worker restarts (after a "
        "timeout or a crash) with no good inference between them; one more and the node "
        "exits with status 1 and one FATAL line, for respawn to act.", low=0, high=1000,
        offline="--gpu-max-restarts", affects_output=False)
    npu_vendor: str = setting(
        "auto", "backend npu: the LiteRT vendor plugin: intel_openvino "
        "(Intel Core Ultra NPUs through OpenVINO), qualcomm (Hexagon HTP through QNN) or "
        "auto (intel_openvino on x86_64, qualcomm on aarch64).", choices=NPU_VENDORS,
        offline="--npu-vendor")
    openvino_device: str = setting(
        "NPU", "backend npu, intel_openvino: OpenVINO's device: NPU, "
        "GPU, or CPU (a test bed on machines without an NPU, slower than backend cpu).",
        choices=OPENVINO_DEVICES, offline="--openvino-device")
    npu_cache_dir: str = setting(
        "", "backend npu: folder of compiled models (keyed by model "
        "hash, plugin and device); '' = $XDG_CACHE_HOME or ~/.cache, "
        "dense_perception/npu; 'off' = compile at every start.",
        offline="--npu-cache-dir", affects_output=False)
    npu_library_dir: str = setting(
        "", "backend npu, qualcomm: folder with LiteRT's Qualcomm "
        "dispatch library (libLiteRtDispatch_Qualcomm.so), optionally its compiler "
        "plugin, and Qualcomm's QNN libraries (libQnn*.so); no ai-edge-litert wheel has "
        "them. Unused for intel_openvino.",
        offline="--npu-library-dir", affects_output=False)
    num_threads: int = setting(
        -1, "CPU threads for XNNPACK; -1 = all cores (4 on a Pi 5).",
        low=-1, high=256,
        offline="--threads", affects_output=False, check=_threads_problem)
    cpu_precision: str = setting(
        "auto", "CPU arithmetic: 'fp16' where the CPU has native fp16 "
        "(ARMv8.2+, e.g. Pi 5), 'fp32', or 'auto' (fp16 if the CPU has it and the model "
        "passes an fp16-vs-fp32 check at load, else fp32; the log says which).",
        choices=CPU_PRECISIONS, offline="--cpu-precision")
