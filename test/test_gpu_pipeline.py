# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The GPU backend for real through the pipeline and the offline command: GPU outputs match
XNNPACK's at least as well as the model cards' figures, and a hung GPU inference fails its
input while the next input goes on.

Runs wherever Vulkan has an adapter; in CI that is Mesa's lavapipe, set up by ``make test-gpu``.
Without one every test here skips and says why.
"""

import os
from pathlib import Path
import threading
import time

import numpy as np
import pytest

from support.common import DA3_TEST_MODEL, TIPS_TEST_MODEL
from support.gpu_adapter import gpu_adapter, quiet  # noqa: F401 (fixture adapter)
from dense_perception.core.pipeline import load_pipeline
from dense_perception.core.frame_data import Request
from dense_perception.core.settings.table import Settings

pytestmark = pytest.mark.gpu

# The cards' GPU-vs-CPU figures (shared/model-cards); ours must be at least as close.
CARD_DA3_PEARSON = 0.99975
CARD_TIPS_DEPTH, CARD_TIPS_NORMALS, CARD_TIPS_SEG = 0.99986, 0.99990, 0.993


def pearson(a, b):
    ok = np.isfinite(a) & np.isfinite(b)
    return np.corrcoef(a[ok].ravel(), b[ok].ravel())[0, 1]


def sample_frames():
    from tools.common.scene import make_sample_scene
    scene = make_sample_scene()
    return [scene, np.ascontiguousarray(scene[::-1, ::-1])]


# ---- pipeline ---------------------------------------------------------------------------------
def _products(model, backend, precision="fp16"):
    pipeline = load_pipeline(model, Settings(backend=backend, gpu_precision=precision), log=quiet,
                             warn=quiet)
    try:
        request = Request(depth=True, normals=True, labels=True)
        return [pipeline.process(f, "rgb8", request=request) for f in sample_frames()]
    finally:
        getattr(pipeline.runner, "close", lambda: None)()


@pytest.mark.parametrize("precision", ["fp16", "fp32"])
def test_pipeline_gpu_matches_cpu_at_least_as_well_as_the_cards(adapter, precision):
    """Same frames (the sample scene) through the whole pipeline on GPU and on XNNPACK."""
    gpu, cpu = _products(DA3_TEST_MODEL, "gpu", precision), _products(DA3_TEST_MODEL, "cpu")
    depth = pearson(np.stack([p.depth for p in gpu]), np.stack([p.depth for p in cpu]))
    print(f"DA3 test model, {precision}: depth Pearson {depth:.6f} (card {CARD_DA3_PEARSON})")
    assert depth >= CARD_DA3_PEARSON

    gpu, cpu = _products(TIPS_TEST_MODEL, "gpu", precision), _products(TIPS_TEST_MODEL, "cpu")
    depth = pearson(np.stack([p.depth for p in gpu]), np.stack([p.depth for p in cpu]))
    normals = pearson(np.stack([p.normals for p in gpu]), np.stack([p.normals for p in cpu]))
    labels_gpu = np.stack([p.labels for p in gpu]).astype(int)
    labels_cpu = np.stack([p.labels for p in cpu]).astype(int)
    seen = labels_cpu != 255
    diff = np.abs(labels_gpu - labels_cpu)[seen]
    agree, near = np.mean(diff == 0), np.mean(diff <= 1)
    print(f"TIPSv2 test model, {precision}: depth {depth:.6f} (card {CARD_TIPS_DEPTH}), "
          f"normals {normals:.6f} (card {CARD_TIPS_NORMALS}), seg argmax agreement "
          f"{agree:.2%} (card {CARD_TIPS_SEG:.1%}), within one class {near:.2%}")
    assert depth >= CARD_TIPS_DEPTH and normals >= CARD_TIPS_NORMALS
    if precision == "fp32":
        assert agree >= CARD_TIPS_SEG
    else:
        # The test model's label is round(149 v), v a bilinear resize of the blue channel: 150
        # bins of width 1/149 on one continuous value. fp16 stores v to 2^-11 and the GPU's
        # resize computes source coordinates beyond 256 px in steps of 1/4 px, so pixels near
        # a bin edge (and at the scene's sharp edges) move to the next bin. Real logits have
        # margins far above fp16's step (tools/checks/gpu_check.py; card: 99.3 %).
        assert agree >= 0.9 and near >= 0.95


@pytest.mark.timeout(150)
def test_offline_a_hung_gpu_inference_fails_its_input_and_the_next_goes_on(adapter, tmp_path,
                                                                           capsys):
    """``process`` over two folders on the GPU; the worker hangs (SIGSTOP) once the first has
    written a frame: that input fails with the reason, the next is done by a fresh worker."""
    import json
    from signal import SIGSTOP
    import cv2
    from support.common import run_cli
    from support.model_truth import da3_depth_of
    from support.worker_procs import alive, wait_for_worker

    colour = np.array([40, 120, 200])  # RGB; a flat frame's depth is the closed form's
    first, second, out = tmp_path / "first", tmp_path / "second", tmp_path / "out"
    for folder, count in ((first, 80), (second, 3)):
        folder.mkdir()
        for i in range(count):
            cv2.imwrite(str(folder / f"{i:03d}.png"), np.full((48, 64, 3), colour[::-1], np.uint8))
    stopped = []

    def hang_the_worker_once_a_frame_is_written():
        deadline = time.monotonic() + 90
        while not stopped and time.monotonic() < deadline:
            # The first input's output, under its temporary name until it is complete.
            if any(any(d.iterdir()) for d in out.glob(".first*/depth")):
                worker = wait_for_worker(os.getpid(), 10)
                os.kill(worker, SIGSTOP)
                stopped.append(worker)
            time.sleep(0.005)
    watcher = threading.Thread(target=hang_the_worker_once_a_frame_is_written, daemon=True)
    watcher.start()
    code, _, stderr = run_cli(["process", first, second, "--model", DA3_TEST_MODEL, "--backend",
                               "gpu", "--gpu-timeout", "2", "--outputs", "depth", "--out", out],
                              capsys)
    watcher.join(timeout=5)
    assert stopped, "the first input finished before its worker could be stopped"
    rows = {Path(r["input"]).name: r
            for r in json.loads((out / "fleet_summary.json").read_text())["inputs"]}
    assert code == 2 and "Traceback" not in stderr
    assert rows["first"]["status"] == "failed" and 1 <= rows["first"]["frames"] < 80
    assert rows["first"]["error"].startswith(
        "GPU inference did not finish within 2 s (gpu_timeout); GPU worker restarted")
    assert not Path(rows["first"]["output"]).exists()  # nothing that looks complete
    assert rows["second"]["status"] == "done" and rows["second"]["frames"] == 3
    for i in range(3):
        depth = np.load(Path(rows["second"]["output"]) / "depth" / f"{i:03d}.npy")
        np.testing.assert_allclose(depth, da3_depth_of(colour), atol=3e-3 * 8)
    assert not alive(stopped[0])

