# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Model descriptions (loaded from ``data/models.json``) and detection from a file's signature."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from importlib import resources
from typing import Sequence

Shape = tuple[int, ...]


class ModelSignatureError(ValueError):
    """The model file's inputs/outputs match no supported model."""


@dataclass(frozen=True)
class OutputSpec:
    """One model output: what it holds and its shape."""

    name: str
    kind: str  # "depth" | "normals" | "segmentation_logits" | "depth_confidence" | "unused"
    shape: Shape
    description: str


@dataclass(frozen=True)
class ModelSpec:
    """Everything the pipeline needs to know about one supported model."""

    kind: str
    display_name: str
    file_name: str
    input_shape: Shape  # the file's: NCHW, or NHWC where ``layout`` says so
    scale: float  # pixel values are divided by this first
    mean: tuple[float, float, float]
    std: tuple[float, float, float]
    outputs: tuple[OutputSpec, ...]
    metric_depth: bool
    source: str
    layout: str = "NCHW"  # of the input: "NCHW" or "NHWC" (model_type depth)
    inverse_depth: bool = False  # the depth output is inverse depth (1/x is depth)
    evidence: str = ""  # what in the file showed it is this model (model_type auto), or why

    @property
    def input_height(self) -> int:
        return self.input_shape[1 if self.layout == "NHWC" else 2]

    @property
    def input_width(self) -> int:
        return self.input_shape[2 if self.layout == "NHWC" else 3]

    @property
    def output_shapes(self) -> tuple[Shape, ...]:
        return tuple(o.shape for o in self.outputs)

    def output_index(self, kind: str) -> int | None:
        """Index of the output of this kind, or None when the model has none."""
        for i, out in enumerate(self.outputs):
            if out.kind == kind:
                return i
        return None

    def signature_text(self) -> str:
        """Human-readable signature, e.g. ``input [1,3,896,504] -> outputs [1,1,896,504]``."""
        return f"{self.kind} ({self.display_name}): " + format_signature(
            [self.input_shape], self.output_shapes)


def format_signature(input_shapes: Sequence[Sequence[int]],
                     output_shapes: Sequence[Sequence[int]]) -> str:
    """Format shapes as ``input [..] -> outputs [..], [..]``."""
    def fmt(shapes: Sequence[Sequence[int]]) -> str:
        return ", ".join("[" + ",".join(str(int(d)) for d in s) + "]" for s in shapes)
    return f"input {fmt(input_shapes)} -> outputs {fmt(output_shapes)}"


def _load_specs() -> dict[str, ModelSpec]:
    text = resources.files("dense_perception.core.model").joinpath("data/models.json").read_text()
    specs = {}
    for kind, d in json.loads(text).items():
        inp = d["input"]
        specs[kind] = ModelSpec(
            kind=kind,
            display_name=d["display_name"],
            file_name=d["file_name"],
            input_shape=tuple(inp["shape"]),
            scale=float(inp["scale"]),
            mean=tuple(inp["mean"]),
            std=tuple(inp["std"]),
            outputs=tuple(OutputSpec(o["name"], o["kind"], tuple(o["shape"]), o["description"])
                          for o in d["outputs"]),
            metric_depth=bool(d["metric_depth"]),
            source=d["source"],
        )
    return specs


MODEL_SPECS: dict[str, ModelSpec] = _load_specs()
# "depth": any single-image relative depth network, described by settings (core.depth_model);
# never chosen by "auto", which knows only the signatures of MODEL_SPECS.
DEPTH_TYPE = "depth"
MODEL_TYPES = ("auto",) + tuple(MODEL_SPECS) + (DEPTH_TYPE,)


def matches_signature(spec: ModelSpec, input_shapes: Sequence[Shape],
                      output_shapes: Sequence[Shape]) -> bool:
    return (len(input_shapes) == 1 and tuple(input_shapes[0]) == spec.input_shape
            and tuple(map(tuple, output_shapes)) == spec.output_shapes)


# The kind of DA3's second output: its per-pixel confidence in the depth (DA3's own values).
CONFIDENCE_KIND = "depth_confidence"
DA3_CONFIDENCE_DESCRIPTION = ("DA3's per-pixel confidence in its depth (its own values: >= 1 "
                              "from its exp + 1 activation, larger = more sure, no unit)")


def confidence_position(output_names: Sequence[str]) -> int:
    """Which of DA3's two outputs is the confidence: the one whose name says so ("conf" in it,
    e.g. "confidence", "depth_conf"), else the second (export-da3 writes depth first)."""
    named = [i for i, name in enumerate(output_names) if "conf" in name.lower()]
    return named[0] if len(named) == 1 else 1


def da3_variant(spec: ModelSpec, input_shapes: Sequence[Shape], output_shapes: Sequence[Shape],
                 output_names: Sequence[str] = ()) -> ModelSpec | None:
    """DA3 as ``dense-perception export-da3`` writes it: one input [1,3,H,W] with H and W
    multiples of the 14-pixel patch (any size, the card's included) and one output [1,1,H,W]
    (depth, as on the card) or two (depth and its confidence, in either order: see
    :func:`confidence_position`)."""
    if spec.kind != "da3" or len(input_shapes) != 1 or len(output_shapes) not in (1, 2):
        return None
    shape = tuple(input_shapes[0])
    if len(shape) != 4 or shape[:2] != (1, 3):
        return None
    h, w = shape[2], shape[3]
    if h < 14 or w < 14 or h % 14 or w % 14 or \
            any(tuple(out) != (1, 1, h, w) for out in output_shapes):
        return None
    depth = replace(spec.outputs[0], shape=(1, 1, h, w))
    outputs: tuple[OutputSpec, ...] = (depth,)
    if len(output_shapes) == 2:
        conf_i = confidence_position(output_names if len(output_names) == 2 else ())
        name = output_names[conf_i] if len(output_names) == 2 else "confidence"
        confidence = OutputSpec(name, CONFIDENCE_KIND, (1, 1, h, w), DA3_CONFIDENCE_DESCRIPTION)
        outputs = (depth, confidence) if conf_i == 1 else (confidence, depth)
    return replace(spec, input_shape=shape, outputs=outputs)
