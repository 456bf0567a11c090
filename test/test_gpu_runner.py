# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The GPU backend for real through the runner: LiteRT's WebGPU accelerator (Dawn over Vulkan)
against the test models' closed-form outputs, its adapter, the GIL left free during inference,
and a hung or dead worker process replaced a bounded number of times.

Runs wherever Vulkan has an adapter; in CI that is Mesa's lavapipe, set up by ``make test-gpu``.
Without one every test here skips and says why.
"""

import os
import time

import numpy as np
import pytest

from support.common import DA3_TEST_MODEL, TIPS_TEST_MODEL
from support.gpu_adapter import gpu_adapter, quiet  # noqa: F401 (fixture adapter)
from dense_perception.core.backends.gpu_runner import GpuProcessRunner
from dense_perception.core.backends.runner import open_runner
from dense_perception.core.backends.runner_base import CompiledModelRunner
from dense_perception.core.backends.runner import BackendConfig

pytestmark = pytest.mark.gpu


def random_input(shape, seed=0):
    return np.random.default_rng(seed).uniform(0, 1, shape).astype(np.float32)


# ---- runner -----------------------------------------------------------------------------------
@pytest.mark.parametrize("precision,atol", [("fp32", 1e-5), ("fp16", 3e-3)])
def test_gpu_runner_gives_the_closed_form_outputs(adapter, maker, precision, atol):
    runner = open_runner(TIPS_TEST_MODEL, BackendConfig(backend="gpu", gpu_precision=precision),
                         log=quiet, warn=quiet)
    try:
        assert runner.backend == "gpu" and adapter.name in runner.description
        x = random_input((1, 3, 448, 448))
        runner.input_buffer()[...] = x
        depth, normals, logits = runner.run()
        ref_depth, ref_normals, ref_labels = maker.tipsv2_reference(x)
        np.testing.assert_allclose(depth, ref_depth, atol=atol * 4)  # depth reaches 4
        np.testing.assert_allclose(normals, ref_normals, atol=atol)
        # The winning logit is -(149 v - k)^2 <= 0.25 and every logit fits fp16 (|x| < 65504).
        assert logits.max() <= 0.25 + atol and logits.min() > -65504
        if precision == "fp32":
            assert np.mean(logits[0].argmax(0) == ref_labels[0]) > 0.999
    finally:
        runner.close()

    runner = open_runner(DA3_TEST_MODEL, BackendConfig(backend="gpu", gpu_precision=precision),
                         log=quiet, warn=quiet)
    try:
        x = random_input((1, 3, 896, 504), seed=3) * 4 - 2
        runner.input_buffer()[...] = x
        (depth,) = runner.run()
        np.testing.assert_allclose(depth, maker.da3_reference(x), atol=atol * 8)
    finally:
        runner.close()


def test_adapter_is_named_and_auto_refuses_a_cpu_emulation(adapter):
    logs, warnings = [], []
    runner = open_runner(DA3_TEST_MODEL, BackendConfig(backend="gpu"), log=logs.append,
                         warn=warnings.append)
    runner.close()
    assert any(f"GPU adapter: {adapter.describe()}" in m for m in logs)
    assert runner.fully_accelerated  # every op of the test models has a WebGPU kernel
    logs = []
    auto = open_runner(DA3_TEST_MODEL, BackendConfig(backend="auto"), log=logs.append, warn=quiet)
    if adapter.is_software:
        assert any(adapter.name in w and "CPU emulation" in w for w in warnings)
        assert auto.backend == "cpu"
        assert adapter.name in auto.fallback_note and "fell back to CPU (XNNPACK)" in \
            auto.fallback_note
        assert any("running on cpu" in m for m in logs)
    else:
        assert auto.backend == "gpu" and not warnings
        auto.close()


def test_gpu_inference_leaves_the_gil_free(adapter):
    """A Python thread keeps running while the GPU works (the model is in a worker process).
    The in-process CompiledModel, for comparison, holds the GIL while it waits in read()."""
    from support.gil_ticks import Ticker, gil_was_free

    worker = GpuProcessRunner(TIPS_TEST_MODEL)
    inproc = CompiledModelRunner(TIPS_TEST_MODEL, "gpu")
    try:
        worker.run()
        inproc.run()
        with Ticker() as ticker:
            got, spent = ticker.ticks_during(worker.run, rounds=3)
            got_inproc, spent_inproc = ticker.ticks_during(inproc.run, rounds=3)
    finally:
        worker.close()
    print(f"ticks of a 2 ms Python loop during GPU inference: worker process {got} in "
          f"{spent * 1000:.0f} ms, in-process CompiledModel {got_inproc} in "
          f"{spent_inproc * 1000:.0f} ms")
    assert gil_was_free(got, spent), (got, spent)


@pytest.mark.timeout(120)
def test_a_hung_or_dead_worker_is_replaced_a_bounded_number_of_times(adapter, maker):
    """SIGSTOP makes the worker hang for real (from the runner's side it simply stops
    answering); SIGKILL is a crash. Each costs one frame, within the timeout, and a fresh
    worker gives the closed-form outputs again; one hang too many is final."""
    from signal import SIGKILL, SIGSTOP
    from dense_perception.core.backends.gpu_runner import GpuWorkerError, GpuWorkerFailedError
    from support.worker_procs import alive, gpu_workers

    timeout = 1.0
    runner = GpuProcessRunner(DA3_TEST_MODEL, timeout_s=timeout, max_restarts=1)
    x = random_input((1, 3, 896, 504), seed=5) * 4 - 2
    truth = maker.da3_reference(x)

    def check_outputs():
        runner.input_buffer()[...] = x
        (depth,) = runner.run()
        np.testing.assert_allclose(depth, truth, atol=3e-3 * 8)

    def fails_within_timeout(sig, expected=GpuWorkerError):
        old = runner.worker_pid
        assert gpu_workers(os.getpid()) == [old]
        os.kill(old, sig)
        start = time.monotonic()
        with pytest.raises(expected) as failure:
            runner.run()
        elapsed = time.monotonic() - start
        assert not alive(old), "the hung worker was left running"
        return str(failure.value), elapsed

    try:
        check_outputs()
        message, elapsed = fails_within_timeout(SIGSTOP)
        # Killed at the timeout; the restart (load + warm-up, ~1 s here) is part of the wait.
        assert timeout <= elapsed < timeout + 60, elapsed
        assert message.startswith("GPU inference did not finish within 1 s (gpu_timeout)")
        assert "GPU worker restarted (1 of 1" in message
        check_outputs()  # the fresh worker, the same shared memory
        message, _ = fails_within_timeout(SIGKILL)  # a crash
        assert "exited (status -9)" in message and "restarted (1 of 1" in message
        check_outputs()  # a good inference: the count starts again
        # Two hangs with no good inference between them: one more than gpu_max_restarts.
        fails_within_timeout(SIGSTOP)
        message, _ = fails_within_timeout(SIGSTOP, GpuWorkerFailedError)
        assert "2 times in a row (gpu_max_restarts 1)" in message
        assert runner.worker_pid is None and gpu_workers(os.getpid()) == []
        with pytest.raises(GpuWorkerFailedError):  # and it stays so, at once
            runner.run()
        assert runner.restarts == 3
    finally:
        runner.close()

