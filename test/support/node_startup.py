# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The node started as its own process on settings it must refuse: its exit code and log lines."""

from __future__ import annotations


def startup_refusal(args: list[str], timeout: float = 60) -> tuple[int | None, list[str]]:
    """Run ``dense_perception_node --ros-args <args>`` until it exits (or ``timeout`` s); return
    its exit code and the node's own log lines (those tagged ``[dense_perception]``)."""
    from tools.common.node_process import NodeProcess
    node = NodeProcess(args).start()
    try:
        code = node.wait(timeout=timeout)
    finally:
        node.stop()
    return code, [line for line in node.output().splitlines() if "[dense_perception]" in line]
