# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Declaring and checking the node's parameters (the table: ``core/settings/table.py``); the
node's glue between ROS parameters and the typed :class:`Settings`.

Restart-only parameters are declared ``read_only`` (``ros2 param describe`` shows it and rclpy
refuses a change); runtime ones are validated in the on-set callback (:func:`check_changes`)
and applied in the post-set callback (see ``compat.add_parameter_callbacks``). The managed
(lifecycle) node is the exception: configure reads them, so they may be set while it is
unconfigured (Navigation2's cleanup -> set -> configure) and are refused, with the way out,
while it is configured.
"""

from __future__ import annotations

import array
from typing import Any

from rcl_interfaces.msg import ParameterDescriptor, SetParametersResult
from rclpy.exceptions import ParameterException, ParameterUninitializedException
from rclpy.node import Node

from ..core.model.specs import ModelSpec
from ..core.wiring.relevance import ignored_settings
from ..core.settings.row import ParamSpec, SettingError
from ..core.wiring.derived import (StartNotes, camera_heights_problem, compressed_depth_problem,
                                   depth_units_problem, ignored_camera_height, node_where)
from ..core.settings.table import PARAMS, PARAMS_BY_NAME, Settings
from .compat import parameter_descriptor

RESTART_NOTE = " Read-only: set it in the config YAML (or -p name:=value) and restart the node."
CONFIGURE_NOTE = (" Lifecycle node: settable only while unconfigured (deactivate and cleanup "
                  "first); the next configure uses it.")
# Restart-only even for the managed node: it chose the node's class at start.
PROCESS_PARAMS = ("use_lifecycle",)


class StartupError(RuntimeError):
    """The node cannot start; the message says what is wrong and how to fix it."""


def descriptor(spec: ParamSpec, managed: bool = False) -> ParameterDescriptor:
    """The ParameterDescriptor of one parameter: description, allowed values or range,
    and ``read_only`` unless it may change while the node runs (or, ``managed``: while a
    lifecycle node is unconfigured)."""
    numeric = isinstance(spec.default, (int, float)) and not isinstance(spec.default, bool)
    configurable = managed and not spec.runtime and spec.name not in PROCESS_PARAMS
    note = "" if spec.runtime else CONFIGURE_NOTE if configurable else RESTART_NOTE
    return parameter_descriptor(
        spec.description + note, choices=spec.choices,
        low=spec.low if numeric else None, high=spec.high if numeric else None,
        floating=isinstance(spec.default, float),
        read_only=not spec.runtime and not configurable)


def declare_parameters(node: Node, managed: bool = False) -> Settings:
    """Declare every parameter on ``node`` (``managed``: a lifecycle node, see
    :func:`descriptor`); their checked settings (StartupError if one is bad)."""
    try:
        for spec in PARAMS:
            if not node.has_parameter(spec.name):
                node.declare_parameter(spec.name, spec.default, descriptor(spec, managed))
    except ParameterException as exc:
        raise StartupError(f"bad parameter: {' '.join(str(exc).split())}. Allowed values "
                           "are listed in config/depth.yaml.") from None
    try:
        settings = node_settings(node)
    except SettingError as exc:
        raise StartupError(f"{exc}. Fix it in the config YAML or with "
                           f"-p {exc.spec.name}:=<value>.") from None
    problem = compressed_depth_problem(settings)
    if problem:
        raise StartupError(f"{problem}. Fix it in the config YAML or with -p name:=value.")
    return settings


def node_settings(node: Node) -> Settings:
    """The settings of ``node``'s declared parameters (SettingError if one is bad)."""
    return Settings.from_values({p.name: parameter_value(node, p) for p in PARAMS})


def parameter_value(node: Node, spec: ParamSpec) -> Any:
    """A declared parameter's value. An empty list from a YAML file or ``-p name:=[]`` has no
    type in ROS 2 and leaves a list parameter unset: that reads as the empty list."""
    try:
        return plain_value(node.get_parameter(spec.name).value)
    except ParameterUninitializedException:
        if isinstance(spec.default, list):
            return []
        raise


def ignored_at_start(log: Any, notes: StartNotes) -> tuple[str, ...]:
    """Log what the node says at start of the settings it was given (``notes``, made by
    ``core/wiring/derived.py``): one WARN per setting that does nothing with this model,
    its info lines at INFO; the ignored settings' reasons, for /diagnostics."""
    for line in notes.info:
        log.info(line)
    for why in notes.ignored:
        log.warning(f"{why}; it is ignored (remove it from the config YAML or -p)")
    return notes.ignored


def changed_values(params: list) -> dict[str, Any]:
    """{name: value} of the node's own parameters among ``params``."""
    return {p.name: plain_value(p.value) for p in params if p.name in PARAMS_BY_NAME}


def plain_value(value: Any) -> Any:
    """A parameter value as the settings hold it: rclpy gives a double or integer array as an
    ``array.array``, the settings (and a YAML file) a list."""
    return value.tolist() if isinstance(value, array.array) else value


def restart_only_refusal(name: str, lifecycle_state: str | None) -> str | None:
    """Why restart-only parameter ``name`` may not change now (None: it may). The plain node
    (``lifecycle_state`` None) never takes one; a lifecycle node takes one while unconfigured."""
    if lifecycle_state is None or name in PROCESS_PARAMS:
        return (f"{name} cannot change while the node runs; set it in the config YAML and "
                "restart the node")
    if lifecycle_state == "unconfigured":
        return None
    how = "deactivate and cleanup first" if lifecycle_state == "active" else "cleanup first"
    return (f"{name} can only change while the node is unconfigured, and it is "
            f"{lifecycle_state}: {how}, then set it and configure")


def check_changes(current: Settings, params: list, spec: ModelSpec | None = None,
                  lifecycle_state: str | None = None) -> SetParametersResult:
    """Whether ``params`` may be applied to a node whose settings are ``current`` and whose
    model is ``spec`` (None: no model loaded yet), in ``lifecycle_state`` (None: the plain
    node); no side effects: this is the on-set callback's whole job. A change of a setting that
    would do nothing with this model and these settings is refused (the relevance rule)."""
    changes = changed_values(params)
    for name in changes:
        # read_only refuses first where it is set; this covers a descriptor override
        refusal = None if PARAMS_BY_NAME[name].runtime \
            else restart_only_refusal(name, lifecycle_state)
        if refusal:
            return SetParametersResult(successful=False, reason=refusal)
    if not changes:
        return SetParametersResult(successful=True)
    try:
        changed = current.changed(changes)  # each value checked against its row
    except SettingError as exc:
        return SetParametersResult(successful=False, reason=str(exc))
    # camera_heights must fit cameras once the node runs (unconfigured, configure checks)
    moved = [name for name in changes if getattr(changed, name) != getattr(current, name)]
    # the specific refusals first (max_depth of relative depth: "is in metres")
    problem = ignored_camera_height(current, changed) or compressed_depth_problem(changed) or (
        None if spec is None else camera_heights_problem(changed)
        or depth_units_problem(changed, spec.metric_depth)
        or next(iter(ignored_settings(changed, moved, node_where(spec))), None))
    if problem:
        return SetParametersResult(successful=False, reason=problem)
    return SetParametersResult(successful=True)
