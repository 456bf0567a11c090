"""Which model a file is: DA3 and TIPSv2 by their signatures (``model_type: auto``), or the
kind the settings force, ``depth`` included (never chosen by ``auto``)."""

from __future__ import annotations

from typing import Sequence

from .depth_model import DepthOptions, depth_model_spec, depth_suggestion
from .models import (DEPTH_TYPE, MODEL_SPECS, MODEL_TYPES, ModelSignatureError, ModelSpec,
                     da3_variant, matches_signature, format_signature)


def detect_model_spec(input_shapes: Sequence[Sequence[int]], output_shapes: Sequence[Sequence[int]],
                      model_type: str = "auto", source: str = "the model file",
                      output_names: Sequence[str] = (),
                      depth: DepthOptions | None = None) -> ModelSpec:
    """Return the spec whose signature the file has; ``model_type`` forces one kind.

    ``output_names`` (the file's, in output order; see ``TfliteSignature.output_names``) tell
    DA3's depth from its confidence when both are there; without them the order does.
    ``depth``: the :class:`~.depth_model.DepthOptions` of ``model_type`` 'depth' (None: the
    defaults).

    Raises ModelSignatureError naming the file's signature and every supported one.
    """
    ins = [tuple(int(d) for d in s) for s in input_shapes]
    outs = [tuple(int(d) for d in s) for s in output_shapes]
    if model_type not in MODEL_TYPES:
        raise ModelSignatureError(
            f"model_type '{model_type}' is unknown; use one of: {', '.join(MODEL_TYPES)}")
    if model_type == DEPTH_TYPE:
        return depth_model_spec(ins, outs, depth or DepthOptions(), source, output_names)
    candidates = list(MODEL_SPECS.values()) if model_type == "auto" else [MODEL_SPECS[model_type]]
    for spec in candidates:
        if matches_signature(spec, ins, outs):
            return spec
    for spec in candidates:
        variant = da3_variant(spec, ins, outs, tuple(output_names))
        if variant is not None:
            return variant
    supported = "; ".join(s.signature_text() for s in MODEL_SPECS.values()) + \
        " (DA3 also at any [1,3,H,W] -> [1,1,H,W] with H, W multiples of 14, from export-da3, " \
        "and with a second output [1,1,H,W], its confidence); depth (model_type 'depth' only, " \
        "never auto): one RGB input [1,H,W,3] or [1,3,H,W] and a one-plane depth output"
    wanted = "" if model_type == "auto" else f" (model_type is forced to '{model_type}')"
    raise ModelSignatureError(
        f"{source} has {format_signature(ins, outs)}, which matches no supported model{wanted}. "
        f"Supported signatures: {supported}. Use the original .tflite files (see models/README.md) "
        f"or set model_type to match the file{depth_suggestion(ins, outs)}.")
