# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The GPU backend for real in the node as its own process: a killed node leaves no shared
memory and no worker; a hung worker is restarted, and hung again the node exits 1 with one
fatal line.

Runs wherever Vulkan has an adapter; in CI that is Mesa's lavapipe, set up by ``make test-gpu``.
Without one every test here skips and says why.
"""

import os
import threading
import time

import numpy as np
import pytest

from support.common import DA3_TEST_MODEL
from support.gpu_adapter import gpu_adapter  # noqa: F401 (fixture adapter)

pytestmark = pytest.mark.gpu


class NodeClient:
    """A camera stand-in for a node process: publishes frames, records depth/image and the
    node's /diagnostics statuses (decoded), on an executor thread of its own."""

    def __init__(self):
        import rclpy
        from diagnostic_msgs.msg import DiagnosticArray
        from sensor_msgs.msg import Image
        from tools.common.ros_client import ScenePlayer, decode_status, node_status
        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node("gpu_worker_client", context=self.context)
        self.cond = threading.Condition()
        self.depth, self.statuses = [], []

        def on_depth(msg):
            with self.cond:
                self.depth.append(msg)
                self.cond.notify_all()

        def on_diagnostics(msg):
            status = node_status(msg, "/dense_perception")
            if status is not None:
                with self.cond:
                    self.statuses.append(decode_status(status))
                    self.cond.notify_all()
        self.node.create_subscription(Image, "depth/image", on_depth, 10)
        self.node.create_subscription(DiagnosticArray, "/diagnostics", on_diagnostics, 50)
        self.player = ScenePlayer(self.node)
        self.executor = rclpy.executors.SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.thread = threading.Thread(target=self.executor.spin, daemon=True)
        self.thread.start()

    def wait(self, what, predicate, timeout):
        """Wait until ``predicate()`` (called under the lock) is true."""
        with self.cond:
            if not self.cond.wait_for(predicate, timeout):
                last = self.statuses[-1] if self.statuses else "none"
                raise TimeoutError(f"timed out waiting for {what} (last status: {last})")

    def send(self, node, frame):
        """Publish ``frame`` once the node subscribes to the camera; its header."""
        deadline = time.monotonic() + 60
        while self.player.image_pub.get_subscription_count() == 0:
            assert node.alive(), node.output_tail()
            assert time.monotonic() < deadline, "the node did not subscribe to the camera"
            time.sleep(0.05)
        header = self.player.header()
        self.player.publish_frame(frame, header)
        return header

    def output_for(self, header, timeout):
        self.wait("depth/image", lambda: any(m.header.stamp == header.stamp for m in self.depth),
                  timeout)

    def close(self):
        import rclpy
        self.executor.shutdown(timeout_sec=1)
        self.thread.join(timeout=2)
        self.node.destroy_node()
        rclpy.shutdown(context=self.context)


@pytest.fixture
def node_client():
    pytest.importorskip("rclpy")
    client = NodeClient()
    yield client
    client.close()


def gpu_node(*ros_args, script=None):
    from tools.common.node_process import NodeProcess
    return NodeProcess(["-p", f"model_path:={DA3_TEST_MODEL}", "-p", "backend:=gpu",
                        *ros_args], script=script).start()


FRAME = np.zeros((48, 64, 3), np.uint8)


@pytest.mark.ros
@pytest.mark.timeout(150)
def test_a_killed_node_leaves_no_shared_memory_and_no_worker(adapter, node_client):
    """SIGKILL the node while its inference waits on the worker: /dev/shm holds nothing of
    ours (DDS keeps its own fastdds_* segments there), and the worker (hung too, by SIGSTOP)
    does not outlive the node."""
    from signal import SIGSTOP
    from support.common import REPO
    from support.worker_procs import shm_entries, wait_for_worker, wait_gone

    before = shm_entries()
    # The real node; slow_node.py with 0 s of padding prints INFERENCE_STARTED at each run.
    node = gpu_node(script=[str(REPO / "tools" / "common" / "slow_node.py"), "0"])
    try:
        node_client.output_for(node_client.send(node, FRAME), timeout=90)
        worker = wait_for_worker(node.pid, 10)
        maps = open(f"/proc/{node.pid}/maps").read()
        os.kill(worker, SIGSTOP)  # the next inference hangs in the worker
        node_client.send(node, FRAME)
        node.wait_for_line("INFERENCE_STARTED", timeout=30, count=2)
        node.proc.kill()
        node.proc.wait(timeout=10)
        assert shm_entries() - before == set(), "the killed node left files in /dev/shm"
        assert wait_gone(worker, 10), "the GPU worker outlived the killed node"
    finally:
        node.stop()
    assert "/memfd:dense_perception_gpu" in maps  # the shared memory: anonymous, in no folder
    assert "/dense_perception" not in maps.replace("/memfd:dense_perception", "")


@pytest.mark.ros
@pytest.mark.timeout(200)
def test_node_restarts_a_hung_worker_then_exits_1_with_one_fatal_line(adapter, node_client):
    """A hung worker (SIGSTOP): diagnostics say stalled, the worker is replaced at gpu_timeout
    and the node publishes again; hung again twice in a row (gpu_max_restarts 1): the node
    exits with status 1 and one FATAL line, leaving no worker behind."""
    from signal import SIGSTOP
    from support.worker_procs import alive, wait_for_worker, wait_gone

    node = gpu_node("-p", "gpu_timeout:=4.0", "-p", "gpu_max_restarts:=1",
                    "-p", "diagnostics_period:=0.2")
    client = node_client
    try:
        client.output_for(client.send(node, FRAME), timeout=90)
        first = wait_for_worker(node.pid, 10)
        os.kill(first, SIGSTOP)
        client.send(node, FRAME)  # hangs in the worker
        client.wait("the frame taken", lambda: any(
            v["frames received"] == "2" for _, _, v in client.statuses), timeout=10)
        pending = client.send(node, FRAME)  # waits: frames keep arriving, no output
        client.wait("a stalled status", lambda: any(
            level == 1 and message.startswith("stalled: no output for")
            for level, message, _ in client.statuses), timeout=4.0 + 2)
        # Replaced at the timeout; the frame that waited is published by the new worker.
        client.output_for(pending, timeout=60)
        second = wait_for_worker(node.pid, 10, other_than=(first,))
        assert not alive(first)
        client.wait("the failure in diagnostics", lambda: any(
            v["frames failed"] == "1" and v["gpu worker restarts"] == "1"
            for _, _, v in client.statuses), timeout=10)

        # Hung again: restarted (1 of 1 in a row) ...
        os.kill(second, SIGSTOP)
        client.send(node, FRAME)
        client.wait("the second restart", lambda: any(
            v["gpu worker restarts"] == "2" for _, _, v in client.statuses), timeout=60)
        third = wait_for_worker(node.pid, 10, other_than=(first, second))
        # ... and once more with no good inference between: one more than allowed.
        os.kill(third, SIGSTOP)
        client.send(node, FRAME)
        code = node.wait(timeout=60)
    finally:
        node.stop()
    out = node.output()
    fatal = [line for line in out.splitlines() if "[FATAL]" in line]
    assert code == 1
    assert len(fatal) == 1 and "[dense_perception]" in fatal[0], fatal
    assert ("GPU inference did not finish within 4 s (gpu_timeout), 2 times in a row "
            "(gpu_max_restarts 1)") in fatal[0]
    assert "Traceback" not in out
    assert all(wait_gone(pid, 10) for pid in (first, second, third))

