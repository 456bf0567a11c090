# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Measuring, converting and checking a benchmark model: MACs and parameters in torch, the
``.tflite`` conversion with fp16 weights, and what the LiteRT interpreter says about the file
(signature, XNNPACK coverage, invoke times, agreement with torch)."""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

if TYPE_CHECKING:  # pragma: no cover - typing only
    import torch
    from torch import nn


def sample_input(shape: Sequence[int], seed: int = 0) -> "torch.Tensor":
    """A fixed random float32 input of ``shape``."""
    import torch

    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def count_macs(model: "nn.Module", sample: "torch.Tensor") -> float:
    """Multiply-accumulates of one forward pass (FlopCounterMode FLOPs / 2)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    with torch.no_grad(), counter:
        model(sample)
    return counter.get_total_flops() / 2.0


def count_params(model: "nn.Module") -> int:
    """Number of parameters."""
    return sum(p.numel() for p in model.parameters())


def torch_outputs(model: "nn.Module", sample: "torch.Tensor",
                  shapes: Sequence[Sequence[int]]) -> list[Any]:
    """Run torch once, check the output shapes and their order, return them as numpy."""
    from dense_perception.export.fidelity import torch_forward

    outs = torch_forward(model, sample.numpy())
    got = [tuple(o.shape) for o in outs]
    if got != [tuple(s) for s in shapes]:
        raise AssertionError(f"torch outputs {got}, expected {list(shapes)}")
    return outs


def correlations(reference: Sequence[Any], outputs: Sequence[Any]) -> list[float]:
    """Pearson correlation of each converted output with the torch output."""
    from dense_perception.export.fidelity import compare

    return [compare(a, b)["corr"] for a, b in zip(reference, outputs)]


def export(model: "nn.Module", sample: "torch.Tensor", path: str | os.PathLike,
           fp16: bool = True) -> bool:
    """Convert ``model`` to a ``.tflite`` at ``path``; returns True when the weights are fp16.

    Inputs and outputs stay float32. When the fp16 weight cast fails, the file keeps fp32
    weights and a warning is printed. The file is written atomically (no truncated model).
    """
    from dense_perception.export.convert import convert, to_fp16_weights, write_atomic

    data = convert(model, sample)
    used_fp16 = fp16
    if fp16:
        try:
            data = to_fp16_weights(data)
        except Exception as exc:  # noqa: BLE001 - any quantizer failure -> keep fp32
            print(f"WARNING: fp16 weights failed ({type(exc).__name__}: {exc}); "
                  "writing fp32 weights instead", file=sys.stderr)
            used_fp16 = False
    write_atomic(Path(path), data)
    return used_fp16


@dataclass
class RuntimeCheck:
    """What the LiteRT interpreter says about a converted file."""

    inputs: list[tuple[int, ...]]
    outputs: list[tuple[int, ...]]
    io_dtypes: list[str]
    fp16_tensors: int
    partitions: int
    ops_outside_delegate: dict[str, int]
    load_s: float
    invoke_ms: list[float]
    outputs_data: list[Any] = field(default_factory=list, repr=False)


def delegate_coverage(interp: Any) -> tuple[int, dict[str, int]]:
    """Delegate partitions and the ops the interpreter runs outside them (by op name).

    After ``allocate_tensors`` the node list holds the model's ops followed by one
    ``DELEGATE`` node per partition (here: XNNPACK); it does not say which ops a partition
    took over. Walking back from the model outputs through the producers of each tensor,
    with a delegate node standing for everything it replaced, reaches exactly the ops that
    still run as TFLite builtin kernels.
    """
    ops = interp._get_ops_details()  # noqa: SLF001 - no public view of the execution plan
    delegates = [op for op in ops if op["op_name"] == "DELEGATE"]
    producer: dict[int, dict] = {}
    for op in ops:  # delegate nodes come last, so they win for the tensors they produce
        for t in op["outputs"]:
            producer[int(t)] = op
    seen: set[int] = set()
    leftover: dict[str, int] = {}
    stack = [int(d["index"]) for d in interp.get_output_details()]
    while stack:
        op = producer.get(stack.pop())
        if op is None or op["index"] in seen:
            continue
        seen.add(op["index"])
        if op["op_name"] != "DELEGATE":
            leftover[op["op_name"]] = leftover.get(op["op_name"], 0) + 1
        stack.extend(int(t) for t in op["inputs"] if t >= 0)
    return len(delegates), leftover


def check_runtime(path: str | os.PathLike, x: Any, threads: int = 2,
                  runs: int = 3) -> RuntimeCheck:
    """Load ``path`` in the LiteRT Interpreter (XNNPACK), run ``x``, time 1 + ``runs`` invokes."""
    import numpy as np
    from ai_edge_litert.interpreter import Interpreter

    from dense_perception.export.convert import op_histogram

    start = time.perf_counter()
    interp = Interpreter(model_path=str(path), num_threads=threads)
    interp.allocate_tensors()
    load_s = time.perf_counter() - start
    ins, outs = interp.get_input_details(), interp.get_output_details()
    fp16 = op_histogram(Path(path).read_bytes())["fp16_tensors"]
    partitions, leftover = delegate_coverage(interp)
    interp.set_tensor(ins[0]["index"], np.ascontiguousarray(x, np.float32))
    times = []
    for _ in range(runs + 1):  # the first run is a warm-up
        t0 = time.perf_counter()
        interp.invoke()
        times.append((time.perf_counter() - t0) * 1000.0)
    data = [interp.get_tensor(d["index"]) for d in outs]
    if not all(np.isfinite(a).all() for a in data):
        raise AssertionError(f"{path}: an output is not finite")
    return RuntimeCheck(
        inputs=[tuple(int(v) for v in d["shape"]) for d in ins],
        outputs=[tuple(int(v) for v in d["shape"]) for d in outs],
        io_dtypes=[np.dtype(d["dtype"]).name for d in [*ins, *outs]],
        fp16_tensors=fp16, partitions=partitions, ops_outside_delegate=leftover,
        load_s=load_s, invoke_ms=times[1:], outputs_data=data)
