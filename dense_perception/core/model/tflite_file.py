# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Read a .tflite file's signature and check its structure without handing it to LiteRT.

LiteRT trusts the flatbuffer it is given: a truncated or corrupt file can crash the process
(seen with ai-edge-litert 1.4.0). Walking the tables here first turns that into a clear error.
"""

from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass, replace
from pathlib import Path

from ai_edge_litert import schema_py_generated as fb

Shape = tuple[int, ...]


class CorruptModelError(ValueError):
    """The file is not a complete, well-formed TFLite flatbuffer."""


# The flatbuffer's tensor types by number, as numpy-style names ("float32", "uint8", ...).
DTYPE_NAMES = {v: k.lower() for k, v in vars(fb.TensorType).items() if not k.startswith("_")}


@dataclass(frozen=True)
class TensorInfo:
    """One input or output tensor as the file declares it.

    ``shape`` is the stored shape (what LiteRT allocates); ``shape_signature`` has -1 where a
    dimension is dynamic (the stored value is then a converter's placeholder, often 1).
    ``scales`` / ``zero_points``: the quantisation (empty when the tensor has none; several
    when it is per channel along ``quantized_dimension``)."""

    name: str
    shape: Shape
    shape_signature: Shape
    dtype: str
    scales: tuple[float, ...] = ()
    zero_points: tuple[int, ...] = ()
    quantized_dimension: int = 0

    @property
    def dynamic(self) -> bool:
        """Whether any dimension is dynamic (-1 in the signature)."""
        return any(d < 0 for d in self.shape_signature)


@dataclass(frozen=True)
class TfliteSignature:
    """The main subgraph's input and output shapes, in model order (the order the runners
    return outputs in); ``output_names``: each output's SignatureDef name where the file has
    one, else its tensor name. ``inputs`` / ``outputs``: each tensor's dtype, quantisation and
    dynamic dimensions; ``description`` and ``metadata`` (the names of the file's metadata
    entries) are what the file says of itself; ``path``: where it was read from."""

    input_shapes: list[Shape]
    output_shapes: list[Shape]
    operator_count: int
    file_size: int
    output_names: tuple[str, ...] = ()
    inputs: tuple[TensorInfo, ...] = ()
    outputs: tuple[TensorInfo, ...] = ()
    description: str = ""
    metadata: tuple[str, ...] = ()
    path: str = ""


def read_signature(path: str | Path) -> TfliteSignature:
    """Walk every table LiteRT will read; CorruptModelError if anything points outside the file."""
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
        try:
            return replace(_walk(buf), path=str(path))
        except (struct.error, IndexError, ValueError, TypeError) as exc:
            raise CorruptModelError(f"truncated or corrupt flatbuffer ({exc})") from None


def _walk(buf: mmap.mmap) -> TfliteSignature:
    size = len(buf)
    model = fb.Model.GetRootAs(buf, 0)
    if model.SubgraphsLength() < 1:
        raise ValueError("no subgraph")
    n_buffers = model.BuffersLength()
    n_opcodes = model.OperatorCodesLength()
    for b in range(n_buffers):
        buffer = model.Buffers(b)
        if buffer.Offset() > 1:  # large models keep weights after the flatbuffer
            if buffer.Offset() + buffer.Size() > size:
                raise ValueError(f"buffer {b} ends past the end of the file")
        elif buffer.DataLength():
            buffer.Data(buffer.DataLength() - 1)  # the last byte must be inside the file
    operators = 0
    for s in range(model.SubgraphsLength()):
        graph = model.Subgraphs(s)
        n_tensors = graph.TensorsLength()
        for t in range(n_tensors):
            tensor = graph.Tensors(t)
            tensor.ShapeAsNumpy()
            if tensor.Buffer() >= max(n_buffers, 1):
                raise ValueError(f"tensor {t} refers to a missing buffer")
        for o in range(graph.OperatorsLength()):
            op = graph.Operators(o)
            if op.OpcodeIndex() >= n_opcodes:
                raise ValueError(f"operator {o} has an unknown opcode")
            for i in list(op.InputsAsNumpy()) + list(op.OutputsAsNumpy()):
                if i >= n_tensors:
                    raise ValueError(f"operator {o} refers to a missing tensor")
        operators += graph.OperatorsLength()
    main = model.Subgraphs(0)

    inputs = tuple(_tensor_info(main.Tensors(int(i))) for i in main.InputsAsNumpy())
    outputs = tuple(_tensor_info(main.Tensors(int(i))) for i in main.OutputsAsNumpy())
    metadata = tuple(_text(model.Metadata(m).Name()) for m in range(model.MetadataLength()))
    return TfliteSignature([t.shape for t in inputs], [t.shape for t in outputs],
                           operators, size, _output_names(model, main), inputs, outputs,
                           _text(model.Description()), metadata)


def _text(name: bytes | None) -> str:
    return (name or b"").decode("utf-8", "replace")


def _tensor_info(tensor: fb.Tensor) -> TensorInfo:
    shape = tuple(int(d) for d in tensor.ShapeAsNumpy()) if tensor.ShapeLength() else ()
    signature = tuple(int(d) for d in tensor.ShapeSignatureAsNumpy()) \
        if tensor.ShapeSignatureLength() else shape
    scales: tuple[float, ...] = ()
    zero_points: tuple[int, ...] = ()
    dimension = 0
    quant = tensor.Quantization()
    if quant is not None:
        if quant.ScaleLength():
            scales = tuple(float(v) for v in quant.ScaleAsNumpy())
        if quant.ZeroPointLength():
            zero_points = tuple(int(v) for v in quant.ZeroPointAsNumpy())
        dimension = int(quant.QuantizedDimension())
    return TensorInfo(_text(tensor.Name()), shape, signature,
                      DTYPE_NAMES.get(tensor.Type(), f"type {tensor.Type()}"), scales,
                      zero_points, dimension)


def _output_names(model: fb.Model, main: fb.SubGraph) -> tuple[str, ...]:
    """Names of the main subgraph's outputs, in its order: the SignatureDef's (an exporter's
    own names, e.g. "depth", "confidence") where it names that tensor, else the tensor's."""
    by_tensor: dict[int, str] = {}
    for s in range(model.SignatureDefsLength()):
        signature = model.SignatureDefs(s)
        if signature.SubgraphIndex() != 0:
            continue
        for o in range(signature.OutputsLength()):
            entry = signature.Outputs(o)
            by_tensor.setdefault(entry.TensorIndex(), _text(entry.Name()))
    return tuple(by_tensor.get(int(i)) or _text(main.Tensors(int(i)).Name())
                 for i in main.OutputsAsNumpy())
