# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The LiteRT runner on real LiteRT: backends, in-place I/O, errors. Runs on x86_64 and, in
``make test-arm64``, on aarch64 (ai-edge-litert 2.x)."""

import os

import numpy as np
import pytest

from support.common import DA3_TEST_MODEL, TIPS_TEST_MODEL, gpu_probe, hardware_gpu
from dense_perception.core.backends.runner import ModelLoadError, litert_version, open_runner
from dense_perception.core.backends.runner_base import CompiledModelRunner, InterpreterRunner
from dense_perception.core.backends.runner import BackendConfig
from dense_perception.core.settings.row import SettingError
from dense_perception.core.settings.table import Settings

LITERT_2 = not litert_version().startswith("1.")


def random_input(shape, seed=0):
    return np.random.default_rng(seed).uniform(0, 1, shape).astype(np.float32)


def test_cpu_runner_writes_in_place_and_matches_reference(maker):
    runner = open_runner(TIPS_TEST_MODEL, BackendConfig(backend="cpu", num_threads=2),
                         log=lambda _: None)
    assert runner.backend == "cpu" and "2 threads" in runner.description
    x = random_input((1, 3, 448, 448))
    runner.input_buffer()[...] = x
    depth, normals, logits = runner.run()
    ref_depth, ref_normals, ref_labels = maker.tipsv2_reference(x)
    np.testing.assert_allclose(depth, ref_depth, atol=1e-5)
    np.testing.assert_allclose(normals, ref_normals, atol=1e-5)
    agreement = np.mean(logits[0].argmax(0) == ref_labels[0])
    assert agreement > 0.999  # only float ties at .5 may differ


def test_da3_runner_output(maker):
    runner = open_runner(DA3_TEST_MODEL, BackendConfig(backend="cpu"), log=lambda _: None)
    x = random_input((1, 3, 896, 504), seed=3) * 4 - 2
    runner.input_buffer()[...] = x
    (depth,) = runner.run()
    np.testing.assert_allclose(depth, maker.da3_reference(x), atol=1e-5)


def test_auto_falls_back_to_cpu_and_says_why():
    """No GPU, or only a CPU emulation of one (lavapipe): 'auto' runs XNNPACK and says why."""
    if hardware_gpu():
        pytest.skip("this machine has a GPU adapter that 'auto' uses")
    messages = []
    runner = open_runner(TIPS_TEST_MODEL, BackendConfig(backend="auto"), log=messages.append)
    assert runner.backend == "cpu"
    assert any("GPU unavailable" in m and "fell back to CPU" in m for m in messages)
    assert "GPU unavailable" in runner.fallback_note
    assert any("running on cpu" in m for m in messages)


def test_gpu_backend_fails_fast_when_no_gpu():
    adapter, why_not = gpu_probe()
    if adapter is not None or not why_not:
        pytest.skip("this machine has a Vulkan GPU adapter (test_gpu_runner.py tests it)")
    with pytest.raises(ModelLoadError, match="GPU backend did not initialise.*'auto' or 'cpu'"):
        open_runner(TIPS_TEST_MODEL, BackendConfig(backend="gpu"), log=lambda _: None)


@pytest.mark.skipif(not LITERT_2, reason="CompiledModel accelerator options need ai-edge-litert 2.x")
def test_compiled_model_path_matches_interpreter():
    """The CompiledModel code path (used for the GPU) gives the Interpreter's outputs."""
    compiled = CompiledModelRunner(TIPS_TEST_MODEL, "cpu", num_threads=2)
    interp = InterpreterRunner(TIPS_TEST_MODEL, 2)
    assert compiled.output_shapes == interp.output_shapes
    x = random_input((1, 3, 448, 448), seed=5)
    compiled.input_buffer()[...] = x
    interp.input_buffer()[...] = x
    for a, b in zip(compiled.run(), interp.run()):
        np.testing.assert_array_equal(a, b)


@pytest.mark.skipif(not LITERT_2, reason="CompiledModel accelerator options need ai-edge-litert 2.x")
@pytest.mark.timeout(120)
def test_cpu_compiled_model_runs_in_a_worker_that_leaves_the_gil_free(maker):
    """cpu_precision's fp16 path runs CompiledModel on the CPU, whose run holds the GIL; in its
    worker process a Python thread keeps running meanwhile. Here with XNNPACK's fp32 flags
    (fp16 needs an ARMv8.2 CPU: make test-arm64), against the test model's closed form."""
    from dense_perception.core.backends.cpu_precision import XNNPACK_FLAG_QS8, XNNPACK_FLAG_QU8
    from dense_perception.core.backends.gpu_runner import GpuProcessRunner
    from support.gil_ticks import Ticker, gil_was_free

    flags = XNNPACK_FLAG_QS8 | XNNPACK_FLAG_QU8
    worker = GpuProcessRunner(TIPS_TEST_MODEL, cpu={"num_threads": 1, "xnnpack_flags": flags})
    inproc = CompiledModelRunner(TIPS_TEST_MODEL, "cpu", num_threads=1,
                                 cpu_options={"xnnpack_flags": flags})
    try:
        assert worker.backend == "cpu" and "worker process" in worker.description
        x = random_input((1, 3, 448, 448), seed=7)
        worker.input_buffer()[...] = x
        depth, normals, _ = worker.run()
        ref_depth, ref_normals, _ = maker.tipsv2_reference(x)
        np.testing.assert_allclose(depth, ref_depth, atol=1e-5)
        np.testing.assert_allclose(normals, ref_normals, atol=1e-5)
        inproc.run()
        with Ticker() as ticker:
            got, spent = ticker.ticks_during(worker.run, rounds=10)
            got_inproc, spent_inproc = ticker.ticks_during(inproc.run, rounds=10)
    finally:
        worker.close()
    print(f"ticks of a 2 ms Python loop during CPU CompiledModel runs: worker process {got} in "
          f"{spent * 1000:.0f} ms, in-process {got_inproc} in {spent_inproc * 1000:.0f} ms")
    assert gil_was_free(got, spent), (got, spent)


def test_missing_file(tmp_path):
    with pytest.raises(ModelLoadError, match="does not exist.*models/README.md.*model_path"):
        open_runner(str(tmp_path / "da3_small_gpu_fp16.tflite"), BackendConfig(backend="cpu"))
    with pytest.raises(ModelLoadError, match="model_path is empty"):
        open_runner("", BackendConfig(backend="cpu"))


def test_not_a_tflite(tmp_path):
    junk = tmp_path / "junk.tflite"
    junk.write_bytes(b"<html>404 not found</html>")
    with pytest.raises(ModelLoadError, match="not a LiteRT/TFLite flatbuffer"):
        open_runner(str(junk), BackendConfig(backend="cpu"))
    (tmp_path / "empty.tflite").write_bytes(b"")
    with pytest.raises(ModelLoadError, match="not a LiteRT/TFLite flatbuffer"):
        open_runner(str(tmp_path / "empty.tflite"), BackendConfig(backend="cpu"))


@pytest.mark.parametrize("keep", [0.1, 0.5, 0.9, 0.99])
def test_truncated_file_is_an_error_not_a_crash(tmp_path, keep):
    """A partial download must not reach LiteRT (1.4.0 segfaults on some truncated files)."""
    data = open(TIPS_TEST_MODEL, "rb").read()
    truncated = tmp_path / "truncated.tflite"
    truncated.write_bytes(data[:int(len(data) * keep)])
    with pytest.raises(ModelLoadError, match="is damaged: truncated or corrupt.*again"):
        open_runner(str(truncated), BackendConfig(backend="cpu"), log=lambda _: None)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_unreadable(tmp_path):
    path = tmp_path / "locked.tflite"
    path.write_bytes(open(DA3_TEST_MODEL, "rb").read())
    path.chmod(0)
    with pytest.raises(ModelLoadError, match="cannot be read"):
        open_runner(str(path), BackendConfig(backend="cpu"))


def test_bad_arguments():
    with pytest.raises(ModelLoadError, match="backend 'tpu' is unknown"):
        open_runner(DA3_TEST_MODEL, BackendConfig(backend="tpu"))
    # the settings table refuses a thread count before any runner is opened
    with pytest.raises(SettingError, match="num_threads must be >= 1, or -1 for all cores"):
        Settings(num_threads=0)
    with pytest.raises(SettingError, match="num_threads must be >= -1, got -2"):
        Settings(num_threads=-2)
