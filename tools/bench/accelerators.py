# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""``make bench``'s accelerator rows: the GPU (WebGPU over Vulkan) and the NPU (LiteRT's
OpenVINO plugin), each against XNNPACK on the CPU."""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

import numpy as np

from dense_perception.core.pipeline import load_pipeline
from dense_perception.core.frame_data import Request
from dense_perception.core.settings.table import Settings
from dense_perception.core.backends.runner_base import InterpreterRunner
from tools.bench.frame import FRAME_SIZE
from tools.bench.timing import fresh_process_load, interleaved_ms, median_ms
from tools.common.scene import make_sample_scene, scene_intrinsics


NPU_LOAD_PROBE = """
import sys, time
from dense_perception.core.backends.npu_runner import open_npu_runner
from dense_perception.core.settings.table import Settings
start = time.perf_counter()
runner = open_npu_runner(sys.argv[1], "intel_openvino", sys.argv[2], sys.argv[3], log=print)
load = time.perf_counter() - start
start = time.perf_counter()
runner.run()
print(load, time.perf_counter() - start)
"""


def bench_npu(model_path: str, threads: int, runs: int, device: str, cache_dir: Path) -> dict:
    """The NPU rows (backend npu through LiteRT's OpenVINO plugin on ``device``) against
    XNNPACK: bare invoke (interleaved), each output's Pearson r, and load + first invoke in fresh
    processes: JIT (no cache), cache cold (ahead-of-time compile, then load), cache warm."""
    from dense_perception.core.backends.cpu_precision import output_correlations, smooth_test_input
    from dense_perception.core.backends.npu_runner import open_npu_runner

    cache = cache_dir / "npu_cache"
    npu = open_npu_runner(model_path, "intel_openvino", device, "off", log=lambda _: None)
    cpu = InterpreterRunner(model_path, threads)
    x = smooth_test_input(cpu.input_shapes[0])
    outs = []
    for runner in (cpu, npu):
        runner.input_buffer()[...] = x
        outs.append([np.array(o, copy=True) for o in runner.run()])
    times = interleaved_ms({"xnnpack": cpu.run, "npu": npu.run}, runs)
    result = {"npu_device": npu.device, "npu_plugin": npu.plugin,
              "npu_fully_accelerated": npu.fully_accelerated,
              "npu_bare_invoke_ms": round(times["npu"], 1),
              "npu_xnnpack_invoke_ms": round(times["xnnpack"], 1),
              "npu_vs_xnnpack_r": [round(c, 6) for c in output_correlations(*outs)]}
    for label, cache_arg in (("jit", "off"), ("cache_cold", str(cache)),
                             ("cache_warm", str(cache))):
        if label == "cache_cold":
            for old in cache.glob("*.tflite") if cache.exists() else []:
                old.unlink()
        result.update(fresh_process_load(NPU_LOAD_PROBE, [model_path, device, cache_arg],
                                         f"npu_load_s_{label}", f"npu_first_invoke_s_{label}"))
    return result


def bench_gpu(kind: str, model_path: str, runs: int, node_seconds: float, rounds: int,
              precision: str = "fp16") -> dict:
    """The GPU rows, on whatever Vulkan adapter LiteRT selects (named): bare GPU invoke, our
    host stages as a share of it, GPU-vs-CPU fidelity through the pipeline beside the card's
    figures, and the node (backend gpu) vs a bare GPU invoke under the same 30 fps feed."""
    from dense_perception.core.backends.gpu_runner import GpuProcessRunner, GpuUnavailableError
    from tools.checks.gpu_check import bare_gpu_invoke, pipeline_fidelity
    from tools.bench.loadgen import run_stream
    try:
        bare = bare_gpu_invoke(model_path, runs, precision)
    except GpuUnavailableError as exc:
        return {"gpu_adapter": f"none ({exc})"}
    result = {"gpu_adapter": bare["adapter"], "gpu_precision": precision,
              "gpu_fully_accelerated": bare["fully_accelerated"],
              "gpu_bare_invoke_ms": bare["invoke_ms"], "gpu_round_trip_ms": bare["round_trip_ms"]}
    # Host stages (everything but inference) of our pipeline on the GPU, own stage timers.
    frame = make_sample_scene(*FRAME_SIZE)
    k = scene_intrinsics(*FRAME_SIZE)
    pipeline = load_pipeline(model_path,
                             Settings(model_type=kind, backend="gpu", gpu_precision=precision,
                                      points_stride=1),
                             log=lambda _: None, warn=lambda _: None)
    try:
        request = Request.everything()
        pipeline.process(frame, "rgb8", k, request)
        pipeline.timer.clear()
        for _ in range(runs):
            pipeline.process(frame, "rgb8", k, request)
        stages = {name: round(s.mean_ms, 2) for name, s in pipeline.timer.stats().items()}
    finally:
        pipeline.runner.close()
    host_ms = sum(v for n, v in stages.items() if n != "inference")
    result.update(gpu_stage_ms=stages, gpu_host_stage_ms=round(host_ms, 1),
                  gpu_host_stage_pct_of_invoke=round(100 * host_ms / bare["invoke_ms"], 1))
    fidelity = pipeline_fidelity(model_path, [frame, np.ascontiguousarray(frame[:, ::-1])],
                                 gpu_precision=precision)
    result["gpu_vs_cpu"] = fidelity["ours"]
    result["gpu_vs_cpu_card"] = fidelity["card"]
    for key, value in fidelity["ours"].items():
        card = fidelity["card"].get(key)
        result[f"gpu_vs_cpu_{key}"] = f"{value:.5f}" + (f" ({card})" if card else "")
    if node_seconds > 0:
        runner = GpuProcessRunner(model_path, precision)
        try:
            runner.run()

            def bare_ms() -> float:
                return median_ms(runner.run, runs, warmup=0)
            cmd = [sys.executable, "-m", "dense_perception.ros.node", "--ros-args",
                   "-p", f"model_path:={model_path}", "-p", "backend:=gpu",
                   "-p", f"gpu_precision:={precision}"]
            stream = run_stream(cmd, fps=30.0, seconds=node_seconds, subscribe_all=True,
                                bare=bare_ms, rounds=rounds)
        finally:
            runner.close()
        ratios = [hz * ms / 1000.0 for hz, ms in zip(stream.node_hz_rounds, stream.bare_ms_rounds)]
        result.update(
            gpu_node_output_hz=round(statistics.median(stream.node_hz_rounds), 4),
            gpu_bare_invoke_ms_under_feed=round(statistics.median(stream.bare_ms_rounds), 1),
            gpu_node_vs_bare=round(statistics.median(ratios), 3),
            gpu_node_vs_bare_rounds=[round(r, 3) for r in ratios])
    return result
