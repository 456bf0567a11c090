# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""From torch module to LiteRT flatbuffer and back: litert-torch conversion, weight precision
(fp16 cast, int8 dynamic range), atomic writes, and reading a file's signature, outputs and
operator histogram with the LiteRT runtime. torch is imported only by the converting functions,
so readers such as ``tools/bench/model_check.py`` can use the rest without it."""

from __future__ import annotations

import os
import tempfile
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

if TYPE_CHECKING:  # pragma: no cover - type hints only
    import numpy as np
    import torch
    from torch import nn

# Op kinds the model card's GPU-clean build must not contain (see docs/landscape.md).
GPU_UNFRIENDLY_OPS = ("GATHER", "GATHER_ND", "TRANSPOSE_CONV", "BROADCAST_TO", "SELECT_V2")


def convert(model: "nn.Module", sample: "torch.Tensor") -> bytes:
    """litert-torch conversion with fp32 weights and float32 I/O; the flatbuffer bytes."""
    import litert_torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        edge = litert_torch.convert(model.eval(), (sample,))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "model.tflite"
        edge.export(str(path))
        return path.read_bytes()


def to_fp16_weights(model_bytes: bytes) -> bytes:
    """fp16 weights (float32 I/O and compute): the ai-edge-quantizer FLOAT_CAST recipe that
    litert-torch applies for ``full_fp16_recipe``, run on the already converted graph."""
    from litert_torch.generative.quantize import quant_recipes
    from litert_torch.quantize import translate_recipe

    recipe = translate_recipe.translate_to_ai_edge_recipe(
        quant_recipes.full_fp16_recipe().generative_recipe)
    return bytes(translate_recipe.quantize_model(model_bytes, recipe))


def to_int8_dynamic(model_bytes: bytes) -> bytes:
    """Dynamic-range int8 weights (per-channel, min-max; activations stay float and are
    quantised on the fly by the kernels): litert-torch's ``full_dynamic_recipe``, run on the
    already converted graph. A quarter of the fp32 size; XNNPACK runs the int8 matmuls."""
    from litert_torch.generative.quantize import quant_recipes
    from litert_torch.quantize import translate_recipe

    recipe = translate_recipe.translate_to_ai_edge_recipe(
        quant_recipes.full_dynamic_recipe().generative_recipe)
    return bytes(translate_recipe.quantize_model(model_bytes, recipe))


WEIGHT_DTYPES = ("fp32", "fp16", "int8")


def with_weights(model_bytes: bytes, dtype: str) -> bytes:
    """The fp32-weight flatbuffer with ``dtype`` weights ('fp32' | 'fp16' | 'int8')."""
    if dtype == "fp16":
        return to_fp16_weights(model_bytes)
    if dtype == "int8":
        return to_int8_dynamic(model_bytes)
    if dtype == "fp32":
        return model_bytes
    raise ValueError(f"weights '{dtype}' unknown; allowed: {', '.join(WEIGHT_DTYPES)}")


def write_atomic(path: Path, data: bytes) -> None:
    """Write under a temporary name, then rename: no truncated model on interruption."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".part")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def run_litert(model_bytes: bytes, inputs: Sequence["np.ndarray"]) -> list[list["np.ndarray"]]:
    """Run the flatbuffer with the LiteRT Interpreter (CPU, XNNPACK) on each input: per input,
    every output in the graph's order (the order the node's runners return them in)."""
    from ai_edge_litert.interpreter import Interpreter

    interp = Interpreter(model_content=model_bytes)
    interp.allocate_tensors()
    inp, outs = interp.get_input_details()[0], interp.get_output_details()
    results = []
    for x in inputs:
        interp.set_tensor(inp["index"], x)
        interp.invoke()
        results.append([interp.get_tensor(out["index"]).copy() for out in outs])
    return results


def litert_output_names(model_bytes: bytes) -> list[str]:
    """The SignatureDef's name of each output, in the graph's order (the SignatureDef itself
    lists them alphabetically)."""
    from ai_edge_litert import schema_py_generated as fb

    model = fb.Model.GetRootAs(model_bytes, 0)
    by_tensor = {}
    for s in range(model.SignatureDefsLength()):
        sig = model.SignatureDefs(s)
        for o in range(sig.OutputsLength()):
            by_tensor[sig.Outputs(o).TensorIndex()] = sig.Outputs(o).Name().decode()
    graph = model.Subgraphs(0)
    return [by_tensor.get(int(i), "") for i in graph.OutputsAsNumpy()]


def litert_signature(model_bytes: bytes) -> tuple[list[list[int]], list[list[int]]]:
    """Input and output shapes as LiteRT reports them."""
    from ai_edge_litert.interpreter import Interpreter

    interp = Interpreter(model_content=model_bytes)
    return ([list(map(int, d["shape"])) for d in interp.get_input_details()],
            [list(map(int, d["shape"])) for d in interp.get_output_details()])


def op_histogram(model_bytes: bytes) -> dict[str, Any]:
    """Operator counts by name, the largest tensor rank and the fp16 weight count, read from
    the flatbuffer (``ai_edge_litert.schema_py_generated``)."""
    from ai_edge_litert import schema_py_generated as fb

    names = {v: k for k, v in vars(fb.BuiltinOperator).items() if not k.startswith("_")}
    model = fb.Model.GetRootAs(model_bytes, 0)
    hist: dict[str, int] = {}
    max_rank, fp16, int8 = 0, 0, 0
    for s in range(model.SubgraphsLength()):
        graph = model.Subgraphs(s)
        for i in range(graph.OperatorsLength()):
            code = model.OperatorCodes(graph.Operators(i).OpcodeIndex())
            op = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
            name = names.get(op, str(op))
            if name == "CUSTOM":
                name = f"CUSTOM:{code.CustomCode().decode()}"
            hist[name] = hist.get(name, 0) + 1
        for t in range(graph.TensorsLength()):
            tensor = graph.Tensors(t)
            max_rank = max(max_rank, tensor.ShapeLength())
            fp16 += tensor.Type() == fb.TensorType.FLOAT16
            int8 += tensor.Type() == fb.TensorType.INT8
    hist = dict(sorted(hist.items(), key=lambda kv: (-kv[1], kv[0])))
    return {"histogram": hist, "total": sum(hist.values()), "max_tensor_rank": max_rank,
            "fp16_tensors": fp16, "int8_tensors": int8,
            "gpu_unfriendly": {k: hist.get(k, 0) for k in GPU_UNFRIENDLY_OPS}}
