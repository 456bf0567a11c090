# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Segmentation labels and their top-class probability computed in the model's own graph.

A segmentation model (TIPSv2) ends in [1, C, H, W] logits: 150 x 256 x 256 float32, 39 MB that
the host would read twice per frame for an argmax and a max-softmax. Here the few ops that make
the labels and the probability are appended to a copy of the model's graph once, so they run
where the model runs (the GPU, or the CPU's threads) and the host reads four H x W planes:

    nhwc  = TRANSPOSE(logits)              classes last: each reduction reads contiguous memory
    label = CAST(ARG_MAX(nhwc))            float32 class id, lowest id among equal maxima
                                           (a GPU's copy: ARG_MAX(logits) over axis 1)
    top   = MAX(nhwc)
    d     = nhwc - top
    prob  = 1 / SUM(EXP(d))                the top class's softmax probability
    check = SUM(d)                         NaN where a logit is NaN or the top one infinite

The logits output is replaced by the labels (same output index); the probability, the check and
the top logit are appended as the last three outputs. ``check`` is there because an
accelerator's EXP and MAX need not carry a NaN through (XNNPACK's do not), while a subtraction
and a sum do. :func:`read_head` marks the pixels as the host pass does: probability NaN where
the check is NaN; label :data:`~dense_perception.core.postprocess.INVALID_LABEL` where it is
NaN and the top logit is not infinite (a NaN logit; an infinite top keeps its class, as numpy's
argmax). The one case apart: a pixel with both a NaN and a +inf logit keeps the +inf class
here (the host marks it). The copy is cached under
``$XDG_CACHE_HOME/dense_perception/graphs`` (or ``~/.cache``), keyed by the model file's path,
size and modification time.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from ..model.tflite_file import read_signature

HEAD_VERSION = "1"  # part of the cache key: a change to the appended ops writes a new copy
LABELS_NAME = "segmentation_labels"
PROBABILITY_NAME = "segmentation_probability"
CHECK_NAME = "segmentation_check"
TOP_NAME = "segmentation_top_logit"


@dataclass(frozen=True)
class LogitsHead:
    """Where a headed graph's runner puts the labels and the probability (output indices)."""

    path: str  # the copy of the model that has them
    labels: int
    probability: int
    check: int  # NaN where a logit is NaN or the top one infinite
    top: int  # the top logit


def graphs_cache_dir() -> Path:
    """Where headed copies are kept: $XDG_CACHE_HOME (or ~/.cache)/dense_perception/graphs."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "dense_perception" / "graphs"


def headed_model(model_path: str, logits_index: int, cache_dir: Path | None = None,
                 classes_last: bool = True) -> LogitsHead:
    """``model_path``'s copy with the labels and probability ops appended after its output
    ``logits_index`` ([1, C, H, W]), written on first use: where it is and where they come out.
    ``classes_last``: the argmax reads the transposed logits (contiguous classes: XNNPACK's
    fast case); else the logits as they are, for LiteRT's GPU, whose argmax over the last axis
    of the transposed tensor returns C.

    Raises ValueError for a graph this cannot extend (the caller then reads the logits on the
    host) and OSError when the cache cannot be written.
    """
    source = Path(model_path).resolve()
    stat = source.stat()
    variant = "classes-last" if classes_last else "classes-first"
    key = hashlib.sha256(f"{source}|{stat.st_size}|{stat.st_mtime_ns}|{HEAD_VERSION}|{variant}"
                         .encode()).hexdigest()[:16]
    folder = cache_dir or graphs_cache_dir()
    target = folder / f"{source.stem}.labels-{variant}-{key}.tflite"
    if not target.exists():
        data = _append_head(source.read_bytes(), logits_index, classes_last)
        folder.mkdir(parents=True, exist_ok=True)
        # Written aside and renamed: a second process never reads half a file.
        fd, tmp = tempfile.mkstemp(dir=folder, suffix=".part")
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(tmp, target)
    count = len(read_signature(target).output_shapes)  # mapped: no read of the weights
    return LogitsHead(str(target), logits_index, count - 3, count - 2, count - 1)


def graph_with_labels(model_path: str, logits_index: int, warn: Callable[[str], None],
                      classes_last: bool = True) -> tuple[str, LogitsHead | None]:
    """The path to load and its head: :func:`headed_model`'s, or the model itself and None
    where that copy cannot be made (the logits are then read on the host; ``warn`` says why)."""
    try:
        head = headed_model(model_path, logits_index, classes_last=classes_last)
        return head.path, head
    except (ImportError, OSError, ValueError) as exc:
        warn(f"segmentation labels are read from the logits on the host (slower): the graph "
             f"that computes them could not be written ({exc})")
        return model_path, None


def read_head(outputs: list[np.ndarray], head: LogitsHead, invalid: int
              ) -> tuple[np.ndarray, np.ndarray, float]:
    """uint8 labels (``invalid`` where the probability is NaN) and the float32 probability, each
    H x W and the caller's own, from a headed runner's ``outputs``, and the milliseconds that
    took (as :func:`~dense_perception.core.postprocess.labels_and_probability` returns)."""
    start = time.perf_counter()
    probability = np.array(outputs[head.probability][0, 0], np.float32)
    labels = outputs[head.labels][0, 0].astype(np.uint8)
    unusable = np.isnan(outputs[head.check][0, 0])
    probability[unusable] = np.nan
    labels[unusable & ~np.isinf(outputs[head.top][0, 0])] = invalid
    return labels, probability, (time.perf_counter() - start) * 1000.0


def _append_head(data: bytes, logits_index: int, classes_last: bool) -> bytes:
    """The model ``data`` with the head appended (see :func:`headed_model`)."""
    import flatbuffers
    from ai_edge_litert import schema_py_generated as fb

    model = fb.ModelT.InitFromPackedBuf(bytearray(data), 0)
    if any((b.offset or 0) > 0 for b in model.buffers or []):
        raise ValueError("its weights are stored outside the flatbuffer")
    # Every buffer is packed anew, aligned as the schema asks (the object API's own packing
    # aligns bytes only to 1, and XNNPACK reads the weights in place).
    model.buffers = [_AlignedBuffer(fb, b.data) for b in model.buffers or []]
    graph = model.subgraphs[0]
    logits = int(graph.outputs[logits_index])
    shape = [int(d) for d in graph.tensors[logits].shape]
    if len(shape) != 4 or shape[0] != 1 or graph.tensors[logits].type != fb.TensorType.FLOAT32:
        raise ValueError(f"its logits are {shape}, not float32 [1, C, H, W]")
    _, classes, height, width = shape
    ops = _GraphOps(model, graph, fb)
    nhwc = ops.tensor("labels_head/nhwc", [1, height, width, classes])
    ops.op("TRANSPOSE", [logits, ops.const("labels_head/perm", [0, 2, 3, 1], np.int32)],
           [nhwc], "TransposeOptions")
    last = ops.const("labels_head/classes_axis", [3], np.int32)
    plane = [1, height, width, 1]
    ids = ops.tensor("labels_head/ids", plane[:3], fb.TensorType.INT32)
    argmax_in = [nhwc, last] if classes_last else \
        [logits, ops.const("labels_head/classes_axis_nchw", [1], np.int32)]
    ops.op("ARG_MAX", argmax_in, [ids], "ArgMaxOptions", outputType=fb.TensorType.INT32)
    ids_float = ops.tensor("labels_head/ids_float", plane[:3])
    ops.op("CAST", [ids], [ids_float])
    top = ops.tensor("labels_head/top", plane)
    ops.op("REDUCE_MAX", [nhwc, last], [top], "ReducerOptions", keepDims=True)
    shifted = ops.tensor("labels_head/shifted", [1, height, width, classes])
    ops.op("SUB", [nhwc, top], [shifted], "SubOptions")
    terms = ops.tensor("labels_head/terms", [1, height, width, classes])
    ops.op("EXP", [shifted], [terms])
    total = ops.tensor("labels_head/total", plane)
    ops.op("SUM", [terms, last], [total], "ReducerOptions", keepDims=True)
    inverse = ops.tensor("labels_head/inverse", plane)
    ops.op("DIV", [ops.const("labels_head/one", [1.0], np.float32), total], [inverse],
           "DivOptions")
    check_plane = ops.tensor("labels_head/check_plane", plane)
    ops.op("SUM", [shifted, last], [check_plane], "ReducerOptions", keepDims=True)
    labels = ops.reshape(ids_float, LABELS_NAME, [1, 1, height, width])
    probability = ops.reshape(inverse, PROBABILITY_NAME, [1, 1, height, width])
    check = ops.reshape(check_plane, CHECK_NAME, [1, 1, height, width])
    top_plane = ops.reshape(top, TOP_NAME, [1, 1, height, width])

    graph.outputs = [labels if int(t) == logits else int(t) for t in graph.outputs]
    appended = ((PROBABILITY_NAME, probability), (CHECK_NAME, check), (TOP_NAME, top_plane))
    graph.outputs += [index for _, index in appended]
    for signature in model.signatureDefs or []:
        if signature.subgraphIndex != 0:
            continue
        for entry in signature.outputs:
            if entry.tensorIndex == logits:
                entry.tensorIndex, entry.name = labels, LABELS_NAME
        for name, index in appended:
            extra = fb.TensorMapT()
            extra.name, extra.tensorIndex = name, index
            signature.outputs.append(extra)
    builder = flatbuffers.Builder(len(data) + (1 << 20))
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


class _GraphOps:
    """Appends tensors, constants and builtin operators to one subgraph of an unpacked model."""

    def __init__(self, model, graph, fb) -> None:
        self.model, self.graph, self.fb = model, graph, fb

    def tensor(self, name: str, shape: list[int], dtype: int | None = None) -> int:
        """A new activation tensor (float32 unless ``dtype``); its index."""
        t = self.fb.TensorT()
        t.name, t.shape, t.buffer = name, list(shape), 0
        t.type = self.fb.TensorType.FLOAT32 if dtype is None else dtype
        self.graph.tensors.append(t)
        return len(self.graph.tensors) - 1

    def const(self, name: str, values: list, dtype: type) -> int:
        """A new constant tensor holding ``values``; its index."""
        array = np.asarray(values, dtype)
        self.model.buffers.append(
            _AlignedBuffer(self.fb, array.astype(array.dtype.newbyteorder("<")).tobytes()))
        types = {np.dtype(np.int32): self.fb.TensorType.INT32,
                 np.dtype(np.float32): self.fb.TensorType.FLOAT32}
        index = self.tensor(name, list(array.shape), types[array.dtype])
        self.graph.tensors[index].buffer = len(self.model.buffers) - 1
        return index

    def op(self, name: str, inputs: list[int], outputs: list[int], options: str = "",
           **fields) -> None:
        """Append builtin operator ``name`` with its ``options`` table (fields as keywords)."""
        fb = self.fb
        code = getattr(fb.BuiltinOperator, name)
        codes = self.model.operatorCodes
        found = [i for i, c in enumerate(codes)
                 if max(c.builtinCode, c.deprecatedBuiltinCode) == code and c.version == 1]
        if not found:
            entry = fb.OperatorCodeT()
            entry.builtinCode, entry.deprecatedBuiltinCode, entry.version = code, min(code, 127), 1
            codes.append(entry)
            found = [len(codes) - 1]
        operator = fb.OperatorT()
        operator.opcodeIndex, operator.inputs, operator.outputs = found[0], inputs, outputs
        if options:
            table = getattr(fb, f"{options}T")()
            for field, value in fields.items():
                setattr(table, field, value)
            operator.builtinOptionsType = getattr(fb.BuiltinOptions, options)
            operator.builtinOptions = table
        self.graph.operators.append(operator)

    def reshape(self, x: int, name: str, shape: list[int]) -> int:
        """RESHAPE ``x`` to a static ``shape`` (given as a tensor and as the option)."""
        out = self.tensor(name, shape)
        self.op("RESHAPE", [x, self.const(f"{name}/shape", shape, np.int32)], [out],
                "ReshapeOptions", newShape=list(shape))
        return out


class _AlignedBuffer:
    """A constant's buffer, packed 16-byte aligned as the schema's ``force_align`` asks."""

    def __init__(self, fb, data) -> None:
        self.fb, self.data = fb, data

    def Pack(self, builder):  # noqa: N802 (the flatbuffers object API's name)
        vector = None
        if self.data is not None:
            raw = memoryview(np.ascontiguousarray(self.data, np.uint8)).cast("B") \
                if isinstance(self.data, np.ndarray) else bytes(self.data)
            builder.StartVector(1, len(raw), 16)
            builder.head -= len(raw)
            builder.Bytes[builder.head:builder.head + len(raw)] = raw
            vector = builder.EndVector()
        self.fb.BufferStart(builder)
        if vector is not None:
            self.fb.BufferAddData(builder, vector)
        return self.fb.BufferEnd(builder)
