# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""CONTRIBUTING.md's "Add a model kind", followed step by step in a temporary copy.

The kind is a MiDaS-like network: an NHWC input, normalised with mean 0.5 and std 0.5, and one
output that is inverse depth. Its stand-in (models/make_test_models.py's depth stand-in, its
output named ``inverse_depth``) computes out = 2 + 0.5 x_r + 0.25 x_g + 0.125 x_b of its
normalised input x, so the published depth is 1 / out, written out here. The entry goes into
a copy of the package's ``models.json`` (a kind shipped with the package) or into a file of its
own named by ``DENSE_PERCEPTION_MODELS`` (a kind kept outside it); each run is a fresh
interpreter, as the kinds are read when the package is imported: the pipeline, the offline
command and the node over DDS.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import cv2
import numpy as np
import pytest

from dense_perception.core.model.specs import ModelSignatureError, parse_kinds
from support.common import REPO

KIND = "midas_like"
H, W = 48, 64
MEAN, STD = (0.5, 0.5, 0.5), (0.5, 0.5, 0.5)
WEIGHTS, BIAS = (0.5, 0.25, 0.125), 2.0  # the stand-in's law (make_test_models' depth stand-in)

# Step 1 of the recipe: the kind's entry, as it goes into models.json.
ENTRY = {
    "display_name": "MiDaS-like test network",
    "file_name": "midas_like.tflite",
    "input": {"shape": [1, H, W, 3], "layout": "NHWC", "dtype": "float32", "colour": "RGB",
              "scale": 255.0, "mean": list(MEAN), "std": list(STD)},
    "outputs": [{"name": "inverse_depth", "kind": "inverse_depth", "shape": [1, H, W, 1],
                 "description": "inverse relative depth (1/x is depth)"}],
    "metric_depth": False,
    "source": "a test stand-in",
    "evidence": {"output_names": ["inverse_depth"]},
}

# The pipeline through load_pipeline, in a fresh interpreter: argv = model, frame .npy, out dir.
PIPELINE_SCRIPT = """
import json, sys
import numpy as np
from dense_perception.core.pipeline import load_pipeline
from dense_perception.core.settings.table import Settings
pipe = load_pipeline(sys.argv[1], Settings(model_type="auto", backend="cpu", num_threads=1),
                     log=lambda _: None)
products = pipe.process(np.load(sys.argv[2]), "bgr8")
np.save(sys.argv[3] + "/depth.npy", products.depth)
spec = pipe.spec
with open(sys.argv[3] + "/spec.json", "w") as f:
    json.dump({"kind": spec.kind, "layout": spec.layout, "inverse": spec.inverse_depth,
               "size": [spec.input_width, spec.input_height], "evidence": spec.evidence}, f)
"""


def truth(rgb: np.ndarray) -> np.ndarray:
    """The depth of an H x W x 3 RGB frame: 1 / (the stand-in's output on the normalised x)."""
    x = (rgb.astype(np.float64) / 255.0 - np.asarray(MEAN)) / np.asarray(STD)
    return 1.0 / (BIAS + x @ np.asarray(WEIGHTS))


def write_stand_in(maker, path: Path) -> Path:
    """Step 4: the stand-in with the kind's exact signature, its output named as declared."""
    return maker.write_depth_model(path, H, W, "NHWC", output_name="inverse_depth")


def add_kind(where: str, tmp_path: Path, entry: dict) -> dict[str, str]:
    """Step 1, one of its two ways; the environment a fresh interpreter then needs."""
    env = {k: v for k, v in os.environ.items() if k != "DENSE_PERCEPTION_MODELS"}
    if where == "package":  # the package's own models.json, in a copy of the package
        copy = tmp_path / "copy"
        shutil.copytree(REPO / "dense_perception", copy / "dense_perception",
                        ignore=shutil.ignore_patterns("__pycache__"))
        models = copy / "dense_perception" / "core" / "model" / "data" / "models.json"
        models.write_text(json.dumps({**json.loads(models.read_text()), KIND: entry}, indent=2))
        env["PYTHONPATH"] = str(copy)
    else:  # a file of its own, named by DENSE_PERCEPTION_MODELS
        own = tmp_path / "my_models.json"
        own.write_text(json.dumps({KIND: entry}, indent=2))
        env["DENSE_PERCEPTION_MODELS"] = str(own)
        env["PYTHONPATH"] = str(REPO)
    return env


def frame() -> np.ndarray:
    """A random RGB frame at the model's size (the fit is then the identity)."""
    return np.random.default_rng(7).integers(0, 256, (H, W, 3), dtype=np.uint8)


def run(argv: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable] + argv, env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=120)


@pytest.mark.timeout(200)
@pytest.mark.parametrize("where", ["package", "own_file"])
def test_auto_detects_the_new_kind_and_publishes_its_depth(maker, tmp_path, where):
    model = write_stand_in(maker, tmp_path / "midas_like.tflite")
    env = add_kind(where, tmp_path, ENTRY)
    rgb = frame()
    np.save(tmp_path / "frame.npy", cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR))
    out = tmp_path / "pipeline"
    out.mkdir()
    done = run(["-c", PIPELINE_SCRIPT, str(model), str(tmp_path / "frame.npy"), str(out)], env,
               tmp_path)
    assert done.returncode == 0, done.stderr
    spec = json.loads((out / "spec.json").read_text())
    assert spec["kind"] == KIND and spec["layout"] == "NHWC" and spec["inverse"]
    assert spec["size"] == [W, H] and "'inverse_depth'" in spec["evidence"]
    np.testing.assert_allclose(np.load(out / "depth.npy"), truth(rgb), rtol=2e-5)

    # The offline command: model_type auto (its default), a depth file per frame.
    image = tmp_path / "frame.png"
    cv2.imwrite(str(image), cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR))
    done = run(["-m", "dense_perception", "process", str(image), "--model", str(model),
                "--backend", "cpu", "--cpu-precision", "fp32", "--outputs", "depth",
                "--depth-format", "npy", "--out", str(tmp_path / "out")], env, tmp_path)
    assert done.returncode == 0, done.stderr
    depth = np.load(tmp_path / "out" / "depth" / "frame.npy")
    np.testing.assert_allclose(depth, truth(rgb), rtol=2e-5)
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["model"]["kind"] == KIND

    # What ``info`` tells of the file: the kind, its layout and its output as declared.
    done = run(["-m", "dense_perception", "info", str(model), "--json", "--runs", "1",
                "--backends", "cpu"], env, tmp_path)
    assert done.returncode == 0, done.stderr
    info = json.loads(done.stdout)
    assert info["kind"] == KIND and info["input"]["layout"] == "NHWC"
    assert [o["kind"] for o in info["outputs"]] == ["inverse_depth"]


def test_a_layout_that_does_not_fit_its_shape_is_refused_in_one_line():
    entry = {**ENTRY, "input": {**ENTRY["input"], "shape": [1, H, W, 4]}}
    with pytest.raises(ModelSignatureError) as caught:
        parse_kinds(json.dumps({KIND: entry}), "my_models.json")
    assert str(caught.value) == (
        f"my_models.json: entry '{KIND}' declares input layout NHWC, which needs shape "
        f"[1,H,W,3] (3 colour channels); its shape is [1,{H},{W},4]")
    entry = {**ENTRY, "input": {**ENTRY["input"], "layout": "NCHW"}}  # [1,H,W,3] read as NCHW
    with pytest.raises(ModelSignatureError, match=r"needs shape \[1,3,H,W\]"):
        parse_kinds(json.dumps({KIND: entry}), "my_models.json")


@pytest.mark.timeout(200)
def test_process_refuses_a_bad_entry_and_a_kind_without_evidence(maker, tmp_path):
    model = write_stand_in(maker, tmp_path / "midas_like.tflite")
    image = tmp_path / "frame.png"
    cv2.imwrite(str(image), frame())
    argv = ["-m", "dense_perception", "process", str(image), "--model", str(model),
            "--backend", "cpu", "--out", str(tmp_path / "out")]
    bad = {**ENTRY, "input": {**ENTRY["input"], "shape": [1, H, W, 4]}}
    done = run(argv, add_kind("own_file", tmp_path, bad), tmp_path)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert "declares input layout NHWC, which needs shape [1,H,W,3]" in lines[0]
    assert not (tmp_path / "out").exists()

    # Shapes alone do not claim a file for a kind: without its evidence, auto refuses.
    plain = {k: v for k, v in ENTRY.items() if k != "evidence"}
    done = run(argv, add_kind("own_file", tmp_path, plain), tmp_path)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert f"its shapes fit {KIND} but nothing else in the file says it is" in lines[0]


@pytest.mark.ros
@pytest.mark.timeout(150)
def test_the_node_publishes_the_new_kinds_depth(maker, tmp_path):
    """The node as its own process, the kind in a file named by DENSE_PERCEPTION_MODELS:
    depth/image over DDS is the formula's."""
    pytest.importorskip("rclpy")
    import threading
    import time

    import rclpy
    from sensor_msgs.msg import Image

    from dense_perception.core.conversions import image_msg_to_array
    from tools.common.node_process import NodeProcess
    from tools.common.ros_client import ScenePlayer
    model = write_stand_in(maker, tmp_path / "midas_like.tflite")
    env = add_kind("own_file", tmp_path, ENTRY)
    node = NodeProcess(["-p", f"model_path:={model}", "-p", "backend:=cpu"], env=env).start()
    context = rclpy.Context()
    rclpy.init(context=context)
    client = rclpy.create_node("model_kind_client", context=context)
    got, cond = [], threading.Condition()

    def on_depth(msg: Image) -> None:
        with cond:
            got.append(msg)
            cond.notify_all()
    client.create_subscription(Image, "depth/image", on_depth, 10)
    executor = rclpy.executors.SingleThreadedExecutor(context=context)
    executor.add_node(client)
    spinner = threading.Thread(target=executor.spin, daemon=True)
    spinner.start()
    rgb = frame()
    player = ScenePlayer(client, fps=5.0)
    try:
        deadline = time.monotonic() + 90
        while player.image_pub.get_subscription_count() == 0:  # the node is up and listening
            assert node.alive(), node.output_tail()
            assert time.monotonic() < deadline, "the node did not subscribe to the camera"
            time.sleep(0.05)
        assert f"model: {ENTRY['display_name']}" in node.output(), node.output_tail()
        player.start(rgb)
        with cond:
            assert cond.wait_for(lambda: got, 60), node.output_tail()
            msg = got[0]
    finally:
        player.stop()
        node.stop()
        executor.shutdown(timeout_sec=1)
        spinner.join(timeout=2)
        client.destroy_node()
        rclpy.shutdown(context=context)
    assert msg.encoding == "32FC1"
    np.testing.assert_allclose(image_msg_to_array(msg), truth(rgb), rtol=2e-5)
