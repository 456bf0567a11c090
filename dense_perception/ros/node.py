# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The ROS 2 node: camera topics in; depth, normals, segmentation, points and diagnostics out.

``dense_perception_node`` starts :class:`DensePerceptionNode` (configured and active at once),
or, with ``use_lifecycle:=true``, the managed :class:`~.lifecycle.LifecycleDensePerceptionNode`.
Both hold a :class:`~.perception.Perception` (model, worker stages, camera input, outputs,
diagnostics) and share the parameter handling.
"""

from __future__ import annotations

import signal
import sys
import threading
from typing import Any, Callable

import rclpy
from rclpy.node import Node

from ..core.allocator import keep_freed_memory
from .parameters import StartupError
from .parameter_handling import ParameterHandling
from .perception import NODE_NAME, Perception

__all__ = ["DensePerceptionNode", "StartupError", "NODE_NAME", "main"]


class DensePerceptionNode(ParameterHandling, Node):
    """Subscribes to ``image`` (+ ``camera_info``) while an output has a subscriber and
    publishes dense perception products. StartupError when it cannot start.

    ``runner_hook`` (tests only) wraps the loaded runner, e.g. to inject faults or delays.
    """

    def __init__(self, *, runner_hook: Callable[[Any], Any] | None = None, **kwargs: Any) -> None:
        super().__init__(NODE_NAME, **kwargs)
        self.perception: Perception | None = None
        try:
            settings = self.setup_parameters()
            self.perception = Perception(self, settings, runner_hook)
            self.perception.activate()
        except BaseException:
            # A node that cannot start gives its handles back at once: left to the garbage
            # collector, its /rosout registration would outlive it and (rcl before Kilted)
            # silence the logs of the next node of this name in the process.
            self.stop()
            self.destroy_node()
            raise

    def stop(self) -> None:
        """Stop the workers (does not wait for an inference in progress to end)."""
        if self.perception is not None:
            self.perception.stop()


def wants_lifecycle(context: rclpy.Context) -> bool:
    """The ``use_lifecycle`` parameter as the node will see it (command line or params file):
    read through a short-lived node of the same name, before choosing the node's class."""
    probe = rclpy.create_node(NODE_NAME, context=context, start_parameter_services=False,
                              automatically_declare_parameters_from_overrides=True)
    try:
        param = probe.get_parameter_or("use_lifecycle", None)
        return bool(param is not None and param.value is True)
    finally:
        probe.destroy_node()


def main(args: list[str] | None = None, runner_hook: Callable[[Any], Any] | None = None) -> int:
    """Console entry point (``dense_perception_node``): spin until SIGINT/SIGTERM.

    Returns 0 after a clean stop and 1 when the node could not start or must stop (one FATAL
    line says why): its GPU worker hung or died more than ``gpu_max_restarts`` times in a row,
    and a launch file's ``respawn`` can start it afresh.
    ``runner_hook`` is for tests (e.g. a slow runner to check shutdown mid-inference).
    """
    memory = keep_freed_memory()  # before the first frame: its arrays then reuse freed blocks
    rclpy.init(args=args, signal_handler_options=rclpy.signals.SignalHandlerOptions.NO)
    if memory:
        rclpy.logging.get_logger(NODE_NAME).debug(f"allocator: {memory}")
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    try:
        if wants_lifecycle(rclpy.get_default_context()):
            from .lifecycle import LifecycleDensePerceptionNode
            node = LifecycleDensePerceptionNode(runner_hook=runner_hook)
        else:
            node = DensePerceptionNode(runner_hook=runner_hook)
    except StartupError as exc:
        rclpy.logging.get_logger(NODE_NAME).fatal(str(exc))
        rclpy.try_shutdown()
        return 1
    executor = rclpy.executors.SingleThreadedExecutor()
    executor.add_node(node)
    code = 0
    try:
        while not stop.is_set() and rclpy.ok():
            executor.spin_once(timeout_sec=0.1)
            fatal = fatal_reason(node)
            if fatal:
                rclpy.logging.get_logger(NODE_NAME).fatal(
                    f"{fatal}; exiting with status 1 (respawn restarts the node)")
                code = 1
                break
    finally:
        # The worker may be inside a long inference: it is a daemon thread, so the process
        # does not wait for it.
        node.stop()
        executor.shutdown(timeout_sec=0.5)
        node.destroy_node()
        rclpy.try_shutdown()
    return code


def fatal_reason(node: Node) -> str:
    """Why the node can no longer work and must exit ("" while it can)."""
    perception = getattr(node, "perception", None)
    return perception.fatal if perception is not None else ""


if __name__ == "__main__":
    sys.exit(main())
