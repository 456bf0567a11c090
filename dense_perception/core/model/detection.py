# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Which model a file is: a kind of ``models.json`` by its signature and what else the file
shows (``model_type: auto``, :mod:`.evidence`), or the kind the settings force, ``depth``
included (never chosen by ``auto``)."""

from __future__ import annotations

from dataclasses import replace
from typing import Sequence

from .depth_network import DepthOptions, depth_model_spec, depth_suggestion
from .evidence import CARD_FILE, DA3_OTHER_SOURCE, ambiguity_hint, evidence_for
from .specs import (DEPTH_TYPE, KINDS_PROBLEM, MODEL_SPECS, MODEL_TYPES, ModelSignatureError,
                    ModelSpec, da3_variant, matches_signature, format_signature)
from .tflite_file import TfliteSignature


def detect_model_spec(input_shapes: Sequence[Sequence[int]], output_shapes: Sequence[Sequence[int]],
                      model_type: str = "auto", source: str = "the model file",
                      output_names: Sequence[str] = (),
                      depth: DepthOptions | None = None,
                      file: TfliteSignature | None = None) -> ModelSpec:
    """Return the spec whose signature the file has; ``model_type`` forces one kind.

    ``output_names`` (the file's, in output order; see ``TfliteSignature.output_names``) tell
    DA3's depth from its confidence when both are there; without them the order does.
    ``depth``: the :class:`~.depth_network.DepthOptions` of ``model_type`` 'depth' (None: the
    defaults). ``file``: the file's :class:`~.tflite_file.TfliteSignature` (its names,
    description, size, path), where ``auto`` finds what shows the model beyond its shapes
    (:mod:`.evidence`); the spec's ``evidence`` says what matched.

    Raises ModelSignatureError naming the file's signature and every supported one, or, under
    ``auto``, for shapes that fit a kind with nothing else in the file to show it, or for a
    ``models.json`` file of ``DENSE_PERCEPTION_MODELS`` that was refused (``KINDS_PROBLEM``).
    """
    if KINDS_PROBLEM:
        raise ModelSignatureError(KINDS_PROBLEM)
    ins = [tuple(int(d) for d in s) for s in input_shapes]
    outs = [tuple(int(d) for d in s) for s in output_shapes]
    if file is not None and not output_names:
        output_names = file.output_names
    if model_type not in MODEL_TYPES:
        raise ModelSignatureError(
            f"model_type '{model_type}' is unknown; use one of: {', '.join(MODEL_TYPES)}")
    if model_type == DEPTH_TYPE:
        spec = depth_model_spec(ins, outs, depth or DepthOptions(), source, output_names)
        return replace(spec, evidence="model_type 'depth' (set, not detected)")
    candidates = list(MODEL_SPECS.values()) if model_type == "auto" else [MODEL_SPECS[model_type]]
    fitting = [spec if matches_signature(spec, ins, outs) else
               da3_variant(spec, ins, outs, tuple(output_names)) for spec in candidates]
    fitting = [spec for spec in fitting if spec is not None]
    for spec in fitting:
        if model_type != "auto":
            return replace(spec, evidence=f"model_type '{model_type}' (set, not detected)")
        evidence = evidence_for(spec, ins, outs, output_names, file)
        if evidence and spec.kind == "da3" and not evidence.startswith(CARD_FILE):
            spec = replace(spec, source=DA3_OTHER_SOURCE)  # not the card's 55 MB conversion
        if evidence:
            return replace(spec, evidence=evidence)
    if fitting:
        raise ModelSignatureError(
            f"{source} has {format_signature(ins, outs)}: {ambiguity_hint(fitting[0].kind)}")
    supported = "; ".join(s.signature_text() for s in MODEL_SPECS.values()) + \
        " (DA3 also at any [1,3,H,W] -> [1,1,H,W] with H, W multiples of 14, from export-da3, " \
        "and with a second output [1,1,H,W], its confidence); depth (model_type 'depth' only, " \
        "never auto): one RGB input [1,H,W,3] or [1,3,H,W] and a one-plane depth output"
    wanted = "" if model_type == "auto" else f" (model_type is forced to '{model_type}')"
    raise ModelSignatureError(
        f"{source} has {format_signature(ins, outs)}, which matches no supported model{wanted}. "
        f"Supported signatures: {supported}. Use the original .tflite files (see models/README.md) "
        f"or set model_type to match the file{depth_suggestion(ins, outs)}.")
