# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""A model that hands any logits a test feeds to the labels head unchanged, and the softmax
written out, for the tests of the labels computed in the graph (CPU and GPU)."""

from __future__ import annotations

import numpy as np

from support.common import load_test_model_maker

TIPS_LOGITS = (1, 150, 256, 256)  # the TIPSv2 card's segmentation output


def write_passthrough(path, shape, extra_plane=True):
    """A model whose outputs are a plane (input's first class plus one) and ``logits`` = its
    input plus zero: whatever logits a test feeds, the head sees them unchanged."""
    mk = load_test_model_maker()
    g = mk.GraphBuilder()
    fb = mk.fb
    logits_in = g.tensor("logits_in", shape)
    zero = g.const("zero", [0.0])
    logits = g.binary(fb.BuiltinOperator.ADD, logits_in, zero, "segmentation_logits", shape)
    outputs = [logits]
    if extra_plane:
        plane = g.binary(fb.BuiltinOperator.ADD, logits_in, g.const("one", [1.0]), "plane",
                         shape)
        outputs = [plane, logits]
    model = g.model([logits_in], outputs, "logits passthrough")
    return mk._write(model, path)


def softmax_top(logits):
    """max_k exp(l_k) / sum_k exp(l_k), written out in float64 over axis 0."""
    z = logits.astype(np.float64)
    e = np.exp(z - z.max(axis=0))
    return (e.max(axis=0) / e.sum(axis=0)).astype(np.float32)
