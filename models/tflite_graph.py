# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""A minimal TFLite flatbuffer writer for the bundled stand-in models (make_test_models.py).

It builds one subgraph with the TFLite schema object API shipped in ``ai-edge-litert``
(``ai_edge_litert.schema_py_generated``) and gives every model a ``serving_default``
SignatureDef, so the LiteRT ``CompiledModel`` API can run it; no TensorFlow needed.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from ai_edge_litert import schema_py_generated as fb

SIGNATURE_KEY = "serving_default"

_NUMPY_TO_TFLITE = {
    np.dtype(np.float32): fb.TensorType.FLOAT32,
    np.dtype(np.int32): fb.TensorType.INT32,
}


class _AlignedBufferT(fb.BufferT):
    """BufferT whose data is packed 16-byte aligned (the schema's force_align)."""

    def Pack(self, builder):  # noqa: N802 (flatbuffers naming)
        data = None
        if self.data is not None:
            raw = bytes(self.data)
            builder.StartVector(1, len(raw), 16)
            builder.head -= len(raw)
            builder.Bytes[builder.head : builder.head + len(raw)] = raw
            data = builder.EndVector()
        fb.BufferStart(builder)
        if data is not None:
            fb.BufferAddData(builder, data)
        return fb.BufferEnd(builder)


class GraphBuilder:
    """Minimal single-subgraph TFLite model builder."""

    def __init__(self) -> None:
        self.tensors: list[fb.TensorT] = []
        self.buffers: list[fb.BufferT] = [fb.BufferT()]  # buffer 0: empty sentinel
        self.operators: list[fb.OperatorT] = []
        self.opcodes: list[fb.OperatorCodeT] = []

    def tensor(self, name: str, shape: Sequence[int], dtype: type = np.float32) -> int:
        """Add a runtime (activation/input) tensor and return its index."""
        t = fb.TensorT()
        t.name, t.shape, t.type, t.buffer = name, list(shape), _NUMPY_TO_TFLITE[np.dtype(dtype)], 0
        self.tensors.append(t)
        return len(self.tensors) - 1

    def const(self, name: str, value: np.ndarray | Sequence[float],
              dtype: type = np.float32) -> int:
        """Add a constant tensor holding ``value`` and return its index."""
        arr = np.ascontiguousarray(value, dtype=dtype)
        buf = _AlignedBufferT()
        buf.data = arr.astype(arr.dtype.newbyteorder("<")).tobytes()
        self.buffers.append(buf)
        idx = self.tensor(name, arr.shape, dtype)
        self.tensors[idx].buffer = len(self.buffers) - 1
        return idx

    def op(
        self,
        code: int,
        inputs: Sequence[int],
        outputs: Sequence[int],
        options: object | None = None,
        options_type: int = fb.BuiltinOptions.NONE,
        version: int = 1,
    ) -> None:
        """Append a builtin operator (op codes are de-duplicated per version)."""
        for i, oc in enumerate(self.opcodes):
            if oc.builtinCode == code and oc.version == version:
                break
        else:
            oc = fb.OperatorCodeT()
            oc.builtinCode, oc.deprecatedBuiltinCode, oc.version = code, min(code, 127), version
            self.opcodes.append(oc)
            i = len(self.opcodes) - 1
        o = fb.OperatorT()
        o.opcodeIndex, o.inputs, o.outputs = i, list(inputs), list(outputs)
        o.builtinOptionsType, o.builtinOptions = options_type, options
        self.operators.append(o)

    def model(self, inputs: Sequence[int], outputs: Sequence[int], description: str) -> fb.ModelT:
        """Assemble the model; the SignatureDef mirrors the subgraph I/O order."""
        sg = fb.SubGraphT()
        sg.tensors, sg.operators, sg.name = self.tensors, self.operators, "main"
        sg.inputs, sg.outputs = list(inputs), list(outputs)
        sig = fb.SignatureDefT()
        sig.signatureKey, sig.subgraphIndex = SIGNATURE_KEY, 0
        sig.inputs = [self._tensor_map(i) for i in inputs]
        sig.outputs = [self._tensor_map(i) for i in outputs]
        m = fb.ModelT()
        m.version, m.description = 3, description
        m.operatorCodes, m.subgraphs, m.buffers = self.opcodes, [sg], self.buffers
        m.signatureDefs = [sig]
        return m

    def _tensor_map(self, index: int) -> fb.TensorMapT:
        tm = fb.TensorMapT()
        tm.name, tm.tensorIndex = self.tensors[index].name, index
        return tm

    # --- small op helpers -------------------------------------------------
    def binary(self, code: int, a: int, b: int, name: str, shape: Sequence[int]) -> int:
        """MUL or ADD (numpy-style broadcasting, no fused activation)."""
        out = self.tensor(name, shape)
        if code == fb.BuiltinOperator.MUL:
            opts, kind = fb.MulOptionsT(), fb.BuiltinOptions.MulOptions
        else:
            opts, kind = fb.AddOptionsT(), fb.BuiltinOptions.AddOptions
        self.op(code, [a, b], [out], opts, kind)
        return out

    def reduce(self, code: int, x: int, axes: Sequence[int], keep_dims: bool, name: str,
               shape: Sequence[int]) -> int:
        """SUM or MEAN over constant ``axes``."""
        out = self.tensor(name, shape)
        opts = fb.ReducerOptionsT()
        opts.keepDims = keep_dims
        axes_t = self.const(f"{name}/axes", list(axes), np.int32)
        self.op(code, [x, axes_t], [out], opts, fb.BuiltinOptions.ReducerOptions)
        return out

    def reshape(self, x: int, name: str, shape: Sequence[int]) -> int:
        """RESHAPE to a static shape (given both as tensor and as option)."""
        out = self.tensor(name, shape)
        opts = fb.ReshapeOptionsT()
        opts.newShape = list(shape)
        shape_t = self.const(f"{name}/shape", list(shape), np.int32)
        self.op(fb.BuiltinOperator.RESHAPE, [x, shape_t], [out], opts,
                fb.BuiltinOptions.ReshapeOptions)
        return out
