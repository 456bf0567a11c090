# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""``dense-perception info``: what a model file is (each tensor's true dtype, quantisation and
dynamic size; the model kind and what showed it) and how fast it runs here."""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from ..core.model.specs import ModelSignatureError, format_signature
from ..core.model.detection import detect_model_spec
from ..core.backends.native_log import quiet_native_stderr, with_gpu_reason
from ..core.backends.runner import (BackendConfig, ModelLoadError, check_model_file,
                                    litert_version, model_io, open_runner, resolve_model_path)
from ..core.model.tflite_file import TensorInfo
from .console import EXIT_OK, CliError


def cmd_info(args: argparse.Namespace) -> int:
    import json as _json
    path = resolve_model_path(args.model)
    signature = check_model_file(path, check_io=False)  # its I/O refusal comes after the table
    report: dict[str, Any] = {
        "path": path, "size_bytes": signature.file_size, "operators": signature.operator_count,
        "signature": format_signature(signature.input_shapes, signature.output_shapes),
        "tensors": {"inputs": [_tensor(t) for t in signature.inputs],
                    "outputs": [_tensor(t) for t in signature.outputs]},
        "litert": litert_version()}
    refusal: Exception | None = None
    spec = None
    try:
        model_io(signature, path)
        spec = detect_model_spec(signature.input_shapes, signature.output_shapes,
                                 args.model_type,
                                 source=f"model file '{path}'",
                                 output_names=signature.output_names, file=signature)
    except (ModelLoadError, ModelSignatureError) as exc:
        refusal = exc
    if spec is not None:
        report.update(kind=spec.kind, name=spec.display_name, metric_depth=spec.metric_depth,
                      input={"shape": list(spec.input_shape), "layout": spec.layout,
                             "scale": spec.scale,
                             "mean": list(spec.mean), "std": list(spec.std)},
                      outputs=[{"name": o.name, "kind": "inverse_depth" if o.kind == "depth"
                                and spec.inverse_depth else o.kind, "shape": list(o.shape),
                                "description": o.description} for o in spec.outputs],
                      source=spec.source, matched=spec.evidence)
        backends = [b.strip() for b in args.backends.split(",") if b.strip()]
        bad = [b for b in backends if b not in ("cpu", "gpu")]
        if bad:
            raise CliError(f"--backends: '{bad[0]}' is unknown; use cpu and/or gpu")
        report["backends"] = {b: _time_backend(path, b, args.threads, max(1, args.runs),
                                               quiet=not args.verbose) for b in backends}
    if args.json:
        print(_json.dumps(report, indent=2))
    else:
        _print_info(report)
    if refusal is not None:
        raise refusal
    return EXIT_OK


def _tensor(tensor: TensorInfo) -> dict[str, Any]:
    """One tensor as the file declares it: name, shape (and the signature's, where dynamic),
    dtype and quantisation."""
    out: dict[str, Any] = {"name": tensor.name, "shape": list(tensor.shape),
                           "dtype": tensor.dtype}
    if tensor.dynamic:
        out["shape_signature"] = list(tensor.shape_signature)
    if tensor.scales:
        out["scale"] = tensor.scales[0] if len(tensor.scales) == 1 else list(tensor.scales)
        out["zero_point"] = tensor.zero_points[0] if len(tensor.zero_points) == 1 \
            else list(tensor.zero_points)
        if len(tensor.scales) > 1:
            out["quantized_dimension"] = tensor.quantized_dimension
    return out


def _type_text(tensor: dict[str, Any]) -> str:
    """``float32``, ``uint8 (scale 0.02, zero point 10)``; a dynamic shape's signature."""
    text = tensor["dtype"]
    if "scale" in tensor:
        scale = tensor["scale"]
        text += (f" (scale {scale:.6g}, zero point {tensor['zero_point']})"
                 if not isinstance(scale, list) else
                 f" (per-channel: {len(scale)} scales along dimension "
                 f"{tensor['quantized_dimension']})")
    if "shape_signature" in tensor:
        text += " dynamic [" + ",".join(map(str, tensor["shape_signature"])) + "]"
    return text


def _time_backend(path: str, backend: str, threads: int, runs: int, quiet: bool
                  ) -> dict[str, Any]:
    from .inputs.bag_io import one_line
    error = None
    with quiet_native_stderr(quiet) as native:
        try:
            runner = open_runner(path, BackendConfig(backend, threads), log=lambda _: None,
                                 warmup=True)
            times = []
            for _ in range(runs):
                start = time.perf_counter()
                runner.run()
                times.append((time.perf_counter() - start) * 1000.0)
        except ModelLoadError as exc:
            error = one_line(exc)
    if error is not None:
        return {"ok": False, "error": with_gpu_reason(error, native) if quiet and
                backend == "gpu" else error}
    return {"ok": True, "description": runner.description, "runs": runs,
            "median_ms": round(statistics.median(times), 3), "min_ms": round(min(times), 3)}


def _print_info(report: dict[str, Any]) -> None:
    size = report["size_bytes"]
    human = f"{size / 1e6:.1f} MB" if size >= 1e6 else f"{size / 1e3:.1f} kB"
    rows = [("file", f"{report['path']} ({human}, {report['operators']} operators)")]
    tensors = report["tensors"]
    if "kind" in report:
        depth = "metric" if report["metric_depth"] else "relative"
        rows.append(("kind", f"{report['kind']}: {report['name']} ({depth} depth)"))
        rows.append(("matched", report["matched"]))
        inp = report["input"]
        rows.append(("input", "[" + ",".join(map(str, inp["shape"])) + "] "
                     f"{_type_text(tensors['inputs'][0])} {inp['layout']} RGB, "
                     f"x / {inp['scale']:g}, mean {tuple(inp['mean'])}, std {tuple(inp['std'])}"))
        for n, (out, tensor) in enumerate(zip(report["outputs"], tensors["outputs"])):
            rows.append(("outputs" if n == 0 else "", f"{out['name']} ["
                         + ",".join(map(str, out["shape"])) + f"] {_type_text(tensor)}: "
                         f"{out['description']}"))
        rows.append(("source", report["source"]))
    else:
        rows.append(("signature", report["signature"]))
        for label, key in (("inputs", "inputs"), ("outputs", "outputs")):
            for n, tensor in enumerate(tensors[key]):
                rows.append((label if n == 0 else "", f"{tensor['name']} ["
                             + ",".join(map(str, tensor["shape"])) + f"] {_type_text(tensor)}"))
    rows.append(("litert", f"ai-edge-litert {report['litert']}"))
    for n, (name, result) in enumerate(report.get("backends", {}).items()):
        if result["ok"]:
            text = (f"{name}: {result['description']}, warm invoke median "
                    f"{result['median_ms']:.1f} ms ({result['runs']} runs)")
        else:
            text = f"{name}: not available here: {result['error']}"
        rows.append(("backends" if n == 0 else "", text))
    for label, text in rows:
        print(f"{label:<10} {text}")
