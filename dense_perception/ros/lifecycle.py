# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The managed (lifecycle) node, for ``use_lifecycle:=true`` and Navigation2-style bringup.

unconfigured --configure--> inactive: the model is loaded, publishers and diagnostics exist,
no camera subscription; --activate--> active: as the plain node (subscribes to the camera
while an output has a subscriber, infers and publishes); --deactivate--> inactive: camera
unsubscribed, inference stops, the model stays loaded; --cleanup--> unconfigured: the model
and publishers are freed. Parameters are declared at construction, so they can be set before
configure; the restart-only ones (``model_path``, ``backend``, ...) are read by configure, so
they can be set while unconfigured (cleanup -> set -> configure, as Navigation2 does) and are
refused, with the way out, while configured.
"""

from __future__ import annotations

from typing import Any, Callable

from rclpy.lifecycle import LifecycleNode, LifecycleState, TransitionCallbackReturn

from .parameters import StartupError
from .parameter_handling import ParameterHandling
from .perception import NODE_NAME, Perception


class LifecycleDensePerceptionNode(ParameterHandling, LifecycleNode):
    """:class:`~.node.DensePerceptionNode` as an rclpy LifecycleNode (same Perception)."""

    managed = True  # restart-only parameters: settable while unconfigured

    def __init__(self, *, runner_hook: Callable[[Any], Any] | None = None, **kwargs: Any) -> None:
        super().__init__(NODE_NAME, **kwargs)
        self.perception: Perception | None = None
        self._runner_hook = runner_hook
        self.setup_parameters()

    def on_configure(self, state: LifecycleState) -> TransitionCallbackReturn:
        try:
            self.perception = Perception(self, self.current_settings(), self._runner_hook)
        except StartupError as exc:
            self.get_logger().error(f"configure failed: {exc}")
            return TransitionCallbackReturn.FAILURE
        self.perception.state = "inactive"
        return TransitionCallbackReturn.SUCCESS

    def on_activate(self, state: LifecycleState) -> TransitionCallbackReturn:
        self.perception.activate()
        self.perception.state = "active"
        return super().on_activate(state)

    def on_deactivate(self, state: LifecycleState) -> TransitionCallbackReturn:
        self.perception.deactivate()
        self.perception.state = "inactive"
        return super().on_deactivate(state)

    def on_cleanup(self, state: LifecycleState) -> TransitionCallbackReturn:
        self._free()
        return TransitionCallbackReturn.SUCCESS

    def on_shutdown(self, state: LifecycleState) -> TransitionCallbackReturn:
        self._free()
        return TransitionCallbackReturn.SUCCESS

    def on_error(self, state: LifecycleState) -> TransitionCallbackReturn:
        self._free()
        return TransitionCallbackReturn.SUCCESS

    def _free(self) -> None:
        if self.perception is not None:
            self.perception.close()
            self.perception = None

    def stop(self) -> None:
        """Stop the workers (does not wait for an inference in progress to end)."""
        if self.perception is not None:
            self.perception.stop()

    def destroy_node(self) -> None:
        """Destroy the node and its lifecycle state machine, so it leaves the ROS graph now.

        rclpy's LifecycleNode does not destroy its state machine, which holds the node (and its
        ``transition_event`` publisher and lifecycle services) until Python's garbage collector
        frees it: a node destroyed in a running process, e.g. one composed with others, stayed
        in the graph, services and all, for as long as that took.
        """
        state_machine = getattr(self, "_state_machine", None)
        super().destroy_node()
        if state_machine is not None:
            state_machine.destroy_when_not_in_use()
