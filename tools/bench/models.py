# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Benchmark ``.tflite`` stand-ins with the architecture and compute of the real models.

The real files (``da3_small_gpu_fp16.tflite`` and ``tipsv2_b14_dpt_fp16.tflite``, see the
model cards) cannot be downloaded here, so this module re-creates their architecture class
with random weights (``torch.manual_seed(0)``; the TIPSv2 graph is
:mod:`tools.bench.model_graphs`) and converts them with ``litert-torch`` to ``.tflite`` files
with fp16 weights and float32 I/O, like the real ones (:mod:`tools.bench.model_check`). The
outputs are meaningless; shapes, operator mix and compute are what matter for speed figures.

* ``da3_class.tflite``: DA3-Small itself, built by ``export_da3`` from the official
  architecture (depth-anything-3 package) with the card's GPU-clean rewrites, on
  ``[1,3,896,504]`` -> depth ``[1,1,896,504]``. Input: ImageNet-normalised RGB, NCHW.
* ``tipsv2_class.tflite``: ViT-B/14 (12 blocks, dim 768, 12 heads, 1 cls + 1 register token)
  on ``[1,3,448,448]`` (32x32 = 1024 patch tokens), three DPT heads (features 256, reassemble
  channels 96/192/384/768) -> depth ``[1,1,448,448]``, normals ``[1,3,448,448]``,
  segmentation logits ``[1,150,256,256]`` (in that order). Input: RGB in [0, 1], NCHW.

torch and litert-torch live in a separate environment, so this module imports them only
inside functions and stays importable without them::

    make bench     # sets up .venv-bench (requirements/torch*.txt), builds, then measures
    .venv-bench/bin/python -m tools.bench.models --out .cache/bench_models
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

from tools.bench.model_check import (RuntimeCheck, check_runtime, correlations, count_macs,
                                     count_params, export, sample_input, torch_outputs)
from tools.bench.model_graphs import DPTConfig, ViTConfig, finish, torch_modules

if TYPE_CHECKING:  # pragma: no cover - typing only
    from torch import nn

SEED = 0
MIN_CORRELATION = 0.99  # fp16 weights vs the fp32 torch model, per output

DA3_INPUT = (1, 3, 896, 504)
DA3_OUTPUTS = ((1, 1, 896, 504),)
TIPS_INPUT = (1, 3, 448, 448)
TIPS_OUTPUTS = ((1, 1, 448, 448), (1, 3, 448, 448), (1, 150, 256, 256))

@dataclass(frozen=True)
class BenchModelSpec:
    """A benchmark model: how to build it, its input and the output shapes it must have."""

    name: str
    filename: str
    build: Callable[[], "nn.Module"]
    input_shape: tuple[int, ...]
    output_shapes: tuple[tuple[int, ...], ...]


@dataclass
class BuildReport:
    """What ``main`` prints for one model."""

    name: str
    path: Path
    macs: float | None = None
    params: int | None = None
    convert_s: float | None = None
    fp16: bool | None = None
    skipped: bool = False
    reference: list[Any] = field(default_factory=list, repr=False)


def build_da3_class() -> "nn.Module":
    """DA3-Small itself (the official architecture from the depth-anything-3 package, random
    weights) as ``export-da3 --gpu-clean --no-confidence`` builds it at 504x896: the graph of
    the real file (depth only)."""
    from dense_perception.export.graph import build_export_model

    height, width = DA3_INPUT[2:]
    return build_export_model(width, height, seed=SEED, gpu_clean=True, confidence=False)[0]


def build_tipsv2_class() -> "nn.Module":
    """TIPSv2-B/14-DPT class: ViT-B/14 (1 cls + 1 register) at 448x448 + 3 DPT heads."""
    import torch

    torch.manual_seed(SEED)
    vit = ViTConfig(image_hw=TIPS_INPUT[2:], dim=768, heads=12, registers=1, tanh_gelu=True)
    dpt = DPTConfig(features=256, out_channels=(96, 192, 384, 768), readout=True)
    return finish(torch_modules().TIPSv2Class(vit, dpt))


SPECS: tuple[BenchModelSpec, ...] = (
    BenchModelSpec("da3", "da3_class.tflite", build_da3_class, DA3_INPUT, DA3_OUTPUTS),
    BenchModelSpec("tipsv2", "tipsv2_class.tflite", build_tipsv2_class, TIPS_INPUT,
                   TIPS_OUTPUTS),
)


def build_one(spec: BenchModelSpec, out_dir: Path, force: bool) -> BuildReport:
    """Build, measure and (unless the file exists and not ``force``) convert one model."""
    report = BuildReport(spec.name, out_dir / spec.filename)
    model = spec.build()
    sample = sample_input(spec.input_shape, SEED)
    report.reference = torch_outputs(model, sample, spec.output_shapes)
    report.macs = count_macs(model, sample)
    report.params = count_params(model)
    stamp = report.path.with_suffix(".source-sha256")
    if report.path.exists() and not force and stamp.exists() \
            and stamp.read_text().strip() == builder_fingerprint():
        report.skipped = True
        return report
    start = time.perf_counter()
    report.fp16 = export(model, sample, report.path, fp16=True)
    report.convert_s = time.perf_counter() - start
    stamp.write_text(builder_fingerprint() + "\n")
    return report


def builder_fingerprint() -> str:
    """Hash of the code that builds the models: a file built by older code is rebuilt."""
    import hashlib
    here = Path(__file__).resolve()
    builders = [here.with_name(n) for n in ("models.py", "model_graphs.py", "model_check.py")]
    export_dir = here.parents[2] / "dense_perception" / "export"
    digest = hashlib.sha256()
    for path in [*builders, *sorted(export_dir.glob("*.py"))]:
        digest.update(path.read_bytes())
    return digest.hexdigest()


def describe(report: BuildReport, check: RuntimeCheck, spec: BenchModelSpec,
             corr: Sequence[float]) -> str:
    """Human-readable summary lines for one model."""
    size_mb = report.path.stat().st_size / 1e6
    conv = ("skipped (built by this code already; --force rebuilds)" if report.skipped
            else f"{report.convert_s:.1f} s, weights {'fp16' if report.fp16 else 'FP32'}")
    left = ", ".join(f"{k} x{v}" for k, v in sorted(check.ops_outside_delegate.items()))
    return "\n".join([
        f"== {spec.name}: {report.path}",
        f"  MACs {report.macs / 1e9:.1f} G, params {report.params / 1e6:.2f} M, "
        f"file {size_mb:.1f} MB, conversion {conv}",
        f"  signature {check.inputs} -> {check.outputs}, I/O {sorted(set(check.io_dtypes))}, "
        f"fp16 tensors {check.fp16_tensors}",
        f"  corr vs torch fp32: {', '.join(f'{c:.5f}' for c in corr)}",
        f"  XNNPACK partitions {check.partitions}; ops outside XNNPACK: {left or 'none'}",
        f"  load {check.load_s:.2f} s, invoke (2 threads) median of {len(check.invoke_ms)} "
        f"warm: {statistics.median(check.invoke_ms):.0f} ms "
        f"({', '.join(f'{t:.0f}' for t in check.invoke_ms)})",
    ])


def verify_signature(check: RuntimeCheck, spec: BenchModelSpec) -> None:
    """Raise when the file's input/output shapes or output order differ from the real model."""
    if check.inputs != [spec.input_shape] or check.outputs != list(spec.output_shapes):
        raise AssertionError(f"{spec.name}: signature {check.inputs} -> {check.outputs}, "
                             f"expected {[spec.input_shape]} -> {list(spec.output_shapes)}")
    if set(check.io_dtypes) != {"float32"}:
        raise AssertionError(f"{spec.name}: I/O dtypes {check.io_dtypes}, expected float32")


def main(argv: list[str] | None = None) -> int:
    """Build both benchmark models into ``--out`` and check them with the LiteRT runtime."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=".cache/bench_models", help="output folder")
    parser.add_argument("--force", action="store_true", help="rebuild existing files")
    parser.add_argument("--only", choices=[s.name for s in SPECS], action="append")
    parser.add_argument("--threads", type=int, default=2, help="interpreter threads")
    args = parser.parse_args(argv)
    failed = False
    for spec in SPECS:
        if args.only and spec.name not in args.only:
            continue
        report = build_one(spec, Path(args.out), args.force)
        sample = sample_input(spec.input_shape, SEED).numpy()
        check = check_runtime(report.path, sample, threads=args.threads)
        corr = correlations(report.reference, check.outputs_data)
        print(describe(report, check, spec, corr), flush=True)
        try:
            verify_signature(check, spec)
            if not all(c >= MIN_CORRELATION for c in corr):  # NaN (constant output) fails
                raise AssertionError(f"{spec.name}: converted outputs differ from torch: {corr}")
        except AssertionError as exc:
            print(f"  FAILED: {exc}", flush=True)
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
