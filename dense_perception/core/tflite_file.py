"""Read a .tflite file's signature and check its structure without handing it to LiteRT.

LiteRT trusts the flatbuffer it is given: a truncated or corrupt file can crash the process
(seen with ai-edge-litert 1.4.0). Walking the tables here first turns that into a clear error.
"""

from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass
from pathlib import Path

from ai_edge_litert import schema_py_generated as fb

Shape = tuple[int, ...]


class CorruptModelError(ValueError):
    """The file is not a complete, well-formed TFLite flatbuffer."""


@dataclass(frozen=True)
class TfliteSignature:
    """The main subgraph's input and output shapes, in model order (the order the runners
    return outputs in); ``output_names``: each output's SignatureDef name where the file has
    one, else its tensor name."""

    input_shapes: list[Shape]
    output_shapes: list[Shape]
    operator_count: int
    file_size: int
    output_names: tuple[str, ...] = ()


def read_signature(path: str | Path) -> TfliteSignature:
    """Walk every table LiteRT will read; CorruptModelError if anything points outside the file."""
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
        try:
            return _walk(buf)
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

    def shapes(indices) -> list[Shape]:
        return [tuple(int(d) for d in main.Tensors(int(i)).ShapeAsNumpy()) for i in indices]

    return TfliteSignature(shapes(main.InputsAsNumpy()), shapes(main.OutputsAsNumpy()),
                           operators, size, _output_names(model, main))


def _output_names(model: fb.Model, main: fb.SubGraph) -> tuple[str, ...]:
    """Names of the main subgraph's outputs, in its order: the SignatureDef's (an exporter's
    own names, e.g. "depth", "confidence") where it names that tensor, else the tensor's."""
    def text(name: bytes | None) -> str:
        return (name or b"").decode("utf-8", "replace")

    by_tensor: dict[int, str] = {}
    for s in range(model.SignatureDefsLength()):
        signature = model.SignatureDefs(s)
        if signature.SubgraphIndex() != 0:
            continue
        for o in range(signature.OutputsLength()):
            entry = signature.Outputs(o)
            by_tensor.setdefault(entry.TensorIndex(), text(entry.Name()))
    return tuple(by_tensor.get(int(i)) or text(main.Tensors(int(i)).Name())
                 for i in main.OutputsAsNumpy())
