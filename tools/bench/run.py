# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""``make bench``: side-by-side speed figures on DA3-class and TIPSv2-class models.

Every figure is measured in one run on this machine, with the same thread count, so the
ratios between them mean something even on a noisy machine. Writes ``bench_out/results.json``
and prints a table. The models come from ``tools.bench.models`` (built with torch in
``.venv-bench``, random weights, fp16 like the real files); the rows are measured by
``tools.bench.frame``, ``tools.bench.node``, ``tools.bench.cameras`` and
``tools.bench.accelerators``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from importlib.util import find_spec
from pathlib import Path

import numpy as np

from dense_perception.core.model.specs import MODEL_SPECS
from dense_perception.core.backends.runner import default_num_threads, litert_version
from tools.bench.accelerators import bench_gpu, bench_npu
from tools.bench.cameras import camera_rates, load_memory, node_memory
from tools.bench.frame import (bench_core, bench_load, bench_metric_scale, bench_pointcloud,
                               bench_rectify)
from tools.bench.node import bench_node


def machine() -> dict:
    """What this ran on."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), cpu)
    except OSError:
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "machine": platform.machine(),
            "python": platform.python_version(), "ai_edge_litert": litert_version(),
            "numpy": np.__version__}


def table(results: dict) -> str:
    """A plain-text table of the headline figures, one column per model class."""
    rows = [("bare_invoke_ms", "bare invoke (ms)"), ("faster_api", "faster API"),
            ("card_snippet_frame_ms", "card snippet, frame (ms)"),
            ("pipeline_frame_ms", "our pipeline, frame (ms)"),
            ("host_overhead_ms", "host overhead (ms)"), ("host_overhead_pct", "host overhead (%)"),
            ("host_stage_ms", "host stages, own timer (ms)"),
            ("host_stage_pct", "host stages / inference (%)"),
            ("bare_invoke_hz", "bare invoke, quiet (Hz)"),
            ("bare_invoke_hz_under_feed", "bare invoke, 30 fps feed (Hz)"),
            ("node_output_hz", "node output, 30 fps feed (Hz)"),
            ("node_vs_bare", "node / bare (same feed)"),
            ("node_vs_quiet_bare", "node / bare (quiet)"),
            ("node_period_vs_own_inference", "node period / its own invoke"),
            ("first_output_s", "first output (s)"),
            ("first_output_second_start_s", "first output, 2nd start (s)"),
            ("load_s_interpreter", "load, Interpreter (s)"),
            ("load_s_weight_cache_cold", "load, weight cache cold (s)"),
            ("load_s_weight_cache_warm", "load, weight cache warm (s)"),
            ("rss_mb", "node RSS (MB)"),
            ("model_rss_mb_interpreter", "model alone RSS, Interpreter (MB)"),
            ("model_rss_mb_weight_cache_warm", "model alone RSS, weight cache (MB)"),
            ("node_1cam_rss_mb", "node, 1 camera RSS (MB)"),
            ("node_2cam_rss_mb", "node, 2 cameras RSS (MB)"),
            ("node_3cam_rss_mb", "node, 3 cameras RSS (MB)"),
            ("node_3cam_vs_1cam_rss", "3 cameras / 1 camera RSS (<= 1.15)"),
            ("separate_2nodes_rss_mb", "2 separate nodes RSS (MB)"),
            ("separate_3nodes_rss_mb", "3 separate nodes RSS (MB)"),
            ("node_3cam_pss_mb", "node, 3 cameras PSS (MB)"),
            ("separate_3nodes_pss_mb", "3 separate nodes PSS (MB)"),
            ("one_camera_30fps_hz", "1 camera at 30 fps, output (Hz)"),
            ("two_cameras_30fps_hz", "2 cameras at 30 fps, each (Hz)"),
            ("two_cameras_per_camera_vs_one", "2 cameras: per camera / 1 camera"),
            ("fit_ms", "fit 1280x720, pinhole (ms)"),
            ("rectify_fit_ms", "fit 1280x720, rectifying (ms)"),
            ("rectify_cost_ms", "rectification / frame (ms)"),
            ("pointcloud_ms", "point cloud 896x504 (ms)"),
            ("pointcloud_reference_ms", "per-point loop (ms)"),
            ("scale_ground_plane_ms", "DA3 scale: ground plane (ms)"),
            ("scale_reference_dense_ms", "DA3 scale: dense reference (ms)"),
            ("scale_reference_sparse_ms", "DA3 scale: 1 % reference (ms)"),
            ("scale_fixed_ms", "DA3 scale: fixed (ms)"),
            ("gpu_adapter", "GPU adapter"),
            ("gpu_bare_invoke_ms", "GPU bare invoke (ms)"),
            ("gpu_host_stage_pct_of_invoke", "GPU: host stages / invoke (%)"),
            ("gpu_node_vs_bare", "GPU: node / bare (same feed)"),
            ("gpu_vs_cpu_depth_pearson", "GPU vs CPU depth r (card)"),
            ("gpu_vs_cpu_depth_cosine", "GPU vs CPU depth cos (card)"),
            ("gpu_vs_cpu_normals_pearson", "GPU vs CPU normals r (card)"),
            ("gpu_vs_cpu_seg_argmax_agreement", "GPU vs CPU seg argmax (card)"),
            ("npu_device", "NPU: OpenVINO device"),
            ("npu_bare_invoke_ms", "NPU bare invoke (ms)"),
            ("npu_xnnpack_invoke_ms", "NPU: XNNPACK beside it (ms)"),
            ("npu_vs_xnnpack_r", "NPU vs XNNPACK outputs r"),
            ("npu_load_s_jit", "NPU load, JIT (s)"),
            ("npu_load_s_cache_cold", "NPU load, cache cold (s)"),
            ("npu_load_s_cache_warm", "NPU load, cache warm (s)")]
    kinds = [k for k in results if k != "machine"]
    lines = [f"{'':34}" + "".join(f"{k:>16}" for k in kinds)]
    for key, label in rows:
        lines.append(f"{label:34}" + "".join(f"{str(results[k].get(key, '-')):>16}"
                                             for k in kinds))
    return "\n".join(lines)


def want_gpu(choice: str) -> bool:
    """Whether to measure the GPU rows: 'auto' skips a CPU-emulated adapter (and says so)."""
    if choice != "auto":
        return choice == "on"
    from dense_perception.core.backends.gpu_runner import GpuProcessRunner, GpuUnavailableError
    try:
        probe = GpuProcessRunner(str(Path(__file__).parents[2] / "models"
                                     / "test_da3_small.tflite"))
    except GpuUnavailableError as exc:
        print(f"  GPU rows skipped: no GPU ({exc})")
        return False
    probe.close()
    if probe.adapter is not None and probe.adapter.is_software:
        print(f"  GPU rows skipped: the adapter is a CPU emulation ({probe.adapter.describe()});"
              " --gpu on measures it anyway")
        return False
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="dense_perception benchmark")
    parser.add_argument("--models", default=".cache/bench_models",
                        help="folder with da3_class.tflite and tipsv2_class.tflite")
    parser.add_argument("--threads", type=int, default=default_num_threads())
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--node-seconds", type=float, default=100.0,
                        help="node time over all A/B rounds (the bare parts come on top)")
    parser.add_argument("--rounds", type=int, default=5, help="node / bare A/B rounds")
    parser.add_argument("--only", choices=sorted(MODEL_SPECS), action="append")
    parser.add_argument("--out", default="bench_out")
    parser.add_argument("--gpu", choices=("auto", "on", "off"), default="auto",
                        help="GPU rows: auto = when a GPU adapter that is not a CPU emulation "
                        "is there (lavapipe needs minutes per invoke of these models)")
    parser.add_argument("--gpu-precision", choices=("fp16", "fp32"), default="fp16")
    parser.add_argument("--npu", choices=("auto", "on", "off"), default="auto",
                        help="NPU rows (backend npu, OpenVINO): auto = when OpenVINO is installed")
    parser.add_argument("--openvino-device", choices=("NPU", "GPU", "CPU"), default="CPU",
                        help="the NPU rows' OpenVINO device (CPU: the test bed)")
    args = parser.parse_args(argv)
    results: dict = {"machine": {**machine(), "threads": args.threads}}
    Path(args.out).mkdir(parents=True, exist_ok=True)
    for kind in args.only or ["da3", "tipsv2"]:
        model = str(Path(args.models) / f"{kind}_class.tflite")
        print(f"== {kind}-class model {model}, {args.threads} threads")
        r = bench_core(kind, model, args.threads, args.runs)
        r["bare_invoke_hz"] = round(1000.0 / r["bare_invoke_ms"], 4)
        r.update(bench_rectify(model, args.threads, args.runs))
        r.update(bench_load(model, args.threads, Path(args.out)))
        r.update(bench_node(model, args.threads, args.node_seconds, args.runs, args.rounds))
        r["node_vs_quiet_bare"] = round(r["node_output_hz"] / r["bare_invoke_hz"], 3)
        # Several cameras, one model: memory (1-3 cameras vs separate nodes, the weight cache)
        # and each camera's rate with two cameras at 30 fps (tools/bench/cameras.py).
        r.update(load_memory(model, args.threads, Path(args.out)))
        r.update(node_memory(model, args.threads))
        r.update(camera_rates(model, args.threads))
        if want_gpu(args.gpu):
            r.update(bench_gpu(kind, model, args.runs, args.node_seconds, args.rounds,
                               args.gpu_precision))
        if args.npu == "on" or (args.npu == "auto" and find_spec("openvino") is not None):
            r.update(bench_npu(model, args.threads, args.runs, args.openvino_device,
                               Path(args.out)))
        results[kind] = r
        print(json.dumps(r, indent=1))
    results["pointcloud"] = bench_pointcloud(args.runs)
    if "da3" in results:
        results["da3"].update(bench_metric_scale(max(args.runs, 20)))
    for kind in results:
        if kind not in ("machine", "pointcloud"):
            results[kind].update(results["pointcloud"])
    del results["pointcloud"]
    out = Path(args.out)
    (out / "results.json").write_text(json.dumps(results, indent=2))
    text = table(results)
    (out / "table.txt").write_text(text + "\n")
    print(f"\nmachine: {results['machine']}\n{text}\nwritten {out / 'results.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
