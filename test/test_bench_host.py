# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""make bench-host's measurement (tools/bench/host.py) runs end to end: the node over DDS,
started from a checkout the way ``--before`` starts older code, and its host figures are the
sum of the node's own host stage means from /diagnostics."""

import pytest

pytest.importorskip("rclpy")

from support.common import REPO  # noqa: E402

from tools.bench.host import HOST_STAGES, measure  # noqa: E402

pytestmark = [pytest.mark.serial, pytest.mark.ros, pytest.mark.slow, pytest.mark.timeout(180)]


def test_bench_host_row_from_a_checkout_through_the_node():
    # Reliable frames: best effort drops about two in three 2.7 MB frames on loopback, so a
    # short window could hold only a frame or two on a loaded CI machine.
    row = measure("da3", 2, False, 3.0, [], checkout=REPO, reliable=True)
    assert row["frames"] >= 3  # 5 Hz for 3 s after the first output (diagnostics lag 1 s)
    stages = row["stages_ms"]
    assert {"preprocess", "extract", "postprocess", "publish", "inference"} <= set(stages)
    host = sum(stages[s] for s in HOST_STAGES)  # inference is not host work
    assert row["host_ms"] == pytest.approx(host, abs=0.02)
    assert 0 < row["host_ms"] < 1000
    assert row["host_ceiling_hz"] == pytest.approx(1000 / row["host_ms"], rel=0.01)
    assert row["outputs"] == "depth only" and row["goal_ms"] is None
