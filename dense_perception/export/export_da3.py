# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""``dense-perception export-da3``: DA3-Small as a LiteRT file at the camera's own aspect.

    dense-perception export-da3 (--checkpoint PATH_OR_DIR | --random-weights [--seed N])
        (--size WxH | --camera-info-yaml FILE | --aspect 16:9) [--long-side 504]
        [--gpu-clean] [--fp16 | --int8] [--no-confidence] [--out da3_small_WxH.tflite]

Builds Depth Anything 3 Small with the official architecture (the ``depth-anything-3``
package, config ``da3-small``), loads the published checkpoint (a ``model.safetensors`` file
or the Hugging Face folder that holds it with ``config.json``), wraps it so that the graph
takes ``[1,3,H,W]`` NCHW ImageNet-normalised RGB and returns depth ``[1,1,H,W]`` then DA3's
confidence ``depth_conf`` ``[1,1,H,W]`` (signature names "depth", "confidence"; the node reads
both; ``--no-confidence``: depth only, like the card's file), applies the export rewrites of the
model card and converts it with ``litert-torch``. A fidelity report (LiteRT vs the official
PyTorch model at the same size on the same inputs, depth and confidence, at fp32 and fp16
weights; op histogram; file size) is printed and written to ``<out>.report.json``.

Why re-export: DA3 runs at the image's native aspect. Its own default (``process_res`` 504,
``upper_bound_resize``) scales the longer side to 504 and rounds each side to a multiple of
14; that is this command's default size rule (``--long-side 896`` gives the card's size). The
published file is portrait 504x896; letterboxing another aspect into it costs fidelity (corr
0.9994 -> 0.977 on the card) and cropping a 16:9 view to 9:16 throws two thirds of it away.

torch, litert-torch and depth-anything-3 live in ``.venv-bench`` (``requirements/torch.txt``
and ``requirements/torch-nodeps.txt``). This module imports them only inside functions; when
they are missing, :func:`run_export_da3` creates that venv and runs itself there
(:mod:`.torch_env`). The exporter's parts: :mod:`.sizes` (size rule), :mod:`.official` (the
official model and checkpoint), :mod:`.rewrites` and :mod:`.graph` (the exported graph),
:mod:`.convert` (litert-torch, weight precision, LiteRT readers), :mod:`.fidelity` (the report).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from .common import DEFAULT_LONG_SIDE, EXIT_ERROR, EXIT_OK, MODEL_NAME, PROG, ExportError
from .sizes import default_out, parse_aspect, parse_size, resolve_size
from .torch_env import run_in_torch_env, torch_env_problem


@dataclass
class ExportResult:
    """What :func:`export_da3` wrote."""

    path: Path
    report_path: Path
    report: dict[str, Any]


def export_da3(width: int, height: int, out: str | os.PathLike, *,
               checkpoint: str | None = None, seed: int = 0, gpu_clean: bool = False,
               fp16: bool = False, int8: bool = False, fidelity: bool = True,
               confidence: bool = True, log=print) -> ExportResult:
    """Build, convert, check and write DA3-Small at ``width`` x ``height`` (needs torch).
    ``confidence``: a second output, DA3's ``depth_conf`` (else depth only)."""
    import torch

    from .convert import (convert, litert_output_names, litert_signature, op_histogram,
                          to_fp16_weights, to_int8_dynamic, write_atomic)
    from .fidelity import OUTPUT_NAMES
    from .fidelity import fidelity_inputs, measure_fidelity
    from .graph import CPU_REWRITES, GPU_REWRITES, build_export_model

    out = Path(out)
    timing: dict[str, float] = {}
    t0 = time.perf_counter()
    log(f"{PROG}: building DA3-Small ({MODEL_NAME}) at {width}x{height} "
        f"({'GPU-clean' if gpu_clean else 'CPU'} rewrites)")
    model, official, weights = build_export_model(width, height, checkpoint=checkpoint,
                                                  seed=seed, gpu_clean=gpu_clean,
                                                  confidence=confidence)
    timing["build"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    log(f"{PROG}: converting with litert-torch (minutes for ViT-S at {width}x{height})")
    sample = torch.from_numpy(fidelity_inputs(width, height, seed)["scene"])
    fp32_bytes = convert(model, sample)
    timing["convert"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    fp16_bytes = to_fp16_weights(fp32_bytes)
    timing["fp16_weights"] = time.perf_counter() - t0
    int8_bytes = to_int8_dynamic(fp32_bytes) if int8 else None
    data = int8_bytes if int8 else fp16_bytes if fp16 else fp32_bytes
    dtype = "int8" if int8 else "fp16" if fp16 else "fp32"
    inputs, outputs = litert_signature(data)
    names = OUTPUT_NAMES[:2 if confidence else 1]
    expected_in, expected_out = [[1, 3, height, width]], [[1, 1, height, width]] * len(names)
    if inputs != expected_in or outputs != expected_out \
            or litert_output_names(data) != list(names):
        raise ExportError(f"converted signature {inputs} -> {outputs} "
                          f"{litert_output_names(data)}, expected {expected_in} -> "
                          f"{expected_out} {list(names)}")
    write_atomic(out, data)
    report: dict[str, Any] = {
        "file": str(out), "size_bytes": len(data), "size_mb": len(data) / 1e6,
        "model": MODEL_NAME, "weights": weights, "weights_dtype": dtype,
        "input_shape": inputs[0], "output_shape": outputs[0],
        "outputs": {name: shape for name, shape in zip(names, outputs)},
        "input": "RGB, NCHW, float32, (x/255 - mean) / std with ImageNet mean/std",
        "gpu_clean": gpu_clean,
        "rewrites": list(CPU_REWRITES) + (list(GPU_REWRITES) if gpu_clean else []),
        "ops": op_histogram(data),
    }
    if fidelity:
        t0 = time.perf_counter()
        log(f"{PROG}: measuring fidelity (official PyTorch vs LiteRT fp32 / fp16"
            f"{' / int8' if int8 else ''})")
        report["fidelity"] = measure_fidelity(official, model, fp32_bytes, fp16_bytes,
                                              width, height, seed, int8_bytes=int8_bytes)
        timing["fidelity"] = time.perf_counter() - t0
    report["timing_s"] = timing
    report_path = out.with_name(out.name + ".report.json")
    report_path.write_text(json.dumps(report, indent=2) + "\n")
    return ExportResult(out, report_path, report)


def add_export_da3_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The options of ``export-da3`` (shared by the subcommand and ``python -m``)."""
    weights = parser.add_mutually_exclusive_group(required=True)
    weights.add_argument("--checkpoint", metavar="PATH_OR_DIR",
                         help="DA3-Small weights: model.safetensors, or the Hugging Face folder "
                         "of depth-anything/DA3-SMALL (config.json + model.safetensors)")
    weights.add_argument("--random-weights", action="store_true",
                         help="random weights (tests, speed checks): the output is meaningless")
    parser.add_argument("--seed", type=int, default=0, help="seed of --random-weights and of "
                        "the fidelity inputs (default 0)")
    size = parser.add_mutually_exclusive_group(required=True)
    size.add_argument("--size", type=parse_size, metavar="WxH",
                      help="model input size, both multiples of 14, e.g. 504x280")
    size.add_argument("--camera-info-yaml", metavar="FILE",
                      help="ROS camera_info YAML: its image_width/image_height give the size "
                      "(DA3's rule)")
    size.add_argument("--aspect", type=parse_aspect, metavar="W:H", help="camera aspect, "
                      "e.g. 16:9 or 4:3")
    parser.add_argument("--long-side", type=int, default=DEFAULT_LONG_SIDE,
                        help="longer model side for --aspect/--camera-info-yaml (multiple of 14; "
                        f"default {DEFAULT_LONG_SIDE}: DA3's own resolution, process_res 504 of "
                        "its upper_bound_resize, whose rounding of the short side this follows; "
                        "896 gives the model card's size, at ~4x the compute)")
    parser.add_argument("--gpu-clean", action="store_true",
                        help="also apply the mobile-GPU rewrites of the model card (fused-QKV "
                        "split, LayerScale fold, ConvTranspose as zero-stuff + conv, "
                        "align_corners=False - the last one is not exact)")
    precision = parser.add_mutually_exclusive_group()
    precision.add_argument("--fp16", action="store_true",
                           help="write fp16 weights (float32 I/O), like the published file")
    precision.add_argument("--int8", action="store_true",
                           help="write dynamic-range int8 weights (float32 I/O, activations "
                           "quantised on the fly): a quarter of the fp32 size, faster on CPUs")
    parser.add_argument("--out", "-o", help="output .tflite (default: da3_small_WxH[_gpu]"
                        "[_fp16|_int8].tflite); the report goes to <out>.report.json")
    parser.add_argument("--no-confidence", action="store_true",
                        help="depth output only, like the card's file (default: a second output "
                        "'confidence' [1,1,H,W], DA3's depth_conf, after 'depth')")
    parser.add_argument("--no-fidelity", action="store_true",
                        help="skip the fidelity measurement (faster)")
    parser.set_defaults(func=run_export_da3)
    return parser


def add_export_da3_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``export-da3`` on a ``dense-perception`` subparsers object."""
    parser = subparsers.add_parser(
        "export-da3", help="re-export DA3-Small to LiteRT at your camera's aspect",
        description="Build DA3-Small (official architecture), load its checkpoint, convert it "
        "with litert-torch at the camera's aspect ([1,3,H,W] -> depth [1,1,H,W], confidence "
        "[1,1,H,W]) and report its fidelity against the official PyTorch model at the same "
        "size. Default size: DA3's own (long side 504). Installs its torch environment "
        "(.venv-bench) when needed.")
    return add_export_da3_arguments(parser)


def argv_from_args(args: argparse.Namespace) -> list[str]:
    """The ``export-da3`` options of ``args`` as command-line words (to run elsewhere)."""
    argv: list[str] = []
    if args.checkpoint:
        argv += ["--checkpoint", str(Path(args.checkpoint).resolve())]
    else:
        argv += ["--random-weights"]
    argv += ["--seed", str(args.seed)]
    if args.size:
        argv += ["--size", f"{args.size[0]}x{args.size[1]}"]
    elif args.camera_info_yaml:
        argv += ["--camera-info-yaml", str(Path(args.camera_info_yaml).resolve())]
    else:
        argv += ["--aspect", repr(args.aspect)]
    argv += ["--long-side", str(args.long_side)]
    argv += [flag for flag, on in (("--gpu-clean", args.gpu_clean), ("--fp16", args.fp16),
                                   ("--int8", args.int8),
                                   ("--no-confidence", args.no_confidence),
                                   ("--no-fidelity", args.no_fidelity)) if on]
    if args.out:
        argv += ["--out", str(Path(args.out).resolve())]
    return argv


def run_export_da3(args: argparse.Namespace) -> int:
    """The ``export-da3`` command; returns the exit status (errors: one line, status 2)."""
    try:
        width, height = resolve_size(args)
        out = args.out or default_out(width, height, args.gpu_clean, args.fp16, args.int8)
        if torch_env_problem():
            if not args.out:
                args.out = str(Path(out).resolve())
            return run_in_torch_env(argv_from_args(args))
        result = export_da3(width, height, out, checkpoint=args.checkpoint, seed=args.seed,
                            gpu_clean=args.gpu_clean, fp16=args.fp16, int8=args.int8,
                            fidelity=not args.no_fidelity,
                            confidence=not args.no_confidence)
    except (ExportError, ValueError) as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    from .fidelity import format_report

    print(format_report(result.report))
    print(f"wrote {result.path} and {result.report_path}")
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m dense_perception.export`` (or ``dense_perception.export.export_da3``)."""
    parser = argparse.ArgumentParser(prog="python -m dense_perception.export",
                                     description=__doc__.split("\n\n")[0])
    add_export_da3_arguments(parser)
    return run_export_da3(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
