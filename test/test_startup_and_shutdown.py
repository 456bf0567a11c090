"""The installed entry point: startup errors fail fast with one line; signals stop it promptly."""

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

pytest.importorskip("rclpy")

from conftest import DA3_TEST_MODEL, REPO  # noqa: E402

pytestmark = pytest.mark.ros


def node_env():
    return {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}


def start_node(*ros_args, script=None):
    cmd = [sys.executable] + (script if script else ["-m", "dense_perception.ros.node"])
    return subprocess.Popen(cmd + ["--ros-args", *ros_args], env=node_env(), text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def our_lines(text):
    """Log lines our logger wrote (LiteRT prints its own INFO chatter to stderr too)."""
    return [line for line in text.splitlines() if "[dense_perception]" in line]


@pytest.mark.parametrize("args,expected", [
    (["-p", "model_path:=/nowhere/da3_small_gpu_fp16.tflite"],
     "model file '/nowhere/da3_small_gpu_fp16.tflite' does not exist. Put the model file there"),
    (["-p", f"model_path:={REPO / 'package.xml'}"], "is not a LiteRT/TFLite flatbuffer"),
    (["-p", f"model_path:={DA3_TEST_MODEL}", "-p", "num_threads:=0"],
     "num_threads must be >= 1, or -1 for all cores; got 0"),
    (["-p", f"model_path:={DA3_TEST_MODEL}", "-p", "num_threads:=1000"],
     "num_threads out of range. Min: -1, Max: 256"),
    (["-p", f"model_path:={DA3_TEST_MODEL}", "-p", "fit:=letterbox"],
     "fit 'letterbox' is not allowed; use one of: crop, stretch, rotate"),
    (["-p", f"model_path:={DA3_TEST_MODEL}", "-p", "depth_encoding:=16UC3"],
     "depth_encoding '16UC3' is not allowed; use one of: 32FC1, 16UC1"),
    (["-p", f"model_path:={DA3_TEST_MODEL}", "-p", "model_type:=tipsv2"],
     "matches no supported model (model_type is forced to 'tipsv2')"),
])
def test_startup_errors_fail_fast_with_one_line(args, expected):
    proc = start_node(*args)
    out, err = proc.communicate(timeout=60)
    lines = our_lines(out + err)
    assert proc.returncode == 1
    assert len(lines) == 1 and "[FATAL]" in lines[0], lines
    assert expected in lines[0]
    assert "Traceback" not in out + err


def test_unsupported_signature_error(tmp_path):
    from conftest import load_test_model_maker
    path = tmp_path / "mobilenet.tflite"
    load_test_model_maker().write_signature_model(str(path), [(1, 224, 224, 3)], [(1, 1000)])
    proc = start_node("-p", f"model_path:={path}")
    out, err = proc.communicate(timeout=60)
    (line,) = our_lines(out + err)
    assert proc.returncode == 1
    assert "input [1,224,224,3] -> outputs [1,1000], which matches no supported model" in line
    assert "da3 (Depth Anything 3 Small)" in line and "tipsv2 (TIPSv2-B14-DPT)" in line


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_stops_node_mid_inference(sig):
    import rclpy
    from rclpy.qos import qos_profile_sensor_data
    from sensor_msgs.msg import Image
    from dense_perception.ros.messages import array_to_image
    from std_msgs.msg import Header

    slow = [str(REPO / "tools" / "slow_node.py"), "60"]  # a 60 s inference
    # backend cpu: this test is not about backends (a GPU or lavapipe must not change it)
    proc = start_node("-p", f"model_path:={DA3_TEST_MODEL}", "-p", "backend:=cpu", script=slow)
    context = rclpy.Context()
    rclpy.init(context=context)
    client = rclpy.create_node("signal_client", context=context)
    try:
        client.create_subscription(Image, "depth/image", lambda m: None, 1)
        pub = client.create_publisher(Image, "image", qos_profile_sensor_data)
        deadline = time.monotonic() + 30
        while pub.get_subscription_count() == 0:
            assert time.monotonic() < deadline and proc.poll() is None, "node did not come up"
            time.sleep(0.05)
        time.sleep(0.5)  # let the node see our depth subscription too
        pub.publish(array_to_image(np.zeros((48, 64, 3), np.uint8), "rgb8", Header()))
        assert proc.stdout.readline().strip() == "INFERENCE_STARTED"
        start = time.monotonic()
        proc.send_signal(sig)
        proc.wait(timeout=10)
        elapsed = time.monotonic() - start
        err = proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
        client.destroy_node()
        rclpy.shutdown(context=context)
    assert elapsed < 2.0
    assert proc.returncode == 0
    assert "Traceback" not in err
