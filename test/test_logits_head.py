# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Labels and top-class probability computed in the model's graph: the appended ops against
numpy's argmax and the softmax written out here, on logits of the real TIPSv2 shape with ties,
NaN and infinities; the pipeline's products against the host pass; the cache and the fallback.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from support.common import TIPS_TEST_MODEL
from support.logits_models import TIPS_LOGITS, softmax_top, write_passthrough
from dense_perception.core import postprocess as post
from dense_perception.core.backends.logits_head import (graph_with_labels, headed_model,
                                                        read_head)
from dense_perception.core.backends.runner import BackendConfig, open_runner
from dense_perception.core.frame_data import Request
from dense_perception.core.pipeline import load_pipeline
from dense_perception.core.settings.table import Settings

pytestmark = pytest.mark.timeout(120)


def run_model(path, feed):
    """The outputs of ``path`` on XNNPACK for the input ``feed``."""
    runner = open_runner(str(path), BackendConfig(backend="cpu", num_threads=2),
                         log=lambda _: None, warmup=False)
    buffer = runner.input_buffer()
    buffer[...] = feed
    del buffer
    return [np.array(o) for o in runner.run()]


def test_labels_are_numpys_argmax_and_probability_the_softmax_at_tipsv2s_shape(tmp_path):
    rng = np.random.default_rng(7)
    logits = rng.normal(0.0, 3.0, TIPS_LOGITS).astype(np.float32)
    # Ties: classes 9 and 40 share the top value; argmax takes the lowest id.
    logits[0, 40, :8, :8] = logits[0, 9, :8, :8] = logits[0, :, :8, :8].max(axis=0) + 1.0
    model = write_passthrough(tmp_path / "seg.tflite", TIPS_LOGITS)
    head = headed_model(str(model), 1, tmp_path / "cache")
    outputs = run_model(head.path, logits)
    labels, probability, _ = read_head(outputs, head, post.INVALID_LABEL)
    assert np.array_equal(labels, np.argmax(logits[0], axis=0).astype(np.uint8))
    assert (labels[:8, :8] == 9).all()
    np.testing.assert_allclose(probability, softmax_top(logits[0]), atol=1e-5)
    # The other output is the model's own, at its own index.
    assert np.array_equal(outputs[0], logits + 1.0)


def test_bad_logits_are_marked_as_the_host_pass_marks_them(tmp_path):
    shape = (1, 20, 6, 7)
    logits = np.random.default_rng(3).normal(size=shape).astype(np.float32)
    logits[0, 5, 1, 1] = np.nan
    logits[0, 19, 2, 3] = np.inf
    logits[0, :, 4, 4] = -np.inf
    model = write_passthrough(tmp_path / "seg.tflite", shape, extra_plane=False)
    head = headed_model(str(model), 0, tmp_path / "cache")
    labels, probability, _ = read_head(run_model(head.path, logits), head, post.INVALID_LABEL)
    assert np.isnan(probability[[1, 2, 4], [1, 3, 4]]).all()
    # NaN: no class; +inf wins, as numpy's argmax; all -inf equal: the lowest id.
    assert (labels[1, 1], labels[2, 3], labels[4, 4]) == (post.INVALID_LABEL, 19, 0)
    good = np.isfinite(logits[0]).all(axis=0)
    assert np.array_equal(labels[good], np.argmax(logits[0], axis=0)[good])
    host_labels, host_probability, _ = post.labels_and_probability(logits, True)
    assert np.array_equal(labels, host_labels)
    np.testing.assert_allclose(probability, host_probability, atol=1e-3)


def test_the_pipeline_publishes_the_host_passs_products_with_the_graphs_labels(tmp_path,
                                                                            monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    frame = np.random.default_rng(1).integers(0, 255, (360, 640, 3), dtype=np.uint8)
    request = Request(depth=True, normals=True, labels=True, labels_colored=True,
                      labels_confidence=True)
    quiet = lambda _: None  # noqa: E731
    headed = load_pipeline(TIPS_TEST_MODEL, Settings(backend="cpu"), log=quiet)
    host = load_pipeline(TIPS_TEST_MODEL, Settings(backend="cpu", publish_segmentation=False),
                         log=quiet)
    assert headed.runner.logits_head is not None and host.runner.logits_head is None
    # The copy lives in the cache and ends in labels and probability, not the logits.
    assert list(tmp_path.glob("dense_perception/graphs/*.tflite"))
    assert headed.runner.output_shapes[2] == (1, 1, 256, 256)
    a, b = (p.process(frame, "rgb8", request=request) for p in (headed, host))
    for name in ("depth", "normals", "labels", "labels_colored"):
        assert np.array_equal(getattr(a, name), getattr(b, name),
                              equal_nan=name in ("depth", "normals")), name
    assert np.abs(a.labels_confidence.astype(int) - b.labels_confidence.astype(int)).max() <= 1


def test_the_copy_is_written_once_and_found_again(tmp_path):
    model = write_passthrough(tmp_path / "seg.tflite", (1, 4, 3, 3), extra_plane=False)
    first = headed_model(str(model), 0, tmp_path / "cache")
    stamp = os.stat(first.path).st_mtime_ns
    assert headed_model(str(model), 0, tmp_path / "cache") == first
    assert os.stat(first.path).st_mtime_ns == stamp
    # The accelerators' copy (argmax over the logits as they are) is another file.
    other = headed_model(str(model), 0, tmp_path / "cache", classes_last=False)
    assert other.path != first.path and other.probability == first.probability
    assert not list((tmp_path / "cache").glob("*.part"))


@pytest.mark.parametrize("classes_last", [True, False])
def test_both_copies_label_alike_on_the_cpu(tmp_path, classes_last):
    logits = np.random.default_rng(5).normal(size=(1, 30, 9, 11)).astype(np.float32)
    model = write_passthrough(tmp_path / "seg.tflite", logits.shape, extra_plane=False)
    head = headed_model(str(model), 0, tmp_path / "cache", classes_last=classes_last)
    labels, _, _ = read_head(run_model(head.path, logits), head, post.INVALID_LABEL)
    assert np.array_equal(labels, np.argmax(logits[0], axis=0))


def test_a_graph_it_cannot_extend_or_an_unwritable_cache_falls_back_to_the_host(tmp_path,
                                                                               monkeypatch):
    warnings = []
    odd = write_passthrough(tmp_path / "odd.tflite", (2, 4, 3, 3), extra_plane=False)
    assert graph_with_labels(str(odd), 0, warnings.append) == (str(odd), None)
    assert "[2, 4, 3, 3]" in warnings[-1] and "host" in warnings[-1]
    blocker = tmp_path / "not_a_folder"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    good = write_passthrough(tmp_path / "good.tflite", (1, 4, 3, 3), extra_plane=False)
    assert graph_with_labels(str(good), 0, warnings.append) == (str(good), None)
    assert "could not be written" in warnings[-1]
