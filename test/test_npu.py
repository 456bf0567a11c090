# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The NPU backend (LiteRT's vendor plugins) for real, on OpenVINO's CPU device: runner, cache,
the preload of OpenVINO's libraries, pipeline, offline command and node, against the test models'
closed-form outputs and against XNNPACK.

``make test-npu`` runs this file in .venv-npu (requirements/npu.txt: openvino). Tests marked
``npu`` skip where OpenVINO is not installed (``make test`` deselects them); the missing-runtime
test runs where it is absent.
"""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from support.common import DA3_TEST_MODEL, REPO, TIPS_TEST_MODEL, run_cli
from dense_perception.core.backends.runner import ModelLoadError, open_runner
from dense_perception.core.backends.runner import BackendConfig

HAS_OPENVINO = bool(__import__("importlib").util.find_spec("openvino"))
# The x86_64 ai-edge-litert 2.3 wheel has the OpenVINO plugin; the aarch64 one has none.
HAS_PLUGIN = (Path(__import__("ai_edge_litert").__file__).parent / "vendors" / "intel_openvino"
              ).is_dir()
# Agreement with XNNPACK on the test models (measured: depth and normals differ by < 2e-7,
# logits corr 0.999996): what OpenVINO's CPU device must keep.
ATOL = 1e-4
MIN_CORR = 0.99999


def quiet(_):
    pass


def random_input(shape, seed=0):
    return np.random.default_rng(seed).uniform(0, 1, shape).astype(np.float32)


def on_cpu_device(cache_dir):
    return {"vendor": "intel_openvino", "device": "CPU", "cache_dir": str(cache_dir)}


@pytest.fixture(scope="module")
def openvino():
    if not HAS_OPENVINO:
        if os.environ.get("DENSE_PERCEPTION_REQUIRE_NPU") == "1":  # make test-npu
            pytest.fail("make test-npu installed OpenVINO but it does not import")
        pytest.skip("OpenVINO is not installed (make test-npu installs it in .venv-npu)")
    import openvino as ov
    return ov


# ---- errors ----------------------------------------------------------------------------------
@pytest.mark.timeout(60)
@pytest.mark.skipif(HAS_OPENVINO or not HAS_PLUGIN, reason="OpenVINO is installed here, or "
                    "this ai-edge-litert has no OpenVINO plugin")
def test_missing_openvino_is_one_line_saying_what_to_install(tmp_path):
    with pytest.raises(ModelLoadError) as info:
        open_runner(TIPS_TEST_MODEL, BackendConfig(backend="npu", npu=on_cpu_device(tmp_path)),
                    log=quiet)
    message = str(info.value)
    assert "\n" not in message
    assert ("the NPU backend did not start: OpenVINO runtime 2026.3.1 not found (the LiteRT "
            "plugin links libopenvino.so.2631): pip install openvino==2026.3.1") in message
    assert "'auto' or 'cpu'" in message


@pytest.mark.timeout(60)
@pytest.mark.skipif(not HAS_PLUGIN, reason="this ai-edge-litert has no OpenVINO plugin")
def test_another_openvino_release_is_named_with_the_one_to_install(tmp_path):
    """An OpenVINO whose libraries are not the release the plugin links (a package folder laid
    out as pip's wheel, with 2025.4's library names) first on sys.path."""
    site = tmp_path / "site"
    (site / "openvino" / "libs").mkdir(parents=True)
    (site / "openvino" / "__init__.py").write_text("")
    for name in ("libopenvino.so.2540", "libopenvino_tensorflow_lite_frontend.so.2540"):
        (site / "openvino" / "libs" / name).write_bytes(b"")
    (site / "openvino-2025.4.0.dist-info").mkdir()
    (site / "openvino-2025.4.0.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: openvino\nVersion: 2025.4.0\n")
    script = ("import sys\nfrom dense_perception.core.backends.runner import (BackendConfig, "
              "ModelLoadError, open_runner)\n"
              "try:\n    open_runner(sys.argv[1], BackendConfig('npu', npu={'vendor': "
              "'intel_openvino', 'device': 'CPU'}), log=print)\nexcept ModelLoadError as exc:\n"
              "    print('ERROR', exc)\n")
    done = subprocess.run([sys.executable, "-c", script, TIPS_TEST_MODEL], capture_output=True,
                          text=True, timeout=50, env={**os.environ, "PYTHONPATH": os.pathsep.join(
                              [str(site), str(REPO)])})
    assert (f"ERROR the NPU backend did not start: OpenVINO 2025.4.0 is installed but "
            f"ai-edge-litert 2.3.0's plugin needs OpenVINO 2026.3.1 (libopenvino.so.2631 not in "
            f"{site / 'openvino' / 'libs'}): pip install openvino==2026.3.1") in done.stdout, \
        done.stdout + done.stderr[-1000:]


@pytest.mark.timeout(60)
def test_qualcomm_without_its_libraries_is_one_line_naming_the_parameter(tmp_path):
    """No ai-edge-litert wheel has LiteRT's Qualcomm dispatch library or the QNN libraries."""
    with pytest.raises(ModelLoadError) as info:
        open_runner(TIPS_TEST_MODEL,
                    BackendConfig(backend="npu",
                                  npu={"vendor": "qualcomm", "library_dir": str(tmp_path)}),
                    log=quiet)
    message = str(info.value)
    assert "\n" not in message
    assert ("the NPU backend did not start: no Qualcomm dispatch library "
            f"(libLiteRtDispatch_Qualcomm.so) in npu_library_dir '{tmp_path}'") in message


@pytest.mark.timeout(60)
def test_qualcomm_board_check_says_what_is_missing(tmp_path):
    """tools/checks/npu_check.sh, here (no board, no libraries): each missing piece, then the one-line
    startup error, exit status 1."""
    done = subprocess.run([str(REPO / "tools" / "checks" / "npu_check.sh"), str(tmp_path)],
                          env={**os.environ, "PYTHON": sys.executable}, capture_output=True,
                          text=True, timeout=50)
    assert done.returncode == 1, done.stderr
    assert "MISSING libLiteRtDispatch_Qualcomm*.so" in done.stdout
    assert "MISSING libQnnHtp.so" in done.stdout
    assert "FAILED: the NPU backend did not start: no Qualcomm dispatch library" in done.stdout


@pytest.mark.npu
@pytest.mark.timeout(120)
def test_no_npu_device_names_what_openvino_sees(openvino, tmp_path):
    seen = openvino.Core().available_devices
    if "NPU" in seen:
        pytest.skip("this machine has an NPU")
    with pytest.raises(ModelLoadError) as info:
        open_runner(TIPS_TEST_MODEL,
                    BackendConfig(backend="npu", npu={"vendor": "intel_openvino", "device": "NPU",
                                 "cache_dir": str(tmp_path)}),
                    log=quiet)
    assert f"no NPU device; OpenVINO 2026.3.1 sees: {', '.join(seen)}" in str(info.value)
    assert "\n" not in str(info.value)


# ---- runner ----------------------------------------------------------------------------------
@pytest.mark.npu
@pytest.mark.timeout(180)
def test_openvino_cpu_device_gives_the_closed_form_outputs(openvino, maker, tmp_path):
    logs = []
    runner = open_runner(TIPS_TEST_MODEL,
                         BackendConfig(backend="npu", npu=on_cpu_device(tmp_path)),
                         log=logs.append)
    assert runner.backend == "npu" and runner.device == "CPU" and runner.fully_accelerated
    assert runner.description.startswith("npu (Intel OpenVINO 2026.3.1 (LiteRT plugin")
    x = random_input((1, 3, 448, 448))
    runner.input_buffer()[...] = x
    depth, normals, logits = runner.run()
    ref_depth, ref_normals, ref_labels = maker.tipsv2_reference(x)
    np.testing.assert_allclose(depth, ref_depth, atol=ATOL)
    np.testing.assert_allclose(normals, ref_normals, atol=ATOL)
    # The test model's label is round(149 v), v one continuous value: OpenVINO's CPU device
    # computes v a little differently (measured: 93.5 % exact, all within one class).
    step = np.abs(logits[0].argmax(0).astype(int) - ref_labels[0])
    assert np.mean(step == 0) >= 0.9 and step.max() <= 1

    runner = open_runner(DA3_TEST_MODEL, BackendConfig(backend="npu", npu=on_cpu_device(tmp_path)),
                         log=quiet)
    x = random_input((1, 3, 896, 504), seed=3) * 4 - 2
    runner.input_buffer()[...] = x
    (depth,) = runner.run()
    np.testing.assert_allclose(depth, maker.da3_reference(x), atol=ATOL)
    assert any("NPU: Intel OpenVINO 2026.3.1" in m and "device CPU" in m for m in logs)


@pytest.mark.npu
@pytest.mark.timeout(180)
def test_second_start_loads_the_compiled_model_from_the_cache(openvino, tmp_path):
    x = random_input((1, 3, 448, 448), seed=5)

    def start():
        logs = []
        runner = open_runner(TIPS_TEST_MODEL,
                             BackendConfig(backend="npu", npu=on_cpu_device(tmp_path / "cache")),
                             log=logs.append)
        runner.input_buffer()[...] = x
        return runner, [np.array(o) for o in runner.run()], " | ".join(logs)

    first, out1, log1 = start()
    cached = list((tmp_path / "cache").glob("test_tipsv2_b14_dpt-*-intel_openvino-*-cpu.tflite"))
    assert len(cached) == 1 and not first.from_cache and "compiled in" in log1
    second, out2, log2 = start()
    assert second.from_cache and f"loaded from cache {cached[0]}" in log2
    for a, b in zip(out1, out2):
        np.testing.assert_array_equal(a, b)

    # A damaged entry is dropped and compiled again, not a failed start.
    cached[0].write_bytes(cached[0].read_bytes()[:200])
    third, out3, log3 = start()
    assert "did not load" in log3 and "compiled in" in log3 and not third.from_cache
    np.testing.assert_array_equal(out3[0], out1[0])


@pytest.mark.npu
@pytest.mark.timeout(180)
def test_openvino_is_preloaded_from_another_folder(openvino, tmp_path):
    """ai-edge-litert in one venv (.venv, no OpenVINO), openvino on sys.path from another
    folder: the plugin's RUNPATH misses it. Without the preload LiteRT silently runs XNNPACK;
    with it the model runs on OpenVINO, no LD_LIBRARY_PATH."""
    plain = REPO / ".venv" / "bin" / "python"
    if not plain.exists() or subprocess.run([plain, "-c", "import openvino"],
                                            capture_output=True).returncode == 0:
        pytest.skip("needs .venv without OpenVINO (make setup)")
    elsewhere = tmp_path / "site"
    elsewhere.mkdir()
    for name in ("openvino", "openvino_telemetry"):
        spec = __import__("importlib").util.find_spec(name)
        if spec is not None:
            (elsewhere / name).symlink_to(Path(spec.origin).parent)
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    env["PYTHONPATH"] = os.pathsep.join([str(elsewhere), str(REPO)])
    script = ("import sys\nfrom dense_perception.core.backends.runner import BackendConfig, "
              "open_runner\nr = open_runner(sys.argv[1], BackendConfig('npu', npu={'vendor': "
              "'intel_openvino', 'device': 'CPU', 'cache_dir': 'off'}), log=print)\n"
              "print('DEVICE', r.device)")
    done = subprocess.run([plain, "-c", script, TIPS_TEST_MODEL], env=env, capture_output=True,
                          text=True, timeout=150)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "DEVICE CPU" in done.stdout and "JIT-compiled" in done.stdout

    # The control: the same load without the preload never reaches OpenVINO.
    control = ("import os, ai_edge_litert as a\nfrom ai_edge_litert import compiled_model as cm\n"
               "from ai_edge_litert.environment import Environment, EnvironmentOptions\n"
               "v = os.path.join(os.path.dirname(a.__file__), 'vendors', 'intel_openvino')\n"
               "e = Environment.create(options=EnvironmentOptions(runtime_path=os.path.dirname("
               "a.__file__), compiler_plugin_path=v + '/compiler', dispatch_library_path=v + "
               "'/dispatch'))\ncm.CompiledModel.from_file(__import__('sys').argv[1], "
               "environment=e, options=cm.Options(cm.HardwareAccelerator.NPU | "
               "cm.HardwareAccelerator.CPU))\n")
    done = subprocess.run([plain, "-c", control, TIPS_TEST_MODEL], env=env, capture_output=True,
                          text=True, timeout=150)
    assert "Using Intel OpenVINO device" not in done.stderr


@pytest.mark.npu
@pytest.mark.timeout(180)
def test_npu_inference_leaves_the_gil_free(openvino, tmp_path):
    """A Python thread keeps running during NPU inferences: the model is in a worker process.
    OpenVINO's dispatch in this process, for comparison, holds the GIL while it runs."""
    from dense_perception.core.backends.npu_runner import open_npu_runner
    from support.gil_ticks import Ticker, gil_was_free

    worker = open_runner(TIPS_TEST_MODEL,
                         BackendConfig(backend="npu", npu=on_cpu_device(tmp_path)), log=quiet)
    inproc = open_npu_runner(TIPS_TEST_MODEL, "intel_openvino", "CPU", str(tmp_path), log=quiet)
    assert worker.worker_pid is not None
    try:
        with Ticker() as ticker:
            got, spent = ticker.ticks_during(worker.run, rounds=5)
            got_inproc, spent_inproc = ticker.ticks_during(inproc.run, rounds=5)
    finally:
        worker.close()
    print(f"ticks of a 2 ms Python loop during NPU inference: worker process {got} in "
          f"{spent * 1000:.0f} ms, in this process {got_inproc} in {spent_inproc * 1000:.0f} ms")
    assert gil_was_free(got, spent), (got, spent)


# ---- pipeline and offline command ------------------------------------------------------------
def pearson(a, b):
    return np.corrcoef(np.ravel(a), np.ravel(b))[0, 1]


@pytest.mark.npu
@pytest.mark.timeout(180)
def test_pipeline_on_openvino_matches_xnnpack(openvino, tmp_path):
    from dense_perception.core.pipeline import load_pipeline
    from dense_perception.core.frame_data import Request
    from dense_perception.core.settings.table import Settings
    from tools.common.scene import make_sample_scene

    frames = [make_sample_scene()]
    frames.append(np.ascontiguousarray(frames[0][::-1, ::-1]))
    request = Request(depth=True, normals=True, labels=True)

    def products(backend):
        settings = Settings(backend=backend, npu_vendor="intel_openvino", openvino_device="CPU",
                            npu_cache_dir=str(tmp_path))  # on_cpu_device's, as settings
        pipeline = load_pipeline(TIPS_TEST_MODEL, settings, log=quiet, warn=quiet)
        return [pipeline.process(f, "rgb8", request=request) for f in frames]

    npu, cpu = products("npu"), products("cpu")
    for key in ("depth", "normals"):
        got = np.stack([getattr(p, key) for p in npu])
        want = np.stack([getattr(p, key) for p in cpu])
        ok = np.isfinite(want)
        assert pearson(got[ok], want[ok]) >= MIN_CORR
        np.testing.assert_allclose(got[ok], want[ok], atol=ATOL)
    got, want = (np.stack([p.labels for p in r]).astype(int) for r in (npu, cpu))
    seen = want != 255
    assert (got[~seen] == 255).all()
    step = np.abs(got - want)[seen]  # see the runner test: bins 1/149 wide
    assert np.mean(step == 0) >= 0.9 and np.mean(step <= 1) >= 0.999


@pytest.mark.npu
@pytest.mark.timeout(180)
def test_offline_process_with_backend_npu(openvino, tmp_path, capsys):
    import cv2
    from tools.common.scene import make_sample_scene

    image = tmp_path / "scene.png"
    cv2.imwrite(str(image), make_sample_scene()[:, :, ::-1].copy())
    outputs = {}
    # the NPU's own flags with backend npu only: with cpu they would do nothing and be refused
    npu_flags = ["--openvino-device", "CPU", "--npu-cache-dir", tmp_path / "cache"]
    for backend in ("npu", "cpu"):
        code, _, err = run_cli(["process", image, "--model", TIPS_TEST_MODEL, "--backend",
                                backend, *(npu_flags if backend == "npu" else []),
                                "--outputs", "depth", "--out", tmp_path / backend], capsys)
        assert code == 0, err
        summary = (tmp_path / backend / "summary.json").read_text()
        assert ("Intel OpenVINO" in summary) == (backend == "npu")
        outputs[backend] = np.load(tmp_path / backend / "depth" / "scene.npy")
    ok = np.isfinite(outputs["cpu"])
    assert ok.mean() > 0.9
    np.testing.assert_allclose(outputs["npu"][ok], outputs["cpu"][ok], atol=ATOL)


# ---- node --------------------------------------------------------------------------------------
@pytest.mark.npu
@pytest.mark.ros
@pytest.mark.timeout(180)
def test_node_with_backend_npu_publishes_known_depth_and_names_openvino(openvino, tmp_path):
    pytest.importorskip("rclpy")
    from support.ros_harness import Harness, camera_info
    from support.model_truth import camera_colour_at_published, gradient_frame, tips_depth_of
    from dense_perception.core.conversions import image_msg_to_array
    from dense_perception.core.geometry.fit import make_fit_plan

    h = Harness({"model_path": TIPS_TEST_MODEL, "backend": "npu", "npu_vendor":
                 "intel_openvino", "openvino_device": "CPU", "npu_cache_dir": str(tmp_path),
                 "diagnostics_period": 0.2})
    try:
        h.wait_matched(("depth/image",))
        exact = gradient_frame(640, 480, blue=200)
        h.publish_frame(np.rint(exact).astype(np.uint8), h.header(), info=camera_info(640, 480))
        depth = image_msg_to_array(h.wait_for("depth/image", timeout=60)[0])
        colour = camera_colour_at_published(exact, make_fit_plan(640, 480, 448, 448, "crop"),
                                            "model")
        assert np.abs(depth - tips_depth_of(colour))[4:-4, 4:-4].max() < 0.02
        _, _, values = h.diagnostics(lambda d: d[2]["frames processed"] != "0", timeout=30)
        assert values["backend"].startswith("npu (Intel OpenVINO 2026.3.1")
        assert values["npu vendor"] == "intel_openvino" and values["npu device"] == "CPU"
        assert values["npu plugin"].startswith("Intel OpenVINO 2026.3.1 (LiteRT plugin")
        assert values["npu fully accelerated"] == "yes"
        assert "compiled in" in values["npu compile"] or "cache" in values["npu compile"]
    finally:
        h.close()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
