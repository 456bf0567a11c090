#!/usr/bin/env python3
# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Write tiny ``.tflite`` stand-ins for the real dense-perception models.

Each model has the exact input/output signature of a real model but computes a
simple closed-form function, so tests can predict every output value:

* ``test_da3_small.tflite`` (Depth Anything 3 Small signature)
    input  ``image`` float32 [1,3,896,504] NCHW (ImageNet-normalised RGB)
    output ``depth`` float32 [1,1,896,504] = 3 + 0.5*x[0] + 0.25*x[1] + 0.125*x[2]

* ``test_da3_small_confidence.tflite`` (DA3 as ``export-da3`` writes it, with its confidence)
    the same input and ``depth`` output, then
    output ``confidence`` float32 [1,1,896,504] = 1 + exp(x[2]) (DA3's own activation,
    exp + 1: values >= 1, here set by the normalised blue channel alone)

* ``test_tipsv2_b14_dpt.tflite`` (TIPSv2-B14-DPT signature)
    input  ``image`` float32 [1,3,448,448] NCHW RGB in [0, 1]
    output 0 ``depth``   [1,1,448,448]   = 0.5 + 2r + g + 0.5b
    output 1 ``normals`` [1,3,448,448]   = normalize(2r-1, 2g-1, -1)
    output 2 ``segmentation_logits`` [1,150,256,256]:
        v = bilinear resize of b to 256x256 (half-pixel centres),
        logits[k] = -(149*v - k)^2 (fp16-safe: near 0 at the argmax),
        hence argmax_k = round(149*v).

The flatbuffers are written directly with the TFLite schema object API shipped
in ``ai-edge-litert`` (``ai_edge_litert.schema_py_generated``, present in 1.4
and 2.x) plus ``flatbuffers``; no TensorFlow/torch needed. Only long-standing builtin
ops at their minimal versions are used, so older runtimes (ai-edge-litert 1.4)
load them too, and every model carries a ``serving_default`` SignatureDef so the
LiteRT ``CompiledModel`` API can run it.

``write_depth_model`` writes a stand-in for any single-image depth network
(``model_type: depth``), NHWC or NCHW, at a size a test chooses; tests write it themselves.

The graph builder itself (``GraphBuilder``) is in ``tflite_graph.py`` beside this script.

Usage: ``python models/make_test_models.py [--out-dir models]``
"""

from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path
from typing import Sequence

import flatbuffers
import numpy as np
from ai_edge_litert import schema_py_generated as fb


def _load_graph_module():
    """Import tflite_graph.py from this folder (models/ is a folder of files, not a package,
    and tests load this script by its path)."""
    spec = importlib.util.spec_from_file_location("tflite_graph",
                                                  Path(__file__).with_name("tflite_graph.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


GraphBuilder = _load_graph_module().GraphBuilder

DA3_INPUT_SHAPE = (1, 3, 896, 504)
DA3_FILENAME = "test_da3_small.tflite"
DA3_WEIGHTS = (0.5, 0.25, 0.125)
DA3_BIAS = 3.0
DA3_CONFIDENCE_FILENAME = "test_da3_small_confidence.tflite"
DA3_CONFIDENCE_CHANNEL = 2  # confidence = 1 + exp(x[2]), x ImageNet-normalised

TIPS_INPUT_SHAPE = (1, 3, 448, 448)
TIPS_FILENAME = "test_tipsv2_b14_dpt.tflite"
TIPS_DEPTH_WEIGHTS = (2.0, 1.0, 0.5)
TIPS_DEPTH_BIAS = 0.5
TIPS_NUM_CLASSES = 150
TIPS_SEG_SIZE = 256


def _channel_affine(g: GraphBuilder, x: int, shape: Sequence[int], weights: Sequence[float],
                    bias: float, name: str) -> int:
    """out[:, 0] = bias + sum_c weights[c] * x[:, c] for an NCHW tensor (MUL, SUM, ADD)."""
    n, c, h, w = shape
    wt = g.const(f"{name}/channel_weights", np.reshape(weights, (1, c, 1, 1)))
    scaled = g.binary(fb.BuiltinOperator.MUL, x, wt, f"{name}/weighted", shape)
    summed = g.reduce(fb.BuiltinOperator.SUM, scaled, [1], True, f"{name}/channel_sum",
                      (n, 1, h, w))
    b = g.const(f"{name}/bias", np.full((1, 1, 1, 1), bias))
    return g.binary(fb.BuiltinOperator.ADD, summed, b, name, (n, 1, h, w))


def _write(model: fb.ModelT, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    builder = flatbuffers.Builder(1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    path.write_bytes(builder.Output())
    return path


def build_da3_model() -> fb.ModelT:
    """Depth Anything 3 Small stand-in: depth = 3 + 0.5 x0 + 0.25 x1 + 0.125 x2."""
    g = GraphBuilder()
    image = g.tensor("image", DA3_INPUT_SHAPE)
    depth = _channel_affine(g, image, DA3_INPUT_SHAPE, DA3_WEIGHTS, DA3_BIAS, "depth")
    return g.model([image], [depth], "dense_perception test model: DA3-Small signature")


def build_da3_confidence_model() -> fb.ModelT:
    """DA3 with its confidence, as export-da3 writes it: outputs (depth, confidence), depth as
    :func:`build_da3_model`, confidence = 1 + exp(x[2])."""
    g = GraphBuilder()
    image = g.tensor("image", DA3_INPUT_SHAPE)
    depth = _channel_affine(g, image, DA3_INPUT_SHAPE, DA3_WEIGHTS, DA3_BIAS, "depth")
    one_hot = [1.0 if c == DA3_CONFIDENCE_CHANNEL else 0.0 for c in range(3)]
    logit = _channel_affine(g, image, DA3_INPUT_SHAPE, one_hot, 0.0, "confidence/logit")
    plane = (1, 1) + DA3_INPUT_SHAPE[2:]
    exp = g.tensor("confidence/exp", plane)
    g.op(fb.BuiltinOperator.EXP, [logit], [exp])
    confidence = g.binary(fb.BuiltinOperator.ADD, exp, g.const("confidence/one", [[[[1.0]]]]),
                          "confidence", plane)
    return g.model([image], [depth, confidence],
                   "dense_perception test model: DA3-Small signature with its confidence")


def build_tipsv2_model() -> fb.ModelT:
    """TIPSv2-B14-DPT stand-in with outputs (depth, normals, segmentation_logits)."""
    g = GraphBuilder()
    mul, add = fb.BuiltinOperator.MUL, fb.BuiltinOperator.ADD
    n, c, h, w = shape = TIPS_INPUT_SHAPE
    plane = (n, 1, h, w)
    image = g.tensor("image", shape)

    depth = _channel_affine(g, image, shape, TIPS_DEPTH_WEIGHTS, TIPS_DEPTH_BIAS, "depth")

    # normals = v / |v| with v = (2r - 1, 2g - 1, -1)
    scale = g.const("normals/scale", np.reshape([2.0, 2.0, 0.0], (1, 3, 1, 1)))
    offset = g.const("normals/offset", np.full((1, 3, 1, 1), -1.0))
    v = g.binary(add, g.binary(mul, image, scale, "normals/scaled", shape), offset,
                 "normals/unnormalized", shape)
    sq = g.binary(mul, v, v, "normals/squared", shape)
    norm2 = g.reduce(fb.BuiltinOperator.SUM, sq, [1], True, "normals/norm2", plane)
    inv = g.tensor("normals/inv_norm", plane)
    g.op(fb.BuiltinOperator.RSQRT, [norm2], [inv])
    normals = g.binary(mul, v, inv, "normals", shape)

    # segmentation: blue plane -> NHWC view -> bilinear 256x256 -> per-class affine
    s = TIPS_SEG_SIZE
    blue = g.tensor("segmentation/blue", plane)
    g.op(fb.BuiltinOperator.SLICE, [image, g.const("segmentation/begin", [0, 2, 0, 0], np.int32),
                                     g.const("segmentation/size", list(plane), np.int32)], [blue])
    blue_nhwc = g.reshape(blue, "segmentation/blue_nhwc", (n, h, w, 1))
    resized = g.tensor("segmentation/resized", (n, s, s, 1))
    opts = fb.ResizeBilinearOptionsT()
    opts.alignCorners, opts.halfPixelCenters = False, True
    out_size = g.const("segmentation/out_size", [s, s], np.int32)
    g.op(fb.BuiltinOperator.RESIZE_BILINEAR, [blue_nhwc, out_size], [resized], opts,
         fb.BuiltinOptions.ResizeBilinearOptions, version=3)  # v3: half_pixel_centers
    v_seg = g.reshape(resized, "segmentation/v", (n, 1, s, s))
    # logits[k] = -(149 (v - k/149))^2: the winner's logit is near 0 and its rival's within
    # -1, so the argmax survives fp16 GPU arithmetic (the former 2*149*k*v - k*k reached 22201,
    # where fp16 steps by 16 and the argmax was lost). Subtract first, then scale: no
    # cancellation of large products.
    top = TIPS_NUM_CLASSES - 1
    k = np.arange(TIPS_NUM_CLASSES, dtype=np.float32).reshape(1, -1, 1, 1)
    logits_shape = (n, TIPS_NUM_CLASSES, s, s)
    centred = g.binary(add, v_seg, g.const("segmentation/minus_centre", -k / top),
                       "segmentation/centred", logits_shape)
    scaled = g.binary(mul, centred, g.const("segmentation/bins", [float(top)]),
                      "segmentation/distance", logits_shape)
    squared = g.binary(mul, scaled, scaled, "segmentation/squared", logits_shape)
    logits = g.binary(mul, squared, g.const("segmentation/negate", [-1.0]),
                      "segmentation_logits", logits_shape)

    return g.model([image], [depth, normals, logits],
                   "dense_perception test model: TIPSv2-B14-DPT signature")


def build_signature_model(
    input_shapes: Sequence[Sequence[int]],
    output_shapes: Sequence[Sequence[int]],
    input_names: Sequence[str] | None = None,
    output_names: Sequence[str] | None = None,
) -> fb.ModelT:
    """Model with an arbitrary float32 signature: every output = mean(input 0).

    Each output tensor is FILLed with the scalar mean of the first input (other
    inputs are accepted but unused), so any shape combination is valid.
    """
    if not input_shapes:
        raise ValueError("need at least one input")
    input_names = list(input_names or [f"input_{i}" for i in range(len(input_shapes))])
    output_names = list(output_names or [f"output_{i}" for i in range(len(output_shapes))])
    g = GraphBuilder()
    inputs = [g.tensor(nm, shp) for nm, shp in zip(input_names, input_shapes)]
    all_axes = range(len(input_shapes[0]))
    mean = g.reduce(fb.BuiltinOperator.MEAN, inputs[0], all_axes, False, "mean", ())
    outputs = []
    for nm, shp in zip(output_names, output_shapes):
        out = g.tensor(nm, shp)
        dims = g.const(f"{nm}/dims", list(shp), np.int32)
        g.op(fb.BuiltinOperator.FILL, [dims, mean], [out], fb.FillOptionsT(),
             fb.BuiltinOptions.FillOptions)
        outputs.append(out)
    return g.model(inputs, outputs, "dense_perception test model: arbitrary signature")


DEPTH_WEIGHTS = (0.5, 0.25, 0.125)
DEPTH_BIAS = 2.0  # outputs stay > 0 for inputs in [-2, 2] (custom normalisations in tests)


def build_depth_model(height: int, width: int, layout: str = "NHWC",
                      coarse_first: bool = False, output_name: str = "depth") -> fb.ModelT:
    """A single-image depth network stand-in (``model_type: depth``): one RGB input
    ([1,H,W,3] NHWC or [1,3,H,W] NCHW) and one plane at its resolution ([1,H,W,1] or
    [1,1,H,W]) = 2 + 0.5 x_r + 0.25 x_g + 0.125 x_b, the input as normalised by the caller.
    ``coarse_first``: a [1,H/2,W/2,1] output (the plane, bilinear, half-pixel centres) comes
    first, as in multi-scale networks, so a default depth_output must skip it.
    ``output_name``: the plane's tensor name (e.g. "inverse_depth" for a network whose
    output is read as 1/depth)."""
    g = GraphBuilder()
    if layout == "NCHW":
        shape = (1, 3, height, width)
        image = g.tensor("image", shape)
        depth = _channel_affine(g, image, shape, DEPTH_WEIGHTS, DEPTH_BIAS, output_name)
    else:
        shape = (1, height, width, 3)
        image = g.tensor("image", shape)
        wt = g.const("depth/channel_weights", np.reshape(DEPTH_WEIGHTS, (1, 1, 1, 3)))
        scaled = g.binary(fb.BuiltinOperator.MUL, image, wt, "depth/weighted", shape)
        summed = g.reduce(fb.BuiltinOperator.SUM, scaled, [3], True, "depth/channel_sum",
                          (1, height, width, 1))
        depth = g.binary(fb.BuiltinOperator.ADD, summed,
                         g.const("depth/bias", np.full((1, 1, 1, 1), DEPTH_BIAS)), output_name,
                         (1, height, width, 1))
    outputs = [depth]
    if coarse_first:
        plane = g.reshape(depth, "coarse/plane", (1, height, width, 1)) if layout == "NCHW" \
            else depth
        coarse = g.tensor("coarse", (1, height // 2, width // 2, 1))
        opts = fb.ResizeBilinearOptionsT()
        opts.alignCorners, opts.halfPixelCenters = False, True
        size = g.const("coarse/size", [height // 2, width // 2], np.int32)
        g.op(fb.BuiltinOperator.RESIZE_BILINEAR, [plane, size], [coarse], opts,
             fb.BuiltinOptions.ResizeBilinearOptions, version=3)
        outputs = [coarse, depth]
    return g.model([image], outputs, f"dense_perception test model: a {layout} depth network")


def write_depth_model(path: str | Path, height: int, width: int, layout: str = "NHWC",
                      coarse_first: bool = False, output_name: str = "depth") -> Path:
    """Write :func:`build_depth_model` to ``path``."""
    return _write(build_depth_model(height, width, layout, coarse_first, output_name), path)


def write_signature_model(
    path: str | Path,
    input_shapes: Sequence[Sequence[int]],
    output_shapes: Sequence[Sequence[int]],
    input_names: Sequence[str] | None = None,
    output_names: Sequence[str] | None = None,
) -> Path:
    """Write :func:`build_signature_model` to ``path`` (e.g. for unknown-signature tests)."""
    model = build_signature_model(input_shapes, output_shapes, input_names, output_names)
    return _write(model, path)


def write_da3_model(path: str | Path) -> Path:
    """Write the DA3-Small stand-in model to ``path``."""
    return _write(build_da3_model(), path)


def write_da3_confidence_model(path: str | Path) -> Path:
    """Write the DA3-Small stand-in with a confidence output to ``path``."""
    return _write(build_da3_confidence_model(), path)


def write_tipsv2_model(path: str | Path) -> Path:
    """Write the TIPSv2-B14-DPT stand-in model to ``path``."""
    return _write(build_tipsv2_model(), path)


def write_all(out_dir: str | Path) -> list[Path]:
    """Write the test models into ``out_dir`` and return their paths."""
    out_dir = Path(out_dir)
    return [write_da3_model(out_dir / DA3_FILENAME),
            write_da3_confidence_model(out_dir / DA3_CONFIDENCE_FILENAME),
            write_tipsv2_model(out_dir / TIPS_FILENAME)]


# --- numpy references ----------------------------------------------------------
def da3_reference(x_nchw: np.ndarray) -> np.ndarray:
    """Expected DA3 stand-in output: float32 [N,1,H,W] depth."""
    x = np.asarray(x_nchw, dtype=np.float64)
    w = np.reshape(DA3_WEIGHTS, (1, 3, 1, 1))
    return (DA3_BIAS + (x * w).sum(axis=1, keepdims=True)).astype(np.float32)


def da3_confidence_reference(x_nchw: np.ndarray) -> np.ndarray:
    """Expected confidence of the DA3 stand-in with confidence: float32 [N,1,H,W]."""
    x = np.asarray(x_nchw, dtype=np.float64)
    channel = x[:, DA3_CONFIDENCE_CHANNEL:DA3_CONFIDENCE_CHANNEL + 1]
    return (1.0 + np.exp(channel)).astype(np.float32)


def resize_bilinear_half_pixel(img: np.ndarray, out_h: int, out_w: int) -> np.ndarray:
    """Bilinear resize of the last two axes (align_corners=False, half-pixel centres).

    Matches TFLite RESIZE_BILINEAR(half_pixel_centers=True) and
    ``cv2.resize(..., interpolation=cv2.INTER_LINEAR)`` for scale factors < 2.
    """
    def axis(n_in: int, n_out: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        src = np.clip((np.arange(n_out) + 0.5) * (n_in / n_out) - 0.5, 0, n_in - 1)
        i0 = np.floor(src).astype(np.int64)
        return i0, np.minimum(i0 + 1, n_in - 1), src - i0

    img = np.asarray(img, dtype=np.float64)
    y0, y1, fy = axis(img.shape[-2], out_h)
    x0, x1, fx = axis(img.shape[-1], out_w)
    rows = img[..., y0, :] * (1 - fy)[:, None] + img[..., y1, :] * fy[:, None]
    return rows[..., x0] * (1 - fx) + rows[..., x1] * fx


def tipsv2_reference(x_nchw: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Expected TIPSv2 stand-in outputs.

    Returns ``(depth [N,1,H,W] float32, normals [N,3,H,W] float32,
    labels [N,256,256] int64)`` where labels = argmax over the 150 logits,
    i.e. round(149*v) clipped to 0..149 (exact .5 ties resolve downwards,
    like argmax; float32 rounding in the model may flip labels within ~1e-3
    of a tie).
    """
    x = np.asarray(x_nchw, dtype=np.float64)
    r, g, b = x[:, 0:1], x[:, 1:2], x[:, 2:3]
    depth = TIPS_DEPTH_BIAS + sum(wc * ch for wc, ch in zip(TIPS_DEPTH_WEIGHTS, (r, g, b)))
    v = np.concatenate([2 * r - 1, 2 * g - 1, -np.ones_like(b)], axis=1)
    normals = v / np.linalg.norm(v, axis=1, keepdims=True)
    seg = resize_bilinear_half_pixel(b[:, 0], TIPS_SEG_SIZE, TIPS_SEG_SIZE)
    top = TIPS_NUM_CLASSES - 1
    labels = np.clip(np.ceil(top * seg - 0.5), 0, top).astype(np.int64)
    return depth.astype(np.float32), normals.astype(np.float32), labels


def main(argv: Sequence[str] | None = None) -> None:
    """CLI entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out-dir", type=Path, default=Path(__file__).resolve().parent,
                        help="output directory (default: this script's directory)")
    args = parser.parse_args(argv)
    for path in write_all(args.out_dir):
        print(f"wrote {path} ({path.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
