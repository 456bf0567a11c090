"""``make bench``: side-by-side speed figures on DA3-class and TIPSv2-class models.

Every figure is measured in one run on this machine, with the same thread count, so the
ratios between them mean something even on a noisy machine. Writes ``bench_out/results.json``
and prints a table. The models come from ``tools.bench.models`` (built with torch in
``.venv-bench``, random weights, fp16 like the real files).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from importlib.util import find_spec
from pathlib import Path
from typing import Callable

import numpy as np

from dense_perception.core.geometry.camera_model import CameraModel
from dense_perception.core.geometry.intrinsics import Intrinsics
from dense_perception.core.model.specs import MODEL_SPECS
from dense_perception.core.pipeline import DensePipeline, load_pipeline
from dense_perception.core.frame_data import Request
from dense_perception.core.settings.table import Settings
from dense_perception.core.geometry.pointcloud import depth_to_points
from tools.common.reference import reference_points
from tools.bench.cameras import camera_rates, load_memory, node_memory
from dense_perception.core.backends.runner import default_num_threads, litert_version
from dense_perception.core.backends.runner_base import CompiledModelRunner, InterpreterRunner
from dense_perception.core.timing import StageTimer
from tools.common.scene import make_sample_scene, scene_intrinsics

FRAME_SIZE = (1280, 720)


def median_ms(fn: Callable[[], object], runs: int, warmup: int = 1) -> float:
    """Median wall time of ``fn`` in milliseconds."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000.0)
    return statistics.median(times)


def interleaved_ms(fns: dict[str, Callable[[], object]], runs: int,
                   after_warmup: Callable[[], object] = lambda: None) -> dict[str, float]:
    """Median ms of several functions run in turn (A B A B ...), so drift hits all alike."""
    for fn in fns.values():
        fn()
    after_warmup()
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(runs):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            times[name].append((time.perf_counter() - start) * 1000.0)
    return {name: statistics.median(t) for name, t in times.items()}


def card_snippet(kind: str, model_path: str, threads: int) -> Callable[[np.ndarray], object]:
    """The model card's own Python usage, as a function of an RGB frame."""
    from PIL import Image as PILImage
    spec = MODEL_SPECS[kind]
    mean = np.array(spec.mean, np.float32)
    std = np.array(spec.std, np.float32)
    size = (spec.input_width, spec.input_height)
    if kind == "da3":
        from ai_edge_litert.interpreter import Interpreter
        it = Interpreter(model_path=model_path, num_threads=threads)
        it.allocate_tensors()
        inp, out = it.get_input_details()[0]["index"], it.get_output_details()[0]["index"]

        def run_da3(frame: np.ndarray) -> object:
            img = PILImage.fromarray(frame).convert("RGB").resize(size)
            x = ((np.asarray(img, np.float32) / 255 - mean) / std).transpose(2, 0, 1)[None]
            it.set_tensor(inp, x)
            it.invoke()
            d = it.get_tensor(out)[0, 0]
            return (d - d.min()) / (d.max() - d.min())
        return run_da3

    # TIPSv2's card uses the CompiledModel API.
    from ai_edge_litert.compiled_model import CompiledModel, CpuOptions, HardwareAccelerator, Options
    model = CompiledModel.from_file(model_path, options=Options(
        HardwareAccelerator.CPU, cpu_options=CpuOptions(num_threads=threads)))
    inputs, outputs = model.create_input_buffers(0), model.create_output_buffers(0)

    def run_tips(frame: np.ndarray) -> object:
        img = PILImage.fromarray(frame).convert("RGB").resize(size)
        image = (np.asarray(img, np.float32) / 255).transpose(2, 0, 1)[None]
        inputs[0].write(np.ascontiguousarray(image, np.float32))
        model.run_by_index(0, inputs, outputs)
        depth = outputs[0].read(448 * 448, np.float32).reshape(448, 448)
        normals = outputs[1].read(3 * 448 * 448, np.float32).reshape(3, 448, 448)
        seg = outputs[2].read(150 * 256 * 256, np.float32).reshape(150, 256, 256)
        return depth, normals, seg.argmax(0)
    return run_tips


def bench_core(kind: str, model_path: str, threads: int, runs: int) -> dict:
    """Bare invoke (both APIs), the card's snippet and our pipeline on one 1280x720 frame, all
    four interleaved in the same rounds, so their differences are not the machine's drift."""
    frame = make_sample_scene(*FRAME_SIZE)
    k = scene_intrinsics(*FRAME_SIZE)
    # DA3's points need metres: a fixed (asserted) scale keeps the point cloud in the figures.
    pipeline = load_pipeline(model_path,
                             Settings(model_type=kind, backend="cpu", num_threads=threads,
                                      points_stride=1, depth_scale_source="fixed"),
                             log=lambda _: None)
    request = Request.everything()
    fns = {"Interpreter": InterpreterRunner(model_path, threads).run}
    try:
        fns["CompiledModel"] = CompiledModelRunner(model_path, "cpu", threads).run
    except RuntimeError as exc:  # ai-edge-litert 1.4 has no CompiledModel options
        print(f"  CompiledModel unavailable: {exc}")
    snippet = card_snippet(kind, model_path, threads)
    fns["card"] = lambda: snippet(frame)
    fns["pipeline"] = lambda: pipeline.process(frame, "rgb8", k, request)
    ms = interleaved_ms(fns, runs, after_warmup=pipeline.timer.clear)
    del fns
    # Per-stage figures from the pipeline's own timer, over the timed rounds.
    stages = {name: round(s.mean_ms, 2) for name, s in pipeline.timer.stats().items()}
    bare = {api: ms[api] for api in ("Interpreter", "CompiledModel") if api in ms}
    # "fit" is a part of "preprocess", "scale" of "postprocess", "labels_confidence" of
    # "extract": not counted twice.
    host_stage_ms = sum(v for n, v in stages.items()
                        if n not in ("inference", "fit", "scale", "labels_confidence"))
    return {
        "bare_invoke_ms": round(bare["Interpreter"], 1),
        "bare_invoke_ms_by_api": {name: round(v, 1) for name, v in bare.items()},
        "faster_api": min(bare, key=bare.get),
        "card_snippet_frame_ms": round(ms["card"], 1),
        "pipeline_frame_ms": round(ms["pipeline"], 1),
        "host_overhead_ms": round(ms["pipeline"] - bare["Interpreter"], 1),
        "host_overhead_pct": round(100 * (ms["pipeline"] / bare["Interpreter"] - 1), 2),
        "stage_ms": stages,
        "host_stage_ms": round(host_stage_ms, 1),
        "host_stage_pct": round(100 * host_stage_ms / stages["inference"], 2),
        "host_ceiling_hz": round(1000.0 / host_stage_ms, 1),
    }


def bench_rectify(model_path: str, threads: int, runs: int) -> dict:
    """What rectifying a raw, distorted 1280x720 frame costs per frame: the pipeline's own "fit"
    stage (crop + resize for a pinhole camera; one cached remap that also undistorts for a
    plumb_bob camera with the same K), the two cameras in alternating rounds."""
    frame = make_sample_scene(*FRAME_SIZE)
    pinhole = CameraModel.pinhole(scene_intrinsics(*FRAME_SIZE))
    distorted = CameraModel(width=pinhole.width, height=pinhole.height, k=pinhole.k,
                            d=(-0.35, 0.12, 0.0, 0.0, 0.0), p=pinhole.p)
    base = load_pipeline(model_path,
                         Settings(model_type="auto", backend="cpu", num_threads=threads),
                         log=lambda _: None)
    pipes = {name: DensePipeline(base.runner, base.spec, base.config, StageTimer())
             for name in ("pinhole", "distorted")}
    cameras = {"pinhole": pinhole, "distorted": distorted}
    fns = {name: (lambda n=name: pipes[n].infer(frame, "rgb8", Request(), cameras[n]))
           for name in pipes}
    interleaved_ms(fns, runs, after_warmup=lambda: [p.timer.clear() for p in pipes.values()])
    fit = {name: p.timer.stats()["fit"].mean_ms for name, p in pipes.items()}
    return {"fit_ms": round(fit["pinhole"], 2), "rectify_fit_ms": round(fit["distorted"], 2),
            "rectify_cost_ms": round(fit["distorted"] - fit["pinhole"], 2)}


def bench_pointcloud(runs: int) -> dict:
    """Vectorised back-projection vs a straightforward per-point loop, 896x504 depth."""
    rng = np.random.default_rng(0)
    depth = rng.uniform(0.5, 10.0, (504, 896)).astype(np.float32)
    k = Intrinsics.from_hfov(896, 504, 70.0)
    fast = median_ms(lambda: depth_to_points(depth, k), runs)
    slow = median_ms(lambda: reference_points(depth, k), 1, warmup=0)
    return {"pointcloud_ms": round(fast, 2), "pointcloud_reference_ms": round(slow, 1),
            "pointcloud_speedup": round(slow / fast, 1)}


def bench_metric_scale(runs: int) -> dict:
    """Per-frame cost of finding DA3's metric scale: the pipeline's own 'scale' stage on the
    504x896 grid, for each source, in interleaved rounds. The bundled DA3 test model sees a
    painted floor + wall + box scene (tools.common.metric_scene), so the estimators do their real work
    (the cost does not depend on the network, only on the grid and the reference's size)."""
    from dense_perception.core.scale.metric_scale import DepthScaler, ScaleConfig
    from tools.common.metric_scene import HEIGHT, WIDTH, Scene, paint
    scene = Scene(height=0.6, pitch_deg=20.0, wall=1.6, box=(-0.3, 0.1, 0.8, 1.0, 0.2))
    z, _ = scene.depth_and_surface()
    frame = paint(z / 0.35)
    k = Intrinsics(scene.fx, scene.fx, scene.cx, scene.cy, WIDTH, HEIGHT)
    rng = np.random.default_rng(0)
    dense = z[::2, ::2].astype(np.float32)  # a 252x448 depth camera over the same view
    sparse = np.full(z.shape, np.nan, np.float32)  # 1 % of the pixels, like a projected scan
    pick = rng.choice(z.size, z.size // 100, replace=False)
    sparse.ravel()[pick] = z.ravel()[pick]
    model = str(Path(__file__).resolve().parents[2] / "models" / "test_da3_small.tflite")
    cases = {"ground_plane": ("ground_plane", None), "reference_dense": ("reference_depth", dense),
             "reference_sparse": ("reference_depth", sparse), "fixed": ("fixed", None)}
    runs_by_case = {}
    for name, (source, reference) in cases.items():
        pipeline = load_pipeline(model,
                                 Settings(model_type="da3", backend="cpu", num_threads=1,
                                          depth_scale_source=source, points_stride=2),
                                 log=lambda _: None)
        scaler = DepthScaler(ScaleConfig(source, camera_height=scene.height)) \
            if source != "fixed" else None
        raw = pipeline.infer(frame, "rgb8", Request(depth=True, points=True))
        clock = iter(range(10**6))

        def finish(pipeline=pipeline, raw=raw, scaler=scaler, reference=reference):
            return pipeline.finish(raw, k, scaler, 0.1 * next(clock), reference)
        runs_by_case[name] = (pipeline, finish)
    interleaved_ms({n: f for n, (_, f) in runs_by_case.items()}, runs,
                   after_warmup=lambda: [p.timer.clear() for p, _ in runs_by_case.values()])
    out = {f"scale_{name}_ms": round(p.timer.stats()["scale"].mean_ms, 2)
           for name, (p, _) in runs_by_case.items()}
    out["postprocess_with_ground_plane_ms"] = round(
        runs_by_case["ground_plane"][0].timer.stats()["postprocess"].mean_ms, 2)
    return out


LOAD_PROBE = """
import sys, time
from dense_perception.core.backends.runner_base import InterpreterRunner, CompiledModelRunner
path, mode, threads, cache = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
start = time.perf_counter()
if mode == "interpreter":
    runner = InterpreterRunner(path, threads)
else:
    runner = CompiledModelRunner(path, "cpu", threads, weight_cache=cache)
loaded = time.perf_counter()
runner.run()
print(f"{loaded - start:.3f} {time.perf_counter() - loaded:.3f}")
"""


def bench_load(model_path: str, threads: int, cache_dir: Path) -> dict:
    """Model load (+ first invoke) in fresh processes: the Interpreter (what the node uses) vs
    CompiledModel with XNNPACK's weight cache, cold (building the cache) and warm."""
    cache = cache_dir / (Path(model_path).stem + ".xnnpack_cache")
    cache.unlink(missing_ok=True)
    results = {}
    for label, mode in (("interpreter", "interpreter"), ("weight_cache_cold", "cache"),
                        ("weight_cache_warm", "cache")):
        proc = subprocess.run([sys.executable, "-c", LOAD_PROBE, model_path, mode,
                               str(threads), str(cache)], capture_output=True, text=True,
                              env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])})
        if proc.returncode != 0:
            results[f"load_s_{label}"] = None
            continue
        load_s, first_s = (float(v) for v in proc.stdout.split()[-2:])
        results[f"load_s_{label}"] = round(load_s, 2)
        results[f"first_invoke_s_{label}"] = round(first_s, 2)
    cache.unlink(missing_ok=True)
    return results


def bench_node(model_path: str, threads: int, seconds: float, runs: int, rounds: int) -> dict:
    """The node as its own process over DDS, fed 30 fps 1280x720, every output subscribed,
    in A/B rounds with a bare invoke in this process under the very same feed (the node idle:
    lazy, nobody watches its outputs). The feed itself costs CPU on a small machine; comparing
    under the same feed leaves only what the node adds."""
    from tools.bench.loadgen import run_stream
    runner = InterpreterRunner(model_path, threads)
    runner.run()
    cmd = ["-p", f"model_path:={model_path}", "-p", "backend:=cpu",
           "-p", f"num_threads:={threads}",
           "-p", "depth_scale_source:=fixed"]  # the node's --ros-args; DA3: asserted metres
    first = run_stream(cmd, fps=30.0, seconds=seconds, subscribe_all=True,
                       bare=lambda: median_ms(runner.run, runs, warmup=0), rounds=rounds)
    # A second start, for the load time with whatever LiteRT caches between runs.
    second = run_stream(cmd, fps=30.0, seconds=3.0, subscribe_all=True)
    node_hz = statistics.median(first.node_hz_rounds)
    bare_ms = statistics.median(first.bare_ms_rounds)
    ratios = [hz * ms / 1000.0 for hz, ms in zip(first.node_hz_rounds, first.bare_ms_rounds)]
    stage_means = {k.split(" mean")[0]: float(v) for k, v in first.diagnostics.items()
                   if k.endswith("mean (ms)") and v != "-"}
    return {
        "node_output_hz": round(node_hz, 4),
        "bare_invoke_ms_under_feed": round(bare_ms, 1),
        "bare_invoke_hz_under_feed": round(1000.0 / bare_ms, 4),
        "node_vs_bare": round(statistics.median(ratios), 3),
        "node_vs_bare_rounds": [round(r, 3) for r in ratios],
        "node_frames_in": first.frames_in,
        "node_frames_dropped": int(first.diagnostics.get("frames dropped", -1)),
        "node_stage_mean_ms": stage_means,
        "node_period_vs_own_inference": round(
            1000.0 / node_hz / stage_means["inference"], 3) if stage_means.get("inference")
        else None,
        "first_output_s": round(first.first_output_s, 2),
        "first_output_second_start_s": round(second.first_output_s, 2),
        "rss_mb": round(first.rss_at(seconds / 2), 1),
        "output_age_p50_s": round(float(np.median(first.ages_s)), 3),
    }


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
        proc = subprocess.run([sys.executable, "-c", NPU_LOAD_PROBE, model_path, device,
                               cache_arg], capture_output=True, text=True,
                              env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])})
        if proc.returncode != 0:
            result[f"npu_load_s_{label}"] = None
            continue
        load_s, first_s = (float(v) for v in proc.stdout.split()[-2:])
        result[f"npu_load_s_{label}"] = round(load_s, 2)
        result[f"npu_first_invoke_s_{label}"] = round(first_s, 2)
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
