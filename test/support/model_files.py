# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Model files the loader must check before they run: quantised inputs and outputs, dynamic
sizes, odd dtypes. Written with the TFLite schema (models/make_test_models.py's GraphBuilder),
no TensorFlow. Each computes the stand-in depth law of make_test_models (2 + 0.5 r + 0.25 g +
0.125 b of its float input), so tests can write the truth out themselves.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np
from ai_edge_litert import schema_py_generated as fb

from support.common import load_test_model_maker

WEIGHTS, BIAS = (0.5, 0.25, 0.125), 2.0
TYPES = {"float32": fb.TensorType.FLOAT32, "float16": fb.TensorType.FLOAT16,
         "uint8": fb.TensorType.UINT8, "int8": fb.TensorType.INT8,
         "int16": fb.TensorType.INT16, "int32": fb.TensorType.INT32}
# Op versions by the type they convert (the builtin resolver's minimum for each).
_VERSIONS = {"uint8": 1, "int8": 2, "int16": 4, "float16": 3, "int32": 1}


def _quantised(g, name: str, shape: Sequence[int], dtype: str,
               scales: Sequence[float] = (), zero_points: Sequence[int] = (),
               dimension: int = 0, signature: Sequence[int] | None = None) -> int:
    index = g.tensor(name, shape)
    tensor = g.tensors[index]
    tensor.type = TYPES[dtype]
    if signature is not None:
        tensor.shapeSignature = list(signature)
    if scales:
        quant = fb.QuantizationParametersT()
        quant.scale, quant.zeroPoint = list(scales), list(zero_points)
        quant.quantizedDimension = dimension
        tensor.quantization = quant
    return index


def build_io_model(height: int, width: int, input_dtype: str = "float32",
                   input_quant: tuple = ((), ()),
                   output_dtype: str = "float32",
                   output_quant: tuple = ((), ()),
                   dynamic: str = "", description: str = "a depth network"):
    """NHWC [1,H,W,3] image -> [1,H,W,1] depth = 2 + 0.5 x_r + 0.25 x_g + 0.125 x_b, where
    x is the input's float value (dequantised with its scale and zero point, or cast); the
    output quantised or cast to ``output_dtype``. ``dynamic``: "placeholder" stores
    [1,1,1,3] with signature [1,-1,-1,3], as TF's converter writes a dynamic size; "sized"
    stores [1,H,W,3] with that signature; "batch": signature [-1,H,W,3]."""
    mk = load_test_model_maker()
    g = mk.GraphBuilder()
    shape = (1, 1, 1, 3) if dynamic == "placeholder" else (1, height, width, 3)
    plane = shape[:3] + (1,)
    signature = {"placeholder": (1, -1, -1, 3), "sized": (1, -1, -1, 3),
                 "batch": (-1, height, width, 3)}.get(dynamic)
    image = _quantised(g, "image", shape, input_dtype, *input_quant, signature=signature)
    x = image
    if input_dtype != "float32":
        x = g.tensor("image/float", shape)
        g.op(fb.BuiltinOperator.DEQUANTIZE, [image], [x], version=_VERSIONS[input_dtype])
    wt = g.const("depth/weights", np.reshape(WEIGHTS, (1, 1, 1, 3)))
    scaled = g.binary(fb.BuiltinOperator.MUL, x, wt, "depth/weighted", shape)
    summed = g.reduce(fb.BuiltinOperator.SUM, scaled, [3], True, "depth/sum", plane)
    name = "depth" if output_dtype == "float32" else "depth/float"
    depth = g.binary(fb.BuiltinOperator.ADD, summed,
                     g.const("depth/bias", np.full((1, 1, 1, 1), BIAS)), name, plane)
    if signature is not None:
        g.tensors[depth].shapeSignature = list(signature[:3]) + [1]
    if output_dtype != "float32":
        out = _quantised(g, "depth", plane, output_dtype, *output_quant)
        g.op(fb.BuiltinOperator.QUANTIZE if output_dtype in ("uint8", "int8", "int16")
             else fb.BuiltinOperator.CAST, [depth], [out], version=_VERSIONS[output_dtype])
        depth = out
    return g.model([image], [depth], f"dense_perception test model: {description}")


def write_io_model(path: str | Path, height: int, width: int, **kwargs) -> Path:
    """Write :func:`build_io_model` to ``path``."""
    return load_test_model_maker()._write(build_io_model(height, width, **kwargs), path)


def quantise(values: np.ndarray, scale: float, zero_point: int, dtype: str) -> np.ndarray:
    """TFLite's affine quantisation, written out: round(x / scale) + zero point, clipped."""
    info = np.iinfo(dtype)
    codes = np.floor(np.asarray(values, np.float64) / scale + 0.5) + zero_point
    return np.clip(codes, info.min, info.max).astype(dtype)


def dequantise(codes: np.ndarray, scale: float, zero_point: int) -> np.ndarray:
    """(q - zero point) * scale, in float64."""
    return (np.asarray(codes, np.float64) - zero_point) * scale


def run_file(path: str | Path, x: np.ndarray) -> list[np.ndarray]:
    """The file's own raw outputs for the raw input ``x`` (LiteRT's Interpreter, no delegate
    of ours): the independent side of each comparison."""
    from ai_edge_litert.interpreter import Interpreter
    interp = Interpreter(model_path=str(path))
    interp.allocate_tensors()
    interp.set_tensor(interp.get_input_details()[0]["index"], x)
    interp.invoke()
    return [interp.get_tensor(d["index"]).copy() for d in interp.get_output_details()]
