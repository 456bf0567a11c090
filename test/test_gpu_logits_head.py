# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Labels and top-class probability computed in the graph on LiteRT's GPU (lavapipe in CI):
numpy's argmax and the softmax written out here, on logits of the TIPSv2 card's shape.

Runs wherever Vulkan has an adapter (``make test-gpu``); without one it skips and says why.
"""

import numpy as np
import pytest

from support.gpu_adapter import gpu_adapter, quiet  # noqa: F401 (fixture adapter)
from dense_perception.core import postprocess as post
from dense_perception.core.backends.logits_head import read_head
from dense_perception.core.backends.runner import BackendConfig, open_runner
from support.logits_models import TIPS_LOGITS, softmax_top, write_passthrough

pytestmark = [pytest.mark.gpu, pytest.mark.timeout(240)]


def test_the_gpus_labels_are_numpys_argmax_and_its_probability_the_softmax(adapter, tmp_path,
                                                                            monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    rng = np.random.default_rng(11)
    logits = rng.normal(0.0, 3.0, TIPS_LOGITS).astype(np.float32)
    logits[0, 70, :8, :8] = logits[0, 12, :8, :8] = logits[0, :, :8, :8].max(axis=0) + 1.0
    model = write_passthrough(tmp_path / "seg.tflite", TIPS_LOGITS)
    runner = open_runner(str(model), BackendConfig(backend="gpu", gpu_precision="fp32"),
                         log=quiet, warn=quiet, warmup=False, labels_from=1)
    try:
        assert runner.backend == "gpu" and runner.logits_head is not None
        buffer = runner.input_buffer()
        buffer[...] = logits
        del buffer
        labels, probability, _ = read_head(runner.run(), runner.logits_head, post.INVALID_LABEL)
    finally:
        runner.close()
    assert np.array_equal(labels, np.argmax(logits[0], axis=0).astype(np.uint8))
    assert (labels[:8, :8] == 12).all()  # a tie: the lowest id
    np.testing.assert_allclose(probability, softmax_top(logits[0]), atol=1e-3)
