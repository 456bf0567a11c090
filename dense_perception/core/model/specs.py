# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Model descriptions (loaded from ``data/models.json``) and detection from a file's signature.

A model kind is described in one place, its entry in ``models.json``: the input (shape,
``layout`` NCHW or NHWC, scale, mean, std), the outputs (each with the kind the pipeline reads;
``inverse_depth`` is an output whose 1/x is depth), and what shows the kind in a file beyond its
shapes (``evidence``, read by :mod:`.evidence` for ``model_type: auto``). Entries of further
files named by ``DENSE_PERCEPTION_MODELS`` (paths separated by the OS's path separator) are
added to the bundled ones; a file or entry that cannot describe a model is refused in one line
when a model is loaded (:data:`KINDS_PROBLEM`).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, replace
from importlib import resources
from typing import Any, NoReturn, Sequence

Shape = tuple[int, ...]

MODELS_ENV = "DENSE_PERCEPTION_MODELS"  # further models.json files, os.pathsep between them
LAYOUTS = {"NCHW": 1, "NHWC": 3}  # the input's layout and the index of its colour channels
OUTPUT_KINDS = ("depth", "inverse_depth", "normals", "segmentation_logits", "depth_confidence",
                "unused")


class ModelSignatureError(ValueError):
    """The model file's inputs/outputs match no supported model."""


@dataclass(frozen=True)
class EvidenceRule:
    """What a ``models.json`` entry declares shows its kind in a file beyond its shapes; every
    field given must hold (:func:`~.evidence.declared_evidence` checks them)."""

    signature: str = ""  # the shapes alone show it, for this reason (no plain network has them)
    output_names: tuple[str, ...] = ()  # the file's output names, exactly, in output order
    tensor_name: str = ""  # text that an input or output tensor's name contains (any case)
    description: str = ""  # a regular expression found in the file's description or metadata


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
    evidence_rule: EvidenceRule | None = None  # what its models.json entry says shows it

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


def _fail(where: str, kind: str, why: str) -> NoReturn:
    raise ModelSignatureError(f"{where}: entry '{kind}' {why}")


def _numbers(value: Any, count: int | None = None) -> bool:
    return isinstance(value, list) and (count is None or len(value) == count) and all(
        isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)


def _input(kind: str, inp: Any, where: str) -> tuple[Shape, str]:
    """The entry's input shape and layout, checked against each other."""
    if not isinstance(inp, dict) or not _numbers(inp.get("shape")):
        _fail(where, kind, "needs an input with a shape")
    layout, shape = inp.get("layout", "NCHW"), tuple(int(d) for d in inp["shape"])
    if layout not in LAYOUTS:
        _fail(where, kind, f"declares input layout '{layout}'; use NCHW or NHWC")
    if len(shape) != 4 or shape[0] != 1 or shape[LAYOUTS[layout]] != 3 or min(shape) < 1:
        want = "[1,3,H,W]" if layout == "NCHW" else "[1,H,W,3]"
        _fail(where, kind, f"declares input layout {layout}, which needs shape {want} (3 "
                           f"colour channels); its shape is [{','.join(map(str, shape))}]")
    if not (_numbers(inp.get("mean"), 3) and _numbers(inp.get("std"), 3)
            and all(v > 0 for v in inp["std"]) and _numbers([inp.get("scale")], 1)):
        _fail(where, kind, "needs an input scale and 3 numbers each of mean and std (> 0)")
    return shape, layout


def _evidence_rule(kind: str, data: Any, where: str) -> EvidenceRule | None:
    """The entry's ``evidence``: a dict of :class:`EvidenceRule`'s fields, or none."""
    if data is None:
        return None
    fields = EvidenceRule.__dataclass_fields__
    if not isinstance(data, dict) or not data or set(data) - set(fields):
        _fail(where, kind, f"has evidence {json.dumps(data)}; give one or more of "
                           f"{', '.join(fields)}")
    names = data.get("output_names", [])
    texts = [data.get(k, "") for k in fields if k != "output_names"]
    if not isinstance(names, list) or not all(isinstance(t, str) for t in texts + names):
        _fail(where, kind, "has evidence that is not text (output_names: a list of names)")
    try:
        re.compile(data.get("description", ""))
    except re.error as exc:
        _fail(where, kind, f"has an evidence description that is no regular expression ({exc})")
    return EvidenceRule(**{**data, "output_names": tuple(names)})


def _outputs(kind: str, outs: Any, where: str) -> tuple[tuple[OutputSpec, ...], bool]:
    """The entry's outputs (an ``inverse_depth`` one read as depth) and whether it is inverse."""
    if not isinstance(outs, list) or not outs or not all(
            isinstance(o, dict) and _numbers(o.get("shape")) for o in outs):
        _fail(where, kind, "needs outputs, each with a name, kind and shape")
    kinds = [o.get("kind") for o in outs]
    bad = [k for k in kinds if k not in OUTPUT_KINDS]
    if bad:
        _fail(where, kind, f"has an output of kind '{bad[0]}'; use one of "
                           f"{', '.join(OUTPUT_KINDS)}")
    if kinds.count("depth") + kinds.count("inverse_depth") > 1:
        _fail(where, kind, "has more than one depth or inverse_depth output")
    specs = tuple(OutputSpec(str(o.get("name", f"output_{i}")),
                             "depth" if o["kind"] == "inverse_depth" else o["kind"],
                             tuple(int(d) for d in o["shape"]), str(o.get("description", "")))
                  for i, o in enumerate(outs))
    return specs, "inverse_depth" in kinds


def parse_kinds(text: str, where: str, taken: Sequence[str] = ()) -> dict[str, ModelSpec]:
    """The model kinds of one ``models.json`` text (``where``: its name in messages); a kind
    named in ``taken`` (or ``auto``, ``depth``) is refused. ModelSignatureError, one line, for
    an entry that cannot describe a model."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ModelSignatureError(f"{where}: not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ModelSignatureError(f"{where}: not an object of model kinds")
    specs = {}
    for kind, d in data.items():
        if kind in ("auto", DEPTH_TYPE) or kind in taken:
            _fail(where, kind, "names a model_type that exists already")
        if not isinstance(d, dict) or not isinstance(d.get("display_name"), str):
            _fail(where, kind, "needs a display_name")
        shape, layout = _input(kind, d.get("input"), where)
        outputs, inverse = _outputs(kind, d.get("outputs"), where)
        inp = d["input"]
        specs[kind] = ModelSpec(
            kind=kind, display_name=d["display_name"], file_name=str(d.get("file_name", "")),
            input_shape=shape, scale=float(inp["scale"]),
            mean=tuple(float(v) for v in inp["mean"]),  # type: ignore[arg-type]
            std=tuple(float(v) for v in inp["std"]),  # type: ignore[arg-type]
            outputs=outputs, metric_depth=bool(d.get("metric_depth", False)),
            source=str(d.get("source", "")), layout=layout, inverse_depth=inverse,
            evidence_rule=_evidence_rule(kind, d.get("evidence"), where))
    return specs


def _load_specs() -> tuple[dict[str, ModelSpec], str]:
    """The bundled kinds and those of ``$DENSE_PERCEPTION_MODELS``'s files, and why those
    files were left out ("" when they were not)."""
    text = resources.files("dense_perception.core.model").joinpath("data/models.json").read_text()
    specs = parse_kinds(text, "models.json")
    extra: dict[str, ModelSpec] = {}
    for path in filter(None, os.environ.get(MODELS_ENV, "").split(os.pathsep)):
        try:
            with open(path, encoding="utf-8") as f:
                extra.update(parse_kinds(f.read(), f"{MODELS_ENV} file '{path}'",
                                         tuple(specs) + tuple(extra)))
        except OSError as exc:
            return specs, f"{MODELS_ENV} file '{path}' cannot be read ({exc.strerror})"
        except ModelSignatureError as exc:
            return specs, str(exc)
    return {**specs, **extra}, ""


# "depth": any single-image relative depth network, described by settings (core.depth_model);
# never chosen by "auto", which knows only the signatures of MODEL_SPECS.
DEPTH_TYPE = "depth"
MODEL_SPECS, KINDS_PROBLEM = _load_specs()  # KINDS_PROBLEM: why no model is loaded, or ""
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
