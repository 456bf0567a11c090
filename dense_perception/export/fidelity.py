# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The fidelity report of ``export-da3``: LiteRT (fp32 and fp16 weights) and the rewritten
graph against the official PyTorch model on a few fixed inputs, and the report's text."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from .common import IMAGENET_MEAN, IMAGENET_STD
from .convert import run_litert

if TYPE_CHECKING:  # pragma: no cover - type hints only
    from torch import nn


def fidelity_inputs(width: int, height: int, seed: int = 0) -> dict[str, np.ndarray]:
    """A few [1,3,H,W] ImageNet-normalised inputs: noise, a synthetic scene, a checkerboard."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:height, 0:width].astype(np.float32)
    # scene: sky gradient over a floor gradient, a few boxes and a disc
    scene = np.empty((height, width, 3), np.float32)
    horizon = int(height * 0.45)
    scene[:horizon] = np.array([120, 170, 230]) * (0.6 + 0.4 * yy[:horizon, :, None] / horizon)
    scene[horizon:] = np.array([110, 90, 70]) * (0.5 + yy[horizon:, :, None] / height)
    for _ in range(5):
        x0, y0 = rng.integers(0, width * 3 // 4), rng.integers(height // 4, height * 3 // 4)
        w, h = rng.integers(width // 12, width // 4), rng.integers(height // 8, height // 3)
        scene[y0:y0 + h, x0:x0 + w] = rng.integers(0, 256, 3)
    disc = (xx - width * 0.7) ** 2 + (yy - height * 0.35) ** 2 < (min(width, height) * 0.12) ** 2
    scene[disc] = (240, 200, 60)
    checker = (((xx // 28) + (yy // 28)) % 2)[..., None] * np.array([200, 200, 200]) + 30
    noise = rng.normal(0, 1, (1, 3, height, width)).astype(np.float32)
    return {"noise": noise, "scene": normalise_rgb(scene), "checker": normalise_rgb(checker)}


def normalise_rgb(rgb: np.ndarray) -> np.ndarray:
    """H x W x 3 RGB in 0..255 -> [1,3,H,W] float32, ImageNet-normalised (the node's input)."""
    x = (np.asarray(rgb, np.float32) / 255.0 - np.array(IMAGENET_MEAN, np.float32)) \
        / np.array(IMAGENET_STD, np.float32)
    return np.ascontiguousarray(x.transpose(2, 0, 1)[None], dtype=np.float32)


def compare(reference: np.ndarray, other: np.ndarray) -> dict[str, float]:
    """Pearson correlation and max abs difference."""
    a, b = np.ravel(reference).astype(np.float64), np.ravel(other).astype(np.float64)
    corr = float(np.corrcoef(a, b)[0, 1]) if a.std() > 0 and b.std() > 0 else float("nan")
    return {"corr": corr, "max_abs_diff": float(np.max(np.abs(a - b)))}


def torch_forward(module: "nn.Module", x: np.ndarray) -> list[np.ndarray]:
    """All outputs of one forward pass on a numpy input (one tensor or a tuple) as numpy."""
    import torch

    with torch.no_grad():
        out = module(torch.from_numpy(np.ascontiguousarray(x, np.float32)))
    if isinstance(out, dict):  # named outputs, in the graph's order (depth, confidence)
        out = tuple(out.values())
    return [o.numpy() for o in (out if isinstance(out, (tuple, list)) else (out,))]


def torch_outputs(module: "nn.Module", inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """The (first) output of a torch module on each numpy input."""
    return [torch_forward(module, x)[0] for x in inputs]


OUTPUT_NAMES = ("depth", "confidence")  # the exported file's outputs, in order


def _summarise(pairs: list[dict[str, float]], names: Sequence[str]) -> dict[str, Any]:
    return {"corr_min": min(p["corr"] for p in pairs),
            "max_abs_diff": max(p["max_abs_diff"] for p in pairs),
            "per_input": {n: p for n, p in zip(names, pairs)}}


def measure_fidelity(official: "nn.Module", model: "nn.Module", fp32_bytes: bytes,
                     fp16_bytes: bytes, width: int, height: int, seed: int = 0,
                     int8_bytes: bytes | None = None) -> dict[str, Any]:
    """LiteRT (fp32, fp16 and, when given, int8 weights) and the rewritten torch graph vs the
    official model at the same size, for depth and (when exported) confidence: the depth
    figures at the top level of each entry, the confidence's under ``"confidence"``."""
    inputs = fidelity_inputs(width, height, seed)
    names, xs = list(inputs), list(inputs.values())
    ref = [torch_forward(official, x) for x in xs]
    runs = {"torch_rewritten": [torch_forward(model, x) for x in xs],
            "litert_fp32": run_litert(fp32_bytes, xs), "litert_fp16": run_litert(fp16_bytes, xs)}
    if int8_bytes is not None:
        runs["litert_int8"] = run_litert(int8_bytes, xs)
    pairs = [(key, ref, runs[key]) for key in runs]
    pairs += [("litert_fp32_vs_rewritten", runs["torch_rewritten"], runs["litert_fp32"]),
              ("fp32_vs_fp16", runs["litert_fp32"], runs["litert_fp16"])]
    if int8_bytes is not None:
        pairs.append(("fp32_vs_int8", runs["litert_fp32"], runs["litert_int8"]))
    outputs = OUTPUT_NAMES[:len(ref[0])]
    official_keys = " and ".join(("depth", "depth_conf")[:len(outputs)])
    report: dict[str, Any] = {
        "reference": f"official DepthAnything3Net.forward (PyTorch, fp32) at {width}x{height}, "
                     f"one view: {official_keys}",
        "inputs": names, "outputs": list(outputs),
        "reference_range": [float(min(r[0].min() for r in ref)),
                            float(max(r[0].max() for r in ref))],
    }
    for key, a, b in pairs:
        per_output = [_summarise([compare(x[i], y[i]) for x, y in zip(a, b)], names)
                      for i in range(len(outputs))]
        report[key] = per_output[0]
        if len(per_output) > 1:
            report[key]["confidence"] = per_output[1]
    return report


FIDELITY_LINES = (
    ("torch_rewritten", "rewritten PyTorch vs official"),
    ("litert_fp32", "LiteRT fp32 weights vs official"),
    ("litert_fp16", "LiteRT fp16 weights vs official"),
    ("litert_fp32_vs_rewritten", "LiteRT fp32 vs rewritten (conversion)"),
    ("fp32_vs_fp16", "LiteRT fp32 vs fp16 weights"),
    ("litert_int8", "LiteRT int8 weights vs official"),
    ("fp32_vs_int8", "LiteRT fp32 vs int8 weights"),
)


def format_report(report: dict[str, Any]) -> str:
    """The report as a few human-readable lines."""
    outputs = report.get("outputs") or {"output": report["output_shape"]}
    lines = [f"{report['file']}: {report['size_mb']:.1f} MB, {report['weights_dtype']} weights, "
             f"input {report['input_shape']} -> "
             f"{', '.join(f'{name} {shape}' for name, shape in outputs.items())}, "
             f"{'GPU-clean' if report['gpu_clean'] else 'CPU'} build, weights {report['weights']}"]
    fid = report.get("fidelity")
    if fid:
        lines.append(f"fidelity vs {fid['reference']} on {len(fid['inputs'])} inputs "
                     f"({', '.join(fid['inputs'])}); depth range {fid['reference_range'][0]:.4g}"
                     f"..{fid['reference_range'][1]:.4g}:")
        for key, label in ((k, v) for k, v in FIDELITY_LINES if k in fid):
            lines.append(f"  {label:<38} corr {fid[key]['corr_min']:.6f} (min)   "
                         f"max abs diff {fid[key]['max_abs_diff']:.3g}")
            conf = fid[key].get("confidence")
            if conf:
                lines.append(f"  {'  confidence':<38} corr {conf['corr_min']:.6f} (min)   "
                             f"max abs diff {conf['max_abs_diff']:.3g}")
    ops = report["ops"]
    top = ", ".join(f"{k} {v}" for k, v in list(ops["histogram"].items())[:12])
    bad = ", ".join(f"{k} {v}" for k, v in ops["gpu_unfriendly"].items())
    lines.append(f"ops: {ops['total']} ({top}, ...); max tensor rank {ops['max_tensor_rank']}")
    lines.append(f"GPU-unfriendly op counts: {bad}")
    t = report["timing_s"]
    lines.append("time: " + ", ".join(f"{k} {v:.0f} s" for k, v in t.items()))
    return "\n".join(lines)


