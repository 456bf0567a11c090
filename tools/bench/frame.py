# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""``make bench``'s in-process rows on one frame: bare invoke (both LiteRT APIs), the model
card's snippet and our pipeline side by side, rectification, the point cloud, the metric scale
estimators, and model load in fresh processes."""

from __future__ import annotations

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
from dense_perception.core.backends.runner_base import CompiledModelRunner, InterpreterRunner
from dense_perception.core.timing import StageTimer
from tools.bench.timing import fresh_process_load, interleaved_ms, median_ms
from tools.common.reference import reference_points
from tools.common.scene import make_sample_scene, scene_intrinsics

FRAME_SIZE = (1280, 720)

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
    painted floor + wall + box scene (tools.common.metric_scene), so the estimators do their
    real work (the cost does not depend on the network, only on the grid and the reference's
    size)."""
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
        results.update(fresh_process_load(LOAD_PROBE, [model_path, mode, str(threads), str(cache)],
                                          f"load_s_{label}", f"first_invoke_s_{label}"))
    cache.unlink(missing_ok=True)
    return results
