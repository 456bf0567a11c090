# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""What differs between the ROS 2 distributions the node runs on, in one place.

Tested: Kilted (rclpy 9.1, ``make test``) and Jazzy (rclpy 7.1, ``make test-jazzy``); kept to
the API that Humble (rclpy 3.3, Python 3.10) has too. Everything here exists on all three except
where a fallback is written out:

* QoS event callbacks moved from ``rclpy.qos_event`` (Humble) to ``rclpy.event_handler`` (Iron and
  later, where the old module only warns).
* Matched events (``PublisherEventCallbacks(matched=...)``, rclpy >= Iron): without them the
  node polls the graph on a timer instead (Humble).
* The post-set parameter callback (``add_post_set_parameters_callback``, rclpy >= Iron):
  without it, changes are applied at the end of the on-set callback, once validated (Humble).
* ``ReliabilityPolicy.BEST_AVAILABLE`` (match the publisher's reliability) exists from Iron on;
  it is ``None`` on Humble, which has to look the publisher's QoS up instead.
* ``QoSOverridingOptions.with_default_policies()`` and ``ParameterDescriptor`` (ranges,
  ``read_only``, ``additional_constraints``) are the same on all three: they are built here so the
  node has a single way of making them (and rclpy's in-place QoS override is guarded once).
"""

from __future__ import annotations

import copy
import inspect
import os
from typing import Any, Callable

from rcl_interfaces.msg import (FloatingPointRange, IntegerRange, ParameterDescriptor,
                                SetParametersResult)
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rclpy.qos_overriding_options import QoSOverridingOptions

try:  # Iron and later
    from rclpy.event_handler import PublisherEventCallbacks, SubscriptionEventCallbacks
except ImportError:  # Humble
    from rclpy.qos_event import (PublisherEventCallbacks,  # type: ignore[no-redef]
                                 SubscriptionEventCallbacks)

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


#: The reliability that follows the matched publisher; ``None`` where rclpy lacks it (Humble).
BEST_AVAILABLE: ReliabilityPolicy | None = getattr(ReliabilityPolicy, "BEST_AVAILABLE", None)

# rclpy's major version of each distribution (its package.xml), for messages and diagnostics.
_RCLPY_MAJOR_TO_DISTRO = {3: "humble", 4: "iron", 7: "jazzy", 9: "kilted"}


def ros_distro() -> str:
    """The ROS 2 distribution: ``$ROS_DISTRO`` when a ROS install is sourced, else from rclpy's
    version (pip wheels set no environment); ``"unknown"`` when neither says."""
    if os.environ.get("ROS_DISTRO"):
        return os.environ["ROS_DISTRO"]
    from importlib.metadata import PackageNotFoundError, version
    for dist in ("rclpy", "ros-rclpy"):
        try:
            major = int(version(dist).split(".")[0])
        except (PackageNotFoundError, ValueError):
            continue
        return _RCLPY_MAJOR_TO_DISTRO.get(major, "unknown")
    return "unknown"


def overridable(profile: QoSProfile) -> dict[str, Any]:
    """``create_publisher`` / ``create_subscription`` keyword arguments for a QoS that users may
    override from the parameters file (REP 2003 ``qos_overrides``: reliability, depth, ...).

    The profile is copied: rclpy writes the overrides into the profile object it is given, so a
    shared one (``qos_profile_sensor_data``, a module constant) would carry one topic's override
    to every later topic.
    """
    return {"qos_profile": copy.copy(profile),
            "qos_overriding_options": QoSOverridingOptions.with_default_policies()}


def subscription_events(on_incompatible_qos: Callable[[Any], None] | None = None
                        ) -> dict[str, Any]:
    """Keyword arguments for ``create_subscription`` with the given event callbacks."""
    if on_incompatible_qos is None:
        return {}
    return {"event_callbacks": SubscriptionEventCallbacks(incompatible_qos=on_incompatible_qos)}


def parameter_descriptor(description: str, *, choices: tuple[str, ...] = (),
                         low: float | int | None = None, high: float | int | None = None,
                         floating: bool = False, read_only: bool = False) -> ParameterDescriptor:
    """A descriptor with the description, the allowed choices as text, and a numeric range."""
    descriptor = ParameterDescriptor(description=description, read_only=read_only)
    if choices:
        descriptor.additional_constraints = "one of: " + ", ".join(choices)
    if low is not None and floating:
        descriptor.floating_point_range = [FloatingPointRange(
            from_value=float(low), to_value=float(high), step=0.0)]
    elif low is not None:
        descriptor.integer_range = [IntegerRange(from_value=int(low), to_value=int(high), step=1)]
    return descriptor
