# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The installed entry point: startup errors fail fast with one line; signals stop it promptly."""

import signal
import time

import numpy as np
import pytest

pytest.importorskip("rclpy")

from support.common import DA3_TEST_MODEL, REPO  # noqa: E402
from tools.common.node_process import NodeProcess  # noqa: E402

pytestmark = [pytest.mark.serial, pytest.mark.ros, pytest.mark.timeout(120)]


def start_node(*ros_args, script=None):
    """The node as its own process; backend cpu unless a test says otherwise, so nothing
    depends on whether this machine has a (software) GPU."""
    return NodeProcess(["-p", "backend:=cpu", *ros_args], script=script).start()


def exit_output(node, timeout=60):
    """(exit code, everything the node wrote) once it exits by itself."""
    try:
        code = node.wait(timeout=timeout)
    finally:
        node.stop()  # no-op once it exited; kills it if it hung
    return code, node.output()


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
    code, out = exit_output(start_node(*args))
    lines = our_lines(out)
    assert code == 1
    assert len(lines) == 1 and "[FATAL]" in lines[0], lines
    assert expected in lines[0]
    assert "Traceback" not in out


def test_unsupported_signature_error(tmp_path):
    from support.common import load_test_model_maker
    path = tmp_path / "mobilenet.tflite"
    load_test_model_maker().write_signature_model(str(path), [(1, 224, 224, 3)], [(1, 1000)])
    code, out = exit_output(start_node("-p", f"model_path:={path}"))
    (line,) = our_lines(out)
    assert code == 1
    assert "input [1,224,224,3] -> outputs [1,1000], which matches no supported model" in line
    assert "da3 (Depth Anything 3 Small)" in line and "tipsv2 (TIPSv2-B14-DPT)" in line


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_stops_node_mid_inference(sig):
    import rclpy
    from rclpy.qos import qos_profile_sensor_data
    from sensor_msgs.msg import Image
    from dense_perception.ros.messages import array_to_image
    from std_msgs.msg import Header

    slow = [str(REPO / "tools" / "common" / "slow_node.py"), "60"]  # a 60 s inference
    node = start_node("-p", f"model_path:={DA3_TEST_MODEL}", script=slow)
    context = rclpy.Context()
    rclpy.init(context=context)
    client = rclpy.create_node("signal_client", context=context)
    try:
        # The node subscribes to the camera once our depth subscription matches its output.
        client.create_subscription(Image, "depth/image", lambda m: None, 1)
        pub = client.create_publisher(Image, "image", qos_profile_sensor_data)
        deadline = time.monotonic() + 30
        while pub.get_subscription_count() == 0:
            assert time.monotonic() < deadline and node.alive(), "node did not come up"
            time.sleep(0.05)
        pub.publish(array_to_image(np.zeros((48, 64, 3), np.uint8), "rgb8", Header()))
        node.wait_for_line("INFERENCE_STARTED", timeout=30)
        start = time.monotonic()
        node.proc.send_signal(sig)
        code = node.wait(timeout=10)
        elapsed = time.monotonic() - start
    finally:
        node.stop()
        client.destroy_node()
        rclpy.shutdown(context=context)
    assert elapsed < 2.0
    assert code == 0
    assert "Traceback" not in node.output()


def test_use_lifecycle_starts_a_managed_node():
    """use_lifecycle:=true: the entry point starts an unconfigured lifecycle node that
    configures and activates over DDS, and SIGINT still stops it cleanly."""
    import threading

    import rclpy
    from lifecycle_msgs.msg import State, Transition
    from support.ros_harness import LifecycleClient

    node = start_node("-p", f"model_path:={DA3_TEST_MODEL}", "-p", "use_lifecycle:=true")
    context = rclpy.Context()
    rclpy.init(context=context)
    client = rclpy.create_node("lifecycle_client", context=context)
    executor = rclpy.executors.SingleThreadedExecutor(context=context)
    executor.add_node(client)
    spin = threading.Thread(target=executor.spin, daemon=True)
    spin.start()
    try:
        lifecycle = LifecycleClient(client)
        assert lifecycle.state() == State.PRIMARY_STATE_UNCONFIGURED, node.output_tail()
        assert lifecycle.change(Transition.TRANSITION_CONFIGURE, State.PRIMARY_STATE_INACTIVE)
        assert lifecycle.change(Transition.TRANSITION_ACTIVATE, State.PRIMARY_STATE_ACTIVE)
    finally:
        code, stopped = node.stop(timeout=10)
        executor.shutdown(timeout_sec=1)
        spin.join(timeout=2)
        client.destroy_node()
        rclpy.shutdown(context=context)
    assert stopped and code == 0
    assert "Traceback" not in node.output()


def test_litert_start_up_lines_go_to_the_debug_log():
    """``backend: auto`` on this machine (no GPU, or only Mesa's CPU emulation, which auto
    refuses): the node's log is its own lines, LiteRT's native start-up chatter (the XNNPACK
    delegate line, the GPU probe's log) is held for the DEBUG log, shown at that level."""
    lines = {}
    for level in ("info", "debug"):
        node = NodeProcess(["-p", f"model_path:={DA3_TEST_MODEL}", "-p", "backend:=auto",
                            "--log-level", level]).start()
        try:
            node.wait_for_line("running on cpu", timeout=60)
        finally:
            node.stop()
        lines[level] = node.output().splitlines()
    native = [line for line in lines["info"] if line.startswith(("INFO:", "ERROR:", "WARNING:"))]
    assert native == [], native
    assert any("[dense_perception]" in line and "running on cpu" in line
               for line in lines["info"])
    assert any("LiteRT's own start-up log" in line for line in lines["debug"])
    assert any("XNNPACK delegate" in line for line in lines["debug"])
