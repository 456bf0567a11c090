# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""What in a model file, beyond its shapes, shows which kind it is (``model_type: auto``).

Shapes alone do not: any NCHW depth network at a multiple of 14 has DA3's shapes, and running
one with DA3's normalisation, or an inverse-depth one as depth, is silently wrong. ``auto``
claims a model only on one of these, and says which:

* A kind's own ``evidence`` in its ``models.json`` entry (:class:`~.specs.EvidenceRule`,
  checked by :func:`declared_evidence`): its output names, a tensor name, its description, or
  a signature no plain depth network has (TIPSv2's three outputs together: depth, 3 normal
  planes, 150 ADE20K logits at 256x256, which the card lists).
* DA3, which comes in many sizes and files (its rule is code, here): a depth and a confidence
  output at the input's size, named so (DA3's DualDPT pair, as ``export-da3`` writes it);
  ``export-da3``'s report beside the file (``<file>.report.json``, model ``da3-small``, the
  file's size); the card's file (``[1,3,896,504] -> [1,1,896,504]``, FP16, 55 MB, 1460
  operators); or the file's own description or metadata naming DA3 (the bundled stand-ins).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Sequence

from .specs import ModelSpec, confidence_position
from .tflite_file import TfliteSignature

Shape = tuple[int, ...]

# The DA3 card's file: its signature, size (FP16, 55 MB) and operator count (1460 nodes).
DA3_CARD_SIGNATURE = (((1, 3, 896, 504),), ((1, 1, 896, 504),))
DA3_CARD_BYTES, DA3_CARD_SIZE_TOLERANCE, DA3_CARD_OPERATORS = 55e6, 0.15, 1460
DA3_REPORT_MODEL = "da3-small"  # export-da3's report: "model"
CARD_FILE = "the card's file"  # how the evidence of the card's own file begins
DA3_OTHER_SOURCE = "DA3-Small (depth-anything/DA3-SMALL, Apache-2.0), not the card's file"
_NAMES_DA3 = re.compile(r"\bDA3\b|depth[ _-]?anything[ _-]?(v?3|3)", re.IGNORECASE)


def evidence_for(spec: ModelSpec, input_shapes: Sequence[Shape], output_shapes: Sequence[Shape],
                 output_names: Sequence[str] = (), file: TfliteSignature | None = None) -> str:
    """What shows that a file whose shapes fit ``spec`` is that model ("" when nothing does)."""
    if spec.kind != "da3":
        return declared_evidence(spec, output_names, file)
    outs = [tuple(s) for s in output_shapes]
    if len(outs) == 2 and len(output_names) == 2 and \
            sum("conf" in n.lower() for n in output_names) == 1:
        conf = confidence_position(output_names)
        return (f"a depth and a confidence output ('{output_names[1 - conf]}', "
                f"'{output_names[conf]}'): DA3's DualDPT pair, as export-da3 writes it")
    if file is None:
        return ""
    return (_export_report(file) or _card_file(file, input_shapes, outs)
            or _self_description(file))


def declared_evidence(spec: ModelSpec, output_names: Sequence[str] = (),
                      file: TfliteSignature | None = None) -> str:
    """What of its ``models.json`` entry's ``evidence`` the file shows: every field given
    must hold ("" when one does not, or the entry declares none)."""
    rule = spec.evidence_rule
    if rule is None:
        return ""
    found = [rule.signature] if rule.signature else []
    if rule.output_names:
        if tuple(output_names) != rule.output_names:
            return ""
        found.append("its output names (" + ", ".join(f"'{n}'" for n in output_names) + ")")
    if rule.tensor_name:
        names = list(output_names) + ([t.name for t in file.inputs + file.outputs] if file else [])
        hit = next((n for n in names if rule.tensor_name.lower() in n.lower()), None)
        if hit is None:
            return ""
        found.append(f"its tensor '{hit}'")
    if rule.description:
        texts = [("description", file.description)] + [("metadata", m) for m in file.metadata] \
            if file else []
        hit = next(((w, t) for w, t in texts if re.search(rule.description, t or "")), None)
        if hit is None:
            return ""
        found.append(f"its {hit[0]} '{hit[1][:80]}'")
    if found == [rule.signature]:
        return rule.signature
    return " and ".join(found) + f", as its models.json entry ('{spec.kind}') declares"


def _export_report(file: TfliteSignature) -> str:
    """export-da3's report beside the file, for this very file (its size)."""
    if not file.path:
        return ""
    report = Path(file.path + ".report.json")
    try:
        data = json.loads(report.read_text())
    except (OSError, ValueError):
        return ""
    if not isinstance(data, dict) or data.get("model") != DA3_REPORT_MODEL or \
            data.get("size_bytes") != file.file_size:
        return ""
    return f"export-da3's report beside it ({report.name}: {DA3_REPORT_MODEL}, same size)"


def _card_file(file: TfliteSignature, input_shapes: Sequence[Shape],
               output_shapes: Sequence[Shape]) -> str:
    """The DA3 card's own file: its signature and its size or operator count."""
    shapes = (tuple(tuple(s) for s in input_shapes), tuple(tuple(s) for s in output_shapes))
    if shapes != DA3_CARD_SIGNATURE:
        return ""
    size_ok = abs(file.file_size - DA3_CARD_BYTES) <= DA3_CARD_SIZE_TOLERANCE * DA3_CARD_BYTES
    if not size_ok and file.operator_count != DA3_CARD_OPERATORS:
        return ""
    return (f"{CARD_FILE}: [1,3,896,504] -> [1,1,896,504], {file.file_size / 1e6:.1f} MB, "
            f"{file.operator_count} operators (card: FP16, 55 MB, {DA3_CARD_OPERATORS} nodes)")


def _self_description(file: TfliteSignature) -> str:
    """The file's own description or a metadata entry naming DA3."""
    for where, text in [("description", file.description)] + \
            [("metadata", name) for name in file.metadata]:
        if _NAMES_DA3.search(text or ""):
            return f"its {where} names it: '{text[:80]}'"
    return ""


def ambiguity_hint(kind: str) -> str:
    """What a file whose shapes fit ``kind`` but that shows nothing more should do."""
    what = {"da3": "no depth+confidence pair named so, no export-da3 report beside it, not the "
                   "card's 55 MB file, no description naming DA3"}.get(
        kind, "none of the evidence its models.json entry declares, if any")
    return (f"its shapes fit {kind} but nothing else in the file says it is ({what}), and a "
            "depth network of those shapes may be normalised differently or give inverse "
            "depth, so model_type 'auto' does not guess: run it with --model-type depth (node: "
            "model_type: depth) and declare its input_normalization and depth_output_kind, or "
            f"set model_type to '{kind}' if it is {kind}"
            + ("" if kind == "da3" else f" (or give {kind}'s models.json entry an 'evidence' "
                                        "that such files show)"))
