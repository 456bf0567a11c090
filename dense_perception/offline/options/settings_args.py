# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The offline command's flags for the node's settings, generated from the settings table.

Each setting with an ``offline`` flag (:data:`dense_perception.core.settings.table.PARAMS`)
gets that flag with the node's default, type, choices and range (checked once, when
:func:`settings_from_args` makes the run's :class:`Settings`, in the same words as the node but
naming the flag), so ``dense-perception process`` and the node cannot drift apart. Booleans are
``--x`` / ``--no-x``. ``--model`` and ``--depth-format`` (``npy``/``png16`` for the node's
``depth_encoding`` 32FC1/16UC1) are written out in cli.py.

This module is the command line's glue: the only one of offline/ that reads settings by name.
"""

from __future__ import annotations

import argparse
from typing import Any

from ...core.setting_names import Syntax
from ...core.settings.row import ParamSpec, SettingError
from ...core.wiring.derived import compressed_depth_problem
from ...core.settings.table import PARAMS, PARAMS_BY_NAME, Settings
from ..console import CliError

HAND_WRITTEN = ("model_path", "depth_encoding")
DEPTH_FORMATS = {"32FC1": "npy", "16UC1": "png16"}  # depth_encoding -> --depth-format
# (the one mapping: files and summaries say the format, bags the encoding)
GROUPS = {"depth_scale_source": "scale", "camera_height": "scale",
          "depth_scale_time_constant": "scale", "depth_scale_max_age": "scale",
          "ground_max_tilt_deg": "scale", "depth_scale_min_inliers": "scale",
          "reference_depth_slop": "scale"}


def flag(name: str) -> str:
    """The offline flag of setting ``name`` (its own name when the command has none)."""
    return PARAMS_BY_NAME[name].offline or name


def _value(name: str, value: Any) -> str:
    return DEPTH_FORMATS.get(value, value) if name == "depth_encoding" else str(value)


OFFLINE = Syntax(name=flag, phrase=lambda n, v: f"{flag(n)} {_value(n, v)}",
                 example=lambda n, v: f"{flag(n)} {_value(n, v)}")
"""Settings named as ``dense-perception process`` flags in messages."""


def dest(spec: ParamSpec) -> str:
    """The argparse attribute of a setting's flag (``--threads`` -> ``threads``)."""
    return (spec.offline or spec.name).lstrip("-").replace("-", "_")


def _help(spec: ParamSpec) -> str:
    unit = f" [{spec.unit}]" if spec.unit else ""
    return (spec.description + unit + f" (node: {spec.name})").replace("%", "%%")


def add_setting_arguments(parser: argparse.ArgumentParser,
                          scale_group: argparse._ArgumentGroup) -> None:
    """Add a flag for every offline setting of the table (the metric-scale ones to
    ``scale_group``)."""
    for spec in PARAMS:
        if spec.offline is None or spec.name in HAND_WRITTEN:
            continue
        target = scale_group if GROUPS.get(spec.name) == "scale" else parser
        # None when not typed: the value is the table's default (setting_values), and
        # given_settings tells a typed flag apart, also one typed at its default
        kwargs: dict[str, Any] = {"dest": dest(spec), "default": None, "help": _help(spec)}
        if isinstance(spec.default, bool):
            kwargs["action"] = argparse.BooleanOptionalAction
        elif isinstance(spec.default, list) and len(spec.default) == 1:  # any count: 7 a camera
            kwargs.update(type=type(spec.default[0]), nargs="+", metavar="N")
        elif isinstance(spec.default, list):  # a fixed-length list: --input-mean R G B
            kwargs.update(type=type(spec.default[0]), nargs=len(spec.default),
                          metavar=tuple("RGB") if len(spec.default) == 3 else None)
        else:
            kwargs["type"] = type(spec.default)
            if spec.choices:
                kwargs["choices"] = spec.choices
        target.add_argument(spec.offline, **kwargs)


def setting_values(args: argparse.Namespace) -> dict[str, Any]:
    """``{setting name: value}`` of the parsed command line, for every offline setting."""
    values = {spec.name: spec.default if (v := getattr(args, dest(spec))) is None else v
              for spec in PARAMS if spec.offline is not None and spec.name not in HAND_WRITTEN}
    values["model_path"] = args.model
    values["depth_encoding"] = {v: k for k, v in DEPTH_FORMATS.items()}[args.depth_format]
    return values


def given_settings(args: argparse.Namespace) -> list[str]:
    """The settings whose flag was typed on the command line (at its default too)."""
    return [spec.name for spec in PARAMS if spec.offline is not None
            and spec.name not in HAND_WRITTEN and getattr(args, dest(spec)) is not None]


def settings_from_args(args: argparse.Namespace) -> Settings:
    """The run's settings, made once from the parsed command line and checked against the
    table; CliError (naming the flag) when a value is out of its row."""
    values = setting_values(args)
    try:
        settings = Settings.from_values(values)
    except SettingError as exc:
        raise CliError(exc.in_syntax(OFFLINE)) from None
    problem = compressed_depth_problem(settings, OFFLINE)
    if problem:
        raise CliError(problem)
    return settings
