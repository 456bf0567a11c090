# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""What the ``export`` tests of ``export-da3`` share: the torch environment's check, and the
output names of an exported file in LiteRT's order.

Those tests build the official DA3-Small architecture (``depth-anything-3``) with random weights
(fixed seed) and convert it with litert-torch. They need the torch environment::

    .venv-bench/bin/python -m pytest -q -m export test/test_export_da3_model.py \
        test/test_export_da3_graph.py   # make test-export

and are skipped (with the reason) in any interpreter without torch / depth_anything_3.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

MISSING = [m for m in ("torch", "litert_torch", "depth_anything_3", "safetensors")
           if importlib.util.find_spec(m) is None]


needs_torch = pytest.mark.skipif(
    bool(MISSING), reason=f"{', '.join(MISSING)} not importable in {sys.executable}; run "
    "`make test-export` (the .venv-bench torch environment)")



def output_names_in_order(path: Path) -> list[str]:
    """The SignatureDef names of the outputs in the order LiteRT returns them (by tensor)."""
    from ai_edge_litert.interpreter import Interpreter

    interp = Interpreter(model_path=str(path))
    by_index = {d["index"]: name for name, d in
                interp.get_signature_runner().get_output_details().items()}
    return [by_index[d["index"]] for d in interp.get_output_details()]

