# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The GPU backend for real in the node (in-process, over real DDS): it publishes the closed-form
outputs, names the adapter in its diagnostics and stays responsive while the GPU works.

Runs wherever Vulkan has an adapter; in CI that is Mesa's lavapipe, set up by ``make test-gpu``.
Without one every test here skips and says why.
"""

import os
import threading
import time

import numpy as np
import pytest

from support.common import TIPS_TEST_MODEL
from support.gpu_adapter import gpu_adapter  # noqa: F401 (fixture adapter)

pytestmark = pytest.mark.gpu


class TimedRunner:
    """Wraps the node's runner; records when each inference ran."""

    def __init__(self, inner):
        self.inner, self.runs, self.running = inner, [], threading.Event()

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def run(self):
        start = time.monotonic()
        self.running.set()
        try:
            return self.inner.run()
        finally:
            self.running.clear()
            self.runs.append((start, time.monotonic()))


def _parameter_get_ms(harness, service):
    """One get_parameters round trip to the node from the harness's client, in ms."""
    from rcl_interfaces.srv import GetParameters
    done = threading.Event()
    start = time.monotonic()
    future = service.call_async(GetParameters.Request(names=["fit"]))
    future.add_done_callback(lambda _: done.set())
    assert done.wait(10.0), "get_parameters did not answer"
    assert future.result().values[0].string_value == "crop"
    return (time.monotonic() - start) * 1000.0


@pytest.mark.ros
def test_node_on_gpu_publishes_names_the_adapter_and_stays_responsive(adapter, monkeypatch):
    # A software adapter (lavapipe) computes on this machine's cores, by default on all of them;
    # with one left free, what is measured is the node (GIL, threads), not a CPU taken by the
    # "GPU". A real GPU takes no host core. (Read by llvmpipe when the GPU worker starts.)
    if adapter.is_software:
        monkeypatch.setenv("LP_NUM_THREADS", str(max(1, (os.cpu_count() or 2) - 1)))
    pytest.importorskip("rclpy")
    from rcl_interfaces.srv import GetParameters
    from support.ros_harness import Harness, camera_info
    from support.model_truth import camera_colour_at_published, gradient_frame, tips_depth_of
    from dense_perception.core.geometry.fit import make_fit_plan
    from dense_perception.core.pipeline import DensePipeline
    from dense_perception.core.conversions import image_msg_to_array

    finishes = []
    original_finish = DensePipeline.finish

    def timed_finish(self, *args, **kwargs):
        start = time.monotonic()
        try:
            return original_finish(self, *args, **kwargs)
        finally:
            finishes.append((start, time.monotonic()))
    monkeypatch.setattr(DensePipeline, "finish", timed_finish)

    timed = []
    h = Harness({"model_path": TIPS_TEST_MODEL, "backend": "gpu", "diagnostics_period": 0.2},
                runner_hook=lambda r: timed.append(TimedRunner(r)) or timed[0])
    try:
        runner = timed[0]
        h.wait_matched(("depth/image", "normals/image", "segmentation/labels", "points"))
        exact = gradient_frame(640, 480, blue=200)
        frame = np.rint(exact).astype(np.uint8)
        h.publish_frame(frame, h.header(), info=camera_info(640, 480))
        depth = image_msg_to_array(h.wait_for("depth/image", timeout=60)[0])
        colour = camera_colour_at_published(exact, make_fit_plan(640, 480, 448, 448, "crop"),
                                            "model")
        assert np.abs(depth - tips_depth_of(colour))[4:-4, 4:-4].max() < 0.02

        level, message, values = h.diagnostics(lambda d: d[2]["frames processed"] != "0",
                                               timeout=30)
        assert values["gpu adapter"] == adapter.name
        assert values["gpu adapter backend"] == adapter.backend
        assert values["gpu adapter type"].startswith(adapter.type)
        assert values["gpu fully accelerated"] == "yes"
        assert values["gpu precision"] == "fp16"
        assert values["backend"].startswith("gpu")

        # Keep the node busy, and ask for a parameter while an inference is in progress.
        service = h.client.create_client(GetParameters, "/dense_perception/get_parameters")
        assert service.wait_for_service(timeout_sec=10)
        stop = threading.Event()

        def feed():
            while not stop.is_set():
                h.publish_frame(frame, h.header(), info=camera_info(640, 480))
                time.sleep(0.05)
        feeder = threading.Thread(target=feed, daemon=True)
        feeder.start()
        latencies = []

        def finishes_inside_a_run():
            # Ended while an inference ran: it made progress during inference (with the GIL
            # held by the inference it could not have ended before the inference did). A short
            # post-processing (labels computed in the graph) often starts just before it.
            runs = list(runner.runs)
            return [f for f in list(finishes) if any(r0 < f[1] < r1 for r0, r1 in runs)]
        try:
            deadline = time.monotonic() + 120
            while (len(latencies) < 10 or not finishes_inside_a_run()) \
                    and time.monotonic() < deadline:
                assert runner.running.wait(30), "no inference started"
                if len(latencies) < 10:
                    latencies.append(_parameter_get_ms(h, service))
                time.sleep(0.1)
        finally:
            stop.set()
            feeder.join()
    finally:
        h.close()
    runs, ends, inside = list(runner.runs), list(finishes), finishes_inside_a_run()
    print(f"parameter get during GPU inference: {', '.join(f'{x:.0f}' for x in latencies)} ms; "
          f"{len(inside)} of {len(ends)} post-processings ended inside an inference "
          f"(inference median {np.median([b - a for a, b in runs]) * 1000:.0f} ms)")
    assert len(latencies) == 10
    # Within 100 ms: 9 of 10 (one may meet a scheduling hiccup on a shared CI machine).
    assert sorted(latencies)[8] < 100.0, latencies
    assert inside, "post-processing never made progress while an inference ran"

