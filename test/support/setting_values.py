# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Another valid value of a setting of the table, for sweeps over every setting."""

from __future__ import annotations

from typing import Any

from dense_perception.core.settings.row import ParamSpec
from dense_perception.offline.options.settings_args import DEPTH_FORMATS


def other_value(spec: ParamSpec) -> Any:
    """A value of ``spec``'s type that its row allows, other than its default."""
    if isinstance(spec.default, bool):
        return not spec.default
    if spec.choices:
        return next(c for c in spec.choices if c != spec.default)
    if isinstance(spec.default, (int, float)):
        kind, low, high = type(spec.default), spec.low, spec.high
        candidates = [spec.default + 1, spec.default - 1]
        candidates += [(spec.default + bound) / 2 for bound in (high, low) if bound is not None]
        # the row's own check too (num_threads: 0 is in range but refused)
        return next(kind(v) for v in candidates if kind(v) != spec.default
                    and spec.problem(kind(v)) is None)
    if isinstance(spec.default, list):
        if spec.name == "cameras":
            return ["front", "rear"]
        if spec.name == "camera_in_base":  # a mounting: 0.5 m above the base, looking ahead
            return [0.0, 0.0, 0.5, -0.5, 0.5, -0.5, 0.5]
        if spec.default:  # a fixed-length vector (input_mean, input_std): each element moved
            return [round(float(v) + 0.125, 6) for v in spec.default]
        return [1.0]
    return "elsewhere"


def flag_words(spec: ParamSpec, value: Any) -> list[str]:
    """``value`` of ``spec`` as the offline command's words (``--x v``, ``--x`` / ``--no-x``)."""
    if isinstance(value, bool):
        return [spec.offline if value else "--no-" + spec.offline[2:]]
    if spec.name == "depth_encoding":  # --depth-format npy|png16
        return [spec.offline, DEPTH_FORMATS[value]]
    if isinstance(value, list):
        return [spec.offline, *map(str, value)]
    return [spec.offline, str(value)]
