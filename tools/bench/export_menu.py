# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The DA3-Small export menu for CPUs: the card's graph at 896 beside DA3's own resolution (long
side 504, ``export-da3``'s default), speed and fidelity side by side.

``build`` (torch, ``.venv-bench``) writes, with random weights (seed 0), portrait 9:16 like the
published file:

* ``da3_gpu_504x896_fp16.tflite``: the published file's graph and arithmetic
  (``export-da3 --gpu-clean --fp16 --no-confidence`` at 504x896); the speed reference;
* ``da3_cpu_280x504_{fp32,fp16,int8}.tflite``: what ``export-da3 --aspect 9:16`` writes by
  default (DA3's own 504, depth + confidence) with fp32 (the int8 reference), fp16 and
  dynamic-range int8 weights;
* ``official_WxH.npz``: the official PyTorch model's depth and ``depth_conf`` at each of those
  sizes on the exporter's fixed inputs (``fidelity_inputs``): the fidelity reference, so that
  ``measure`` needs no torch.

``--checkpoint`` builds the menu from the real weights, where they can be had.

``measure`` (LiteRT only: runs on a Pi 5 as well) loads every file, times bare invokes in
interleaved rounds (A B C ... A B C ..., so the machine's drift hits all alike), and reports the
invoke ratio to the card's graph, the Pi 5 time that ratio predicts, the correlation of each
output with the official PyTorch model at the same size (min over the inputs), and int8 vs fp32
weights at the same size. It prints the CPU and its int8 / fp16 instruction support, which
decide which goal applies.

    .venv-bench/bin/python -m tools.bench.export_menu build --out .cache/bench_models/menu
    .venv/bin/python -m tools.bench.export_menu measure --models .cache/bench_models/menu
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

PUBLISHED = "da3_gpu_504x896_fp16.tflite"
CARD_PI5_MS = 4201.0  # DA3-Small card: Raspberry Pi 5, XNNPACK, 4 threads, published file
DA3_LONG_SIDE = 504   # DA3's own process_res, export-da3's default
# The menu's goals against the card's graph: fp16 weights >= 4x, int8 >= 8x at corr >= 0.999
GOAL_FP16, GOAL_INT8, GOAL_INT8_CORR = 4.0, 8.0, 0.999


@dataclass(frozen=True)
class Variant:
    """One file of the menu."""

    file: str
    build: str       # "gpu" (GPU-clean rewrites) or "cpu"
    width: int
    height: int
    weights: str     # fp32 | fp16 | int8
    confidence: bool = True


def portrait_size(long_side: int) -> tuple[int, int]:
    """(width, height) of a 9:16 portrait model with this long side (DA3's size rule)."""
    from dense_perception.export.sizes import size_for_aspect
    return size_for_aspect(9 / 16, long_side)


def menu() -> list[Variant]:
    """The card's graph first, then the 504 CPU builds (fp32 reference, fp16, int8)."""
    w, h = portrait_size(DA3_LONG_SIDE)
    return [Variant(PUBLISHED, "gpu", 504, 896, "fp16", confidence=False)] + [
        Variant(f"da3_cpu_{w}x{h}_{dt}.tflite", "cpu", w, h, dt) for dt in ("fp32", "fp16", "int8")]


def official_file(width: int, height: int) -> str:
    """The official PyTorch outputs at ``width`` x ``height``."""
    return f"official_{width}x{height}.npz"


def menu_inputs(width: int, height: int) -> dict[str, np.ndarray]:
    """The exporter's fixed inputs at this size (noise, scene, checkerboard), seed 0."""
    from dense_perception.export.fidelity import fidelity_inputs
    return fidelity_inputs(width, height, 0)


# ---- build (torch) ----------------------------------------------------------------------------

def build(out: Path, checkpoint: str | None = None) -> None:
    """Convert each (build, size) once, write its weight variants and the official model's
    outputs at that size (skips existing files). ``checkpoint``: the real DA3-Small weights
    instead of random ones."""
    import torch

    from dense_perception.export.convert import convert, with_weights, write_atomic
    from dense_perception.export.fidelity import torch_forward
    from dense_perception.export.graph import build_export_model

    out.mkdir(parents=True, exist_ok=True)
    groups: dict[tuple[str, int, int, bool], list[Variant]] = {}
    for v in menu():
        groups.setdefault((v.build, v.width, v.height, v.confidence), []).append(v)
    for (kind, w, h, confidence), variants in groups.items():
        todo = [v for v in variants if not (out / v.file).exists()]
        reference = out / official_file(w, h)
        if not todo and reference.exists():
            continue
        t0 = time.perf_counter()
        model, official, _ = build_export_model(w, h, seed=0, gpu_clean=kind == "gpu",
                                                checkpoint=checkpoint, confidence=confidence)
        if not reference.exists():  # depth (and depth_conf) of the official forward
            arrays = {f"{name}_{out}": value for name, x in menu_inputs(w, h).items()
                      for out, value in zip(("depth", "confidence"), torch_forward(official, x))}
            np.savez_compressed(reference, **arrays)
        if todo:
            sample = torch.from_numpy(menu_inputs(w, h)["scene"])
            fp32 = convert(model, sample)
            for v in todo:
                write_atomic(out / v.file, with_weights(fp32, v.weights))
        print(f"built {', '.join(v.file for v in todo) or '-'} and {reference.name} in "
              f"{time.perf_counter() - t0:.0f} s", flush=True)


# ---- measure (LiteRT only) --------------------------------------------------------------------

def cpu_support() -> dict:
    """The CPU's model and the instructions that decide int8 / fp16 speed (/proc/cpuinfo)."""
    from dense_perception.core.backends.cpu_precision import native_fp16

    text = ""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        pass
    model = next((line.split(":", 1)[1].strip() for line in text.splitlines()
                  if line.split(":")[0].strip() in ("model name", "Model")), platform.processor())
    flags = set()
    for line in text.splitlines():
        if line.split(":")[0].strip() in ("flags", "Features"):
            flags |= set(line.split(":", 1)[1].split())
    int8_dot = sorted(flags & {"avx_vnni", "avx512_vnni", "amx_int8", "asimddp", "i8mm"})
    fp16 = sorted(flags & {"f16c", "avx512_fp16", "fphp", "asimdhp"})
    return {"cpu": model or platform.machine(), "machine": platform.machine(),
            "int8_dot_product": int8_dot, "fp16_flags": fp16,
            "native_fp16_arithmetic": native_fp16()[0]}


def _runner(path: str, arith: str, threads: int):
    from dense_perception.core.backends.cpu_precision import FP16_XNNPACK_FLAGS
    from dense_perception.core.backends.runner_base import CompiledModelRunner, InterpreterRunner

    if arith == "fp32":
        return InterpreterRunner(path, threads)
    return CompiledModelRunner(path, "cpu", threads,
                               cpu_options={"xnnpack_flags": FP16_XNNPACK_FLAGS})


def _min_corr(pairs) -> float:
    from dense_perception.export.fidelity import compare
    return round(min(compare(a, b)["corr"] for a, b in pairs), 6)


def measure(folder: Path, threads: int, rounds: int, fp16_arith: bool = True) -> list[dict]:
    """One row per menu file present (and, on CPUs with native fp16, one more per file with
    XNNPACK's fp16 arithmetic): size, bare invoke (interleaved rounds), ratio to the card's
    graph, fidelity vs the official model at the same size, int8 vs fp32 at the same size."""
    from dense_perception.core.backends.cpu_precision import native_fp16

    variants = [v for v in menu() if (folder / v.file).exists()]
    if not variants or not all((folder / official_file(v.width, v.height)).exists()
                               for v in variants):
        raise SystemExit(f"{folder} lacks the menu's files or its official_*.npz: run "
                         "`tools.bench.export_menu build` first (make bench-menu), or copy the "
                         "folder from a machine that did")
    ariths = ["fp32"] + (["fp16"] if fp16_arith and native_fp16()[0] else [])
    runners = {(v.file, a): _runner(str(folder / v.file), a, threads)
               for v in variants for a in ariths}
    outputs: dict[tuple[str, str], dict[str, list[np.ndarray]]] = {}
    for v in variants:
        for arith in ariths:
            runner, got = runners[(v.file, arith)], {}
            for name, x in menu_inputs(v.width, v.height).items():
                runner.input_buffer()[...] = x
                got[name] = [np.array(o, copy=True) for o in runner.run()]
            outputs[(v.file, arith)] = got
    rows = []
    for v in variants:
        official = np.load(folder / official_file(v.width, v.height))
        fp32 = next((u.file for u in variants if (u.width, u.height, u.weights, u.build)
                     == (v.width, v.height, "fp32", v.build)), None)
        for arith in ariths:
            got = outputs[(v.file, arith)]
            row = {"file": v.file, "arith": arith, "input": f"{v.width}x{v.height}",
                   "weights": v.weights, "size_mb": round((folder / v.file).stat().st_size / 1e6, 1),
                   "outputs": len(next(iter(got.values())))}
            for i, out in enumerate(("depth", "confidence")[:row["outputs"]]):
                row[f"corr_official_{out}"] = _min_corr(
                    (official[f"{n}_{out}"], o[i]) for n, o in got.items())
                if fp32 and v.weights != "fp32":
                    row[f"corr_fp32_{out}"] = _min_corr(
                        (outputs[(fp32, "fp32")][n][i], o[i]) for n, o in got.items())
            rows.append(row)
    # Bare invokes, interleaved: round r runs every runner once (round 0 warms up).
    times: dict[tuple[str, str], list[float]] = {key: [] for key in runners}
    for r in range(rounds + 1):
        for key, runner in runners.items():
            t0 = time.perf_counter()
            runner.run()
            if r:
                times[key].append((time.perf_counter() - t0) * 1000.0)
    card = statistics.median(times[(PUBLISHED, "fp32")]) if (PUBLISHED, "fp32") in times else None
    for row in rows:
        ms = statistics.median(times[(row["file"], row["arith"])])
        row["invoke_ms"] = round(ms, 1)
        if card:
            row["x_card"] = round(card / ms, 2)
            row["pi5_predicted_s"] = round(CARD_PI5_MS / 1000.0 * ms / card, 2)
    return rows


def goals(rows: list[dict], cpu: dict) -> list[str]:
    """The menu's goals, each with the measured figure and whether this CPU shows it."""
    lines = []
    for weights, goal in (("fp16", GOAL_FP16), ("int8", GOAL_INT8)):
        row = next((r for r in rows if r["weights"] == weights and r["arith"] == "fp32"
                    and r["file"] != PUBLISHED), None)
        if not row or "x_card" not in row:
            continue
        applies = weights == "fp16" or bool(cpu["int8_dot_product"])
        verdict = ("met" if row["x_card"] >= goal else "NOT met") if applies else \
            "does not apply (no int8 dot-product instructions on this CPU)"
        line = (f"goal: {weights} weights at {row['input']} >= {goal:g}x the card's graph: "
                f"{row['x_card']}x, {verdict}")
        if weights == "int8" and "corr_fp32_depth" in row:
            ok = row["corr_fp32_depth"] >= GOAL_INT8_CORR
            line += (f"; int8 vs fp32 at {row['input']} corr {row['corr_fp32_depth']:.5f} "
                     f"(>= {GOAL_INT8_CORR}: {'met' if ok else 'NOT met'})")
        lines.append(line)
    return lines


def table(rows: list[dict], cpu: dict | None = None) -> str:
    """The menu as a plain-text table, with the CPU it ran on and the goals."""
    lines = []
    if cpu:
        lines.append(f"CPU: {cpu['cpu']} ({cpu['machine']}); int8 dot product: "
                     f"{', '.join(cpu['int8_dot_product']) or 'none'}; fp16: "
                     f"{', '.join(cpu['fp16_flags']) or 'none'}; native fp16 arithmetic in "
                     f"XNNPACK: {'yes' if cpu['native_fp16_arithmetic'] else 'no'}")
    lines.append(f"{'file':30} {'arith':>5} {'input':>8} {'weights':>7} {'MB':>6} "
                 f"{'invoke ms':>10} {'x card':>7} {'Pi 5 s':>7}  {'vs official (same size)':>24}"
                 f"  {'vs fp32 weights':>17}")
    for r in rows:
        official = f"{r['corr_official_depth']:.5f}" + (
            f" / {r['corr_official_confidence']:.5f}" if "corr_official_confidence" in r else "")
        fp32 = f"{r['corr_fp32_depth']:.5f}" + (
            f" / {r['corr_fp32_confidence']:.5f}" if "corr_fp32_confidence" in r else "") \
            if "corr_fp32_depth" in r else "-"
        lines.append(f"{r['file']:30} {r['arith']:>5} {r['input']:>8} {r['weights']:>7} "
                     f"{r['size_mb']:>6} {r['invoke_ms']:>10} {r.get('x_card', '-'):>7} "
                     f"{r.get('pi5_predicted_s', '-'):>7}  {official:>24}  {fp32:>17}")
    lines.append("corr: depth / confidence, min over 3 inputs, against the official PyTorch "
                 "model at the file's own size (random weights: arithmetic and graph, not "
                 "perception); the card's graph has no confidence and one inexact GPU rewrite "
                 "(align_corners). arith fp16 = XNNPACK fp16 arithmetic (cpu_precision fp16; "
                 f"native-fp16 CPUs only). Pi 5 s: the card's {CARD_PI5_MS / 1000:.1f} s for "
                 "the published file / this machine's invoke ratio - a prediction, not a "
                 "measurement.")
    if cpu:
        lines += goals(rows, cpu)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """``build`` or ``measure``."""
    from dense_perception.core.backends.runner import default_num_threads

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
    cpu = cpu_support()
    print(table(rows, cpu))
    if args.json:
        Path(args.json).write_text(json.dumps({"cpu": cpu, "threads": args.threads,
                                               "rounds": args.rounds, "rows": rows},
                                              indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
