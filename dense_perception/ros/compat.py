"""What differs between the ROS 2 distributions the node runs on, in one place.

Tested: Kilted (rclpy 9.1, ``make test``) and Jazzy (rclpy 7.1, ``make test-jazzy``); kept to
the API that Humble (rclpy 3.3, Python 3.10) has too. Everything here exists on all three except
where a fallback is written out:

* QoS event callbacks moved from ``rclpy.qos_event`` (Humble) to ``rclpy.event_handler`` (Iron and
  later, where the old module only warns).
* ``ReliabilityPolicy.BEST_AVAILABLE`` (match the publisher's reliability) exists from Iron on;
  it is ``None`` on Humble, which has to look the publisher's QoS up instead.
* ``QoSOverridingOptions.with_default_policies()`` and ``ParameterDescriptor`` (ranges,
  ``read_only``, ``additional_constraints``) are the same on all three: they are built here so the
  node has a single way of making them (and rclpy's in-place QoS override is guarded once).
"""

from __future__ import annotations

import copy
import os
from typing import Any, Callable

from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rclpy.qos_overriding_options import QoSOverridingOptions

try:  # Iron and later
    from rclpy.event_handler import (PublisherEventCallbacks,  # noqa: F401 (re-exported)
                                     SubscriptionEventCallbacks)
except ImportError:  # Humble
    from rclpy.qos_event import (PublisherEventCallbacks,  # type: ignore[no-redef]  # noqa: F401
                                 SubscriptionEventCallbacks)

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
