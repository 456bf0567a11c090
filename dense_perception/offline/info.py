"""``dense-perception info``: what a model file is and how fast it runs here."""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from ..core.models import ModelSignatureError, format_signature
from ..core.model_detection import detect_model_spec
from ..core.backends.native_log import quiet_native_stderr, with_gpu_reason
from ..core.backends.runner import (BackendConfig, ModelLoadError, check_model_file,
                                    litert_version, open_runner, resolve_model_path)
from .console import EXIT_OK, CliError


def cmd_info(args: argparse.Namespace) -> int:
    import json as _json
    path = resolve_model_path(args.model)
    signature = check_model_file(path)
    report: dict[str, Any] = {
        "path": path, "size_bytes": signature.file_size, "operators": signature.operator_count,
        "signature": format_signature(signature.input_shapes, signature.output_shapes),
        "litert": litert_version()}
    spec_error = None
    try:
        spec = detect_model_spec(signature.input_shapes, signature.output_shapes,
                                 args.model_type,
                                 source=f"model file '{path}'",
                                 output_names=signature.output_names)
    except ModelSignatureError as exc:
        spec, spec_error = None, exc
    if spec is not None:
        report.update(kind=spec.kind, name=spec.display_name, metric_depth=spec.metric_depth,
                      input={"shape": list(spec.input_shape), "layout": spec.layout,
                             "scale": spec.scale,
                             "mean": list(spec.mean), "std": list(spec.std)},
                      outputs=[{"name": o.name, "kind": o.kind, "shape": list(o.shape),
                                "description": o.description} for o in spec.outputs],
                      source=spec.source)
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
    if spec_error is not None:
        raise spec_error
    return EXIT_OK


def _time_backend(path: str, backend: str, threads: int, runs: int, quiet: bool
                  ) -> dict[str, Any]:
    from .bagio import one_line
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
    if "kind" in report:
        depth = "metric" if report["metric_depth"] else "relative"
        rows.append(("kind", f"{report['kind']}: {report['name']} ({depth} depth)"))
        inp = report["input"]
        rows.append(("input", "[" + ",".join(map(str, inp["shape"])) + f"] float32 "
                     f"{inp['layout']} RGB, "
                     f"x / {inp['scale']:g}, mean {tuple(inp['mean'])}, std {tuple(inp['std'])}"))
        for n, out in enumerate(report["outputs"]):
            rows.append(("outputs" if n == 0 else "", f"{out['name']} ["
                         + ",".join(map(str, out["shape"])) + f"]: {out['description']}"))
        rows.append(("source", report["source"]))
    else:
        rows.append(("signature", report["signature"]))
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


