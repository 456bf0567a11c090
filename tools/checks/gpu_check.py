# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""GPU vs CPU through the whole pipeline, and bare GPU invoke: shared by ``make bench``
(tools/bench/accelerators.py) and the device check (tools/checks/device_gpu_check.sh).

Fidelity compares the products the node publishes (depth, normals, segmentation labels) for the
same frames on backend ``gpu`` and backend ``cpu`` (XNNPACK, the reference), beside the model
cards' own GPU-vs-CPU figures.
"""

from __future__ import annotations

import statistics
import time
from typing import Any, Sequence

import numpy as np

from dense_perception.core.backends.gpu_runner import GpuProcessRunner
from dense_perception.core.pipeline import load_pipeline
from dense_perception.core.frame_data import Request
from dense_perception.core.settings.table import Settings

# The cards' GPU-vs-CPU agreement (shared/model-cards): DA3-Small on an Adreno/Mali GPU vs
# XNNPACK, TIPSv2-B14-DPT likewise.
CARD_FIDELITY = {
    "da3": {"depth_cosine": 0.99993, "depth_pearson": 0.99975},
    "tipsv2": {"depth_pearson": 0.99986, "normals_pearson": 0.99990, "seg_argmax_agreement": 0.993},
}


def pearson(a: np.ndarray, b: np.ndarray) -> float:
    """Pearson correlation over the pixels finite in both."""
    ok = np.isfinite(a) & np.isfinite(b)
    return float(np.corrcoef(a[ok].ravel(), b[ok].ravel())[0, 1])


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    """Cosine similarity of the two maps as vectors (finite pixels)."""
    ok = np.isfinite(a) & np.isfinite(b)
    x, y = a[ok].astype(np.float64).ravel(), b[ok].astype(np.float64).ravel()
    return float(x @ y / (np.linalg.norm(x) * np.linalg.norm(y)))


def compare_products(gpu: Sequence[Any], cpu: Sequence[Any]) -> dict[str, float]:
    """Agreement of two lists of pipeline Products for the same frames."""
    result: dict[str, float] = {}
    if gpu[0].depth is not None:
        g = np.stack([p.depth for p in gpu])
        c = np.stack([p.depth for p in cpu])
        result["depth_pearson"] = pearson(g, c)
        result["depth_cosine"] = cosine(g, c)
    if gpu[0].normals is not None:
        result["normals_pearson"] = pearson(np.stack([p.normals for p in gpu]),
                                            np.stack([p.normals for p in cpu]))
    if gpu[0].labels is not None:
        g = np.stack([p.labels for p in gpu])
        c = np.stack([p.labels for p in cpu])
        seen = c != 255
        result["seg_argmax_agreement"] = float(np.mean(g[seen] == c[seen]))
    return result


def pipeline_fidelity(model_path: str, frames: Sequence[np.ndarray], encoding: str = "rgb8",
                      gpu_precision: str = "fp16") -> dict[str, Any]:
    """Run ``frames`` through the pipeline on the GPU and on XNNPACK; their agreement, the
    adapter, and the card's figures for this model kind."""
    request = Request(depth=True, normals=True, labels=True)
    quiet = lambda _: None  # noqa: E731
    gpu = load_pipeline(model_path, Settings(backend="gpu", gpu_precision=gpu_precision),
                        log=quiet, warn=quiet)
    cpu = load_pipeline(model_path, Settings(backend="cpu"), log=quiet)
    try:
        products_gpu = [gpu.process(f, encoding, request=request) for f in frames]
        products_cpu = [cpu.process(f, encoding, request=request) for f in frames]
    finally:
        gpu.runner.close()
    adapter = gpu.runner.adapter
    return {"model": gpu.spec.kind, "gpu_precision": gpu_precision, "frames": len(frames),
            "adapter": adapter.describe() if adapter else "not reported",
            "ours": {k: round(v, 6) for k, v in compare_products(products_gpu,
                                                                  products_cpu).items()},
            "card": CARD_FIDELITY.get(gpu.spec.kind, {})}


def bare_gpu_invoke(model_path: str, runs: int = 5, gpu_precision: str = "fp16"
                    ) -> dict[str, Any]:
    """Median time of the worker's own run + read (the GPU's invoke, no host stages) and of
    one round trip from this process, with the adapter named."""
    runner = GpuProcessRunner(model_path, gpu_precision)
    try:
        runner.input_buffer()[...] = np.random.default_rng(0).uniform(
            0, 1, runner.input_shapes[0])
        runner.run()  # warm-up: first-run shader/pipeline set-up
        worker, round_trip = [], []
        for _ in range(runs):
            start = time.perf_counter()
            runner.run()
            round_trip.append((time.perf_counter() - start) * 1000.0)
            worker.append(runner.last_invoke_ms)
    finally:
        runner.close()
    adapter = runner.adapter
    return {"adapter": adapter.describe() if adapter else "not reported",
            "software_adapter": bool(adapter and adapter.is_software),
            "fully_accelerated": runner.fully_accelerated, "gpu_precision": gpu_precision,
            "runs": runs, "invoke_ms": round(statistics.median(worker), 2),
            "round_trip_ms": round(statistics.median(round_trip), 2)}


def two_stage_rate(model_path: str, seconds: float = 20.0, fps: float = 30.0,
                   gpu_precision: str = "fp16") -> dict[str, Any]:
    """The node's worker structure without ROS (for machines without rclpy): frames at ``fps``
    into a newest-wins slot, an inference thread, a post-processing thread (every product);
    output rate vs the bare GPU invoke rate measured right after under the same feed."""
    import threading
    from dense_perception.core.scheduling.newest_slots import NewestSlots
    from tools.common.scene import make_sample_scene, scene_intrinsics
    frame = make_sample_scene()
    k = scene_intrinsics()
    pipeline = load_pipeline(model_path, Settings(backend="gpu", gpu_precision=gpu_precision),
                             log=lambda _: None, warn=lambda _: None)
    request = Request.everything()
    frames: NewestSlots[np.ndarray] = NewestSlots()
    raws: NewestSlots[Any] = NewestSlots()
    stop = threading.Event()
    outputs: list[float] = []

    def feed() -> None:
        while not stop.wait(1.0 / fps):
            frames.put(frame)

    def infer() -> None:
        while not stop.is_set():
            item = frames.take(0.1)
            if item is not None:
                raws.put(pipeline.infer(item, "rgb8", request))

    def finish() -> None:
        while not stop.is_set():
            raw = raws.take(0.1)
            if raw is not None:
                pipeline.finish(raw, k)
                outputs.append(time.perf_counter())

    threads = [threading.Thread(target=f, daemon=True) for f in (feed, infer, finish)]
    try:
        for t in threads:
            t.start()
        time.sleep(seconds)
        stop.set()
        for t in threads:
            t.join(timeout=30)
        window = [t for t in outputs if t > outputs[0]] if outputs else []
        rate = (len(window) / (window[-1] - outputs[0])) if len(window) > 1 else 0.0
        # The bare invoke under the same feed: the feeder alone keeps running meanwhile.
        stop.clear()
        feeder = threading.Thread(target=feed, daemon=True)
        feeder.start()
        times = []
        for _ in range(5):
            start = time.perf_counter()
            pipeline.runner.run()
            times.append((time.perf_counter() - start) * 1000.0)
        stop.set()
        feeder.join()
    finally:
        pipeline.runner.close()
    bare_ms = statistics.median(times)
    return {"two_stage_output_hz": round(rate, 3), "bare_invoke_ms_under_feed": round(bare_ms, 2),
            "two_stage_vs_bare": round(rate * bare_ms / 1000.0, 3),
            "stage_ms": {n: round(st.mean_ms, 2) for n, st in pipeline.timer.stats().items()}}


def _main() -> None:
    import argparse
    import json
    from tools.common.scene import make_sample_scene
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="+")
    parser.add_argument("--precision", default="fp16", choices=("fp16", "fp32"))
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--rate-seconds", type=float, default=0.0,
                        help="also the node's two-stage structure (no ROS) for this long")
    args = parser.parse_args()
    scene = make_sample_scene()
    frames = [scene, np.ascontiguousarray(scene[:, ::-1])]
    for model in args.models:
        result = {"model_path": model,
                  "bare": bare_gpu_invoke(model, args.runs, args.precision),
                  "fidelity": pipeline_fidelity(model, frames, gpu_precision=args.precision)}
        if args.rate_seconds > 0:
            result["two_stage"] = two_stage_rate(model, args.rate_seconds,
                                                 gpu_precision=args.precision)
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    _main()
