"""The rclpy API differences between Humble, Jazzy and Kilted, detected once, here.

* Matched events (``PublisherEventCallbacks(matched=...)``, rclpy >= Iron): without them the
  node polls the graph on a timer instead (Humble).
* The post-set parameter callback (``add_post_set_parameters_callback``, rclpy >= Iron):
  without it, changes are applied at the end of the on-set callback, once validated (Humble).
* ``rclpy.event_handler`` was ``rclpy.qos_event`` in Humble.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

from rcl_interfaces.msg import SetParametersResult
from rclpy.node import Node

try:
    from rclpy.event_handler import PublisherEventCallbacks, SubscriptionEventCallbacks
except ImportError:  # Humble
    from rclpy.qos_event import PublisherEventCallbacks, SubscriptionEventCallbacks

HAS_MATCHED_EVENTS = "matched" in inspect.signature(PublisherEventCallbacks.__init__).parameters
HAS_POST_SET_CALLBACK = hasattr(Node, "add_post_set_parameters_callback")
GRAPH_POLL_S = 0.5  # how often the fallback looks at the graph


class GraphWatch:
    """Calls ``on_change`` when a publisher or subscription made with its ``publisher_kwargs``
    / ``subscription_kwargs`` gains or loses a match (matched events), or every
    ``GRAPH_POLL_S`` seconds where this rclpy has no matched events.

    A matched event only triggers a guard condition; ``on_change`` runs from that, as its own
    executor callback, so it may destroy the very subscription whose event fired (destroying
    it inside its own event callback is deferred by rclpy and leaves it in the graph).
    """

    def __init__(self, node: Node, on_change: Callable[[], None]) -> None:
        self._node = node
        self.matched_events = HAS_MATCHED_EVENTS  # read here, so a test can take the fallback
        self._guard = node.create_guard_condition(on_change) if self.matched_events else None
        self._timer = None if self.matched_events else node.create_timer(GRAPH_POLL_S, on_change)

    def _matched(self, _info: Any) -> None:
        self._guard.trigger()

    def publisher_kwargs(self) -> dict[str, Any]:
        if not self.matched_events:
            return {}
        return {"event_callbacks": PublisherEventCallbacks(matched=self._matched)}

    def subscription_kwargs(self) -> dict[str, Any]:
        if not self.matched_events:
            return {}
        return {"event_callbacks": SubscriptionEventCallbacks(matched=self._matched)}

    def close(self) -> None:
        if self._timer is not None:
            self._node.destroy_timer(self._timer)
            self._timer = None
        if self._guard is not None:
            self._node.destroy_guard_condition(self._guard)
            self._guard = None


def add_parameter_callbacks(node: Node,
                            validate: Callable[[list], SetParametersResult],
                            apply: Callable[[list], None]) -> None:
    """``validate`` as the on-set callback (it must not change state), ``apply`` after a
    successful set (the post-set callback; on Humble, at the end of the on-set callback)."""
    if HAS_POST_SET_CALLBACK:
        node.add_on_set_parameters_callback(validate)
        node.add_post_set_parameters_callback(apply)
        return

    def validate_then_apply(params: list) -> SetParametersResult:
        result = validate(params)
        if result.successful:
            apply(params)
        return result
    node.add_on_set_parameters_callback(validate_then_apply)
