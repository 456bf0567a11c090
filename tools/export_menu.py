"""The DA3-Small export menu for CPUs: smaller inputs and int8 weights, speed and fidelity side
by side.

``build`` (torch, ``.venv-bench``) writes, with random weights (seed 0), portrait 9:16 like the
published file:

* ``da3_gpu_504x896_fp16.tflite``: the published file's graph and arithmetic
  (``export-da3 --gpu-clean --fp16`` at 504x896); the speed reference;
* ``da3_cpu_504x896_fp32.tflite``: the fidelity reference (CPU rewrites only, all exact);
* CPU builds at long side 896, 644 and 518 with fp16 and dynamic-range int8 weights;
* ``attention_core_504x896.tflite``: one fp32 attention core of the 504x896 model (the part
  weights-only quantisation cannot touch), timed x 12 blocks as the full-size speed limit.

``--checkpoint`` builds the menu from the real weights, where they can be had.

``measure`` (LiteRT only: runs on a Pi 5 as well) loads every file, times bare invokes in
interleaved rounds (A B C ... A B C ..., so the machine's drift hits all alike), and reports
file size and the correlation of each output with the fp32 full-size export on two inputs:

* ``noise``: N(0, 1) at the model's size (same-size variants only). With random weights this
  measures arithmetic (weights' precision, kernels), not perception;
* ``scene``: the exporter's smooth synthetic scene at 504x896, area-resized to the variant's
  input, its depth resized back (bilinear) to 504x896: arithmetic plus resolution.

    .venv-bench/bin/python -m tools.export_menu build --out .cache/bench_models/menu
    .venv/bin/python -m tools.export_menu measure --models .cache/bench_models/menu
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

PUBLISHED = "da3_gpu_504x896_fp16.tflite"
# One attention core (softmax(Q K^T / 8) V) of DA3-Small's ViT-S at 504x896: 6 heads of 64 over
# the 36 x 64 patch tokens and the class token. The model runs it in each of its 12 blocks.
ATTENTION = "attention_core_504x896.tflite"
ATTENTION_SHAPE = (1, 6, 1 + 36 * 64, 3 * 64)  # q | k | v side by side
VIT_BLOCKS = 12
REFERENCE = "da3_cpu_504x896_fp32.tflite"
LONG_SIDES = (896, 644, 518)
CARD_PI5_MS = 4201.0  # DA3-Small card: Raspberry Pi 5, XNNPACK, 4 threads, published file


@dataclass(frozen=True)
class Variant:
    """One file of the menu."""

    file: str
    build: str       # "gpu" (GPU-clean rewrites) or "cpu"
    width: int
    height: int
    weights: str     # fp32 | fp16 | int8


def portrait_size(long_side: int) -> tuple[int, int]:
    """(width, height) of a 9:16 portrait model with this long side (multiples of 14)."""
    from dense_perception.export.sizes import size_for_aspect
    return size_for_aspect(9 / 16, long_side)


def menu() -> list[Variant]:
    """The files, published graph first, then the fp32 reference, then the CPU variants."""
    out = [Variant(PUBLISHED, "gpu", 504, 896, "fp16"), Variant(REFERENCE, "cpu", 504, 896, "fp32")]
    for side in LONG_SIDES:
        w, h = portrait_size(side)
        out += [Variant(f"da3_cpu_{w}x{h}_{dt}.tflite", "cpu", w, h, dt) for dt in ("fp16", "int8")]
    return out


# ---- build (torch) ----------------------------------------------------------------------------

def build(out: Path, checkpoint: str | None = None) -> None:
    """Convert each (build, size) once and write its weight variants (skips existing files).
    ``checkpoint``: the real DA3-Small weights instead of random ones (then the scene
    correlations measure what resolution costs in depth, not a random network's response)."""
    import torch

    from dense_perception.export.convert import convert, with_weights, write_atomic
    from dense_perception.export.fidelity import fidelity_inputs
    from dense_perception.export.graph import build_export_model

    out.mkdir(parents=True, exist_ok=True)
    groups: dict[tuple[str, int, int], list[Variant]] = {}
    for v in menu():
        groups.setdefault((v.build, v.width, v.height), []).append(v)
    for (kind, w, h), variants in groups.items():
        todo = [v for v in variants if not (out / v.file).exists()]
        if not todo:
            continue
        t0 = time.perf_counter()
        model = build_export_model(w, h, seed=0, gpu_clean=kind == "gpu",
                                   checkpoint=checkpoint)[0]
        sample = torch.from_numpy(fidelity_inputs(w, h, 0)["scene"])
        fp32 = convert(model, sample)
        for v in todo:
            write_atomic(out / v.file, with_weights(fp32, v.weights))
        print(f"built {', '.join(v.file for v in todo)} in {time.perf_counter() - t0:.0f} s",
              flush=True)
    if not (out / ATTENTION).exists():
        write_atomic(out / ATTENTION, convert(attention_core(), torch.zeros(ATTENTION_SHAPE)))


def attention_core() -> "torch.nn.Module":
    """One attention core as a module: [1, heads, tokens, 3 x 64] (q | k | v) -> [.., 64]."""
    import torch.nn.functional as F
    from torch import nn

    class AttentionCore(nn.Module):
        def forward(self, qkv):
            d = ATTENTION_SHAPE[-1] // 3
            return F.scaled_dot_product_attention(qkv[..., :d], qkv[..., d:2 * d],
                                                  qkv[..., 2 * d:])
    return AttentionCore()


# ---- measure (LiteRT only) --------------------------------------------------------------------

def scene_rgb(width: int = 504, height: int = 896) -> np.ndarray:
    """The exporter's synthetic scene as uint8 RGB (denormalised from its model input)."""
    from dense_perception.export.common import IMAGENET_MEAN, IMAGENET_STD
    from dense_perception.export.fidelity import fidelity_inputs

    x = fidelity_inputs(width, height, seed=0)["scene"][0].transpose(1, 2, 0)
    rgb = (x * np.array(IMAGENET_STD) + np.array(IMAGENET_MEAN)) * 255.0
    return np.clip(np.rint(rgb), 0, 255).astype(np.uint8)


def measure(folder: Path, threads: int, rounds: int, fp16_arith: bool = True) -> list[dict]:
    """One row per menu file present (and, on CPUs with native fp16, one more per file with
    XNNPACK's fp16 arithmetic): size, bare invoke (interleaved rounds), correlations."""
    import cv2

    from dense_perception.core.cpu_precision import FP16_XNNPACK_FLAGS, native_fp16
    from dense_perception.core.runner import CompiledModelRunner, InterpreterRunner
    from dense_perception.export.fidelity import compare, normalise_rgb

    variants = [v for v in menu() if (folder / v.file).exists()]
    if not any(v.file == REFERENCE for v in variants):
        raise SystemExit(f"{folder / REFERENCE} is missing: run `tools.export_menu build` first "
                         "(make bench-menu), or copy the folder from a machine that did")
    ariths = ["fp32"] + (["fp16"] if fp16_arith and native_fp16()[0] else [])
    runners = {}
    for v in variants:
        for arith in ariths:
            path = str(folder / v.file)
            runners[(v.file, arith)] = (InterpreterRunner(path, threads) if arith == "fp32" else
                                        CompiledModelRunner(path, "cpu", threads, cpu_options={
                                            "xnnpack_flags": FP16_XNNPACK_FLAGS}))
    rgb = scene_rgb()
    noise = np.random.default_rng(0).normal(0, 1, (1, 3, 896, 504)).astype(np.float32)

    def run(key: tuple[str, str], x: np.ndarray) -> np.ndarray:
        runners[key].input_buffer()[...] = x
        return np.array(runners[key].run()[0][0, 0], copy=True)

    ref_scene = run((REFERENCE, "fp32"), normalise_rgb(rgb))
    ref_noise = run((REFERENCE, "fp32"), noise)
    rows = []
    for v in variants:
        small = normalise_rgb(cv2.resize(rgb, (v.width, v.height), interpolation=cv2.INTER_AREA))
        same = (v.width, v.height) == (504, 896)
        for arith in ariths:
            key = (v.file, arith)
            up = cv2.resize(run(key, small), (504, 896), interpolation=cv2.INTER_LINEAR)
            rows.append({"file": v.file, "arith": arith, "build": v.build,
                         "input": f"{v.width}x{v.height}", "weights": v.weights,
                         "size_mb": round((folder / v.file).stat().st_size / 1e6, 1),
                         "corr_scene": round(compare(ref_scene, up)["corr"], 5),
                         "corr_noise": round(compare(ref_noise, run(key, noise))["corr"], 5)
                         if same else None})
    if (folder / ATTENTION).exists():  # the fp32 attention that int8 weights leave as it is
        runners[(ATTENTION, "fp32")] = InterpreterRunner(str(folder / ATTENTION), threads)
    # Bare invokes, interleaved: round r runs every runner once (round 0 warms up).
    times: dict[tuple[str, str], list[float]] = {key: [] for key in runners}
    for r in range(rounds + 1):
        for key, runner in runners.items():
            t0 = time.perf_counter()
            runner.run()
            if r:
                times[key].append((time.perf_counter() - t0) * 1000.0)
    published = (statistics.median(times[(PUBLISHED, "fp32")])
                 if (PUBLISHED, "fp32") in times else None)
    for row in rows:
        ms = statistics.median(times[(row["file"], row["arith"])])
        row["invoke_ms"] = round(ms, 1)
        if published:
            row["speed_vs_published"] = round(published / ms, 2)
            row["pi5_predicted_s"] = round(CARD_PI5_MS / 1000.0 * ms / published, 2)
    if (ATTENTION, "fp32") in times and published:
        floor = VIT_BLOCKS * statistics.median(times[(ATTENTION, "fp32")])
        rows.append({"file": ATTENTION, "arith": "fp32", "attention_ms": round(floor, 1),
                     "blocks": VIT_BLOCKS, "max_speed_full_size": round(published / floor, 2)})
    return rows


def table(rows: list[dict]) -> str:
    """The menu as a plain-text table."""
    head = (f"{'file':32} {'arith':>5} {'input':>8} {'weights':>7} {'MB':>6} {'invoke ms':>10} "
            f"{'x publ.':>8} {'corr scene':>11} {'corr noise':>11} {'Pi 5 s (pred.)':>15}")
    lines = [head]
    floor = next((r for r in rows if r["file"] == ATTENTION), None)
    for r in rows:
        if r is floor:
            continue
        noise = f"{r['corr_noise']:.5f}" if r.get("corr_noise") is not None else "-"
        lines.append(f"{r['file']:32} {r['arith']:>5} {r['input']:>8} {r['weights']:>7} {r['size_mb']:>6} "
                     f"{r['invoke_ms']:>10} {r.get('speed_vs_published', '-'):>8} "
                     f"{r['corr_scene']:>11.5f} {noise:>11} {r.get('pi5_predicted_s', '-'):>15}")
    lines.append("arith: fp32, or fp16 = XNNPACK fp16 arithmetic (cpu_precision fp16; only on CPUs "
                 "with native fp16). corr: vs the fp32 504x896 export; random weights, so it measures arithmetic "
                 "(noise) and arithmetic + resolution (scene), not perception. Pi 5 s: the "
                 f"card's {CARD_PI5_MS / 1000:.1f} s for the published file x this machine's "
                 "invoke ratio - a prediction, not a measurement.")
    if floor:
        lines.append(f"Attention floor: {floor['blocks']} x the fp32 attention core (softmax(QK^T)V, "
                     f"6 heads x 64, {ATTENTION_SHAPE[2]} tokens) = {floor['attention_ms']} ms. "
                     "Weights-only int8/fp16 leave it in fp32, so no full-size file of this menu "
                     f"can beat the published one by more than {floor['max_speed_full_size']}x "
                     "on this CPU, however fast the rest becomes.")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """``build`` or ``measure``."""
    from dense_perception.core.runner import default_num_threads

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="export the menu's files (torch)")
    b.add_argument("--out", default=".cache/bench_models/menu")
    b.add_argument("--checkpoint", help="the real DA3-Small weights (depth-anything/DA3-SMALL "
                   "folder or model.safetensors) instead of random ones; give it an --out of "
                   "its own, since files already there are kept")
    m = sub.add_parser("measure", help="time and compare the files (LiteRT)")
    m.add_argument("--models", default=".cache/bench_models/menu")
    m.add_argument("--threads", type=int, default=default_num_threads())
    m.add_argument("--rounds", type=int, default=5)
    m.add_argument("--json", help="also write the rows here")
    m.add_argument("--no-fp16-arith", action="store_true",
                   help="skip the fp16-arithmetic rows on CPUs with native fp16 (half the memory)")
    args = parser.parse_args(argv)
    if args.command == "build":
        build(Path(args.out), args.checkpoint)
        return 0
    rows = measure(Path(args.models), args.threads, args.rounds, not args.no_fp16_arith)
    print(table(rows))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
