# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""One row of the settings table (:mod:`.table`): a setting's default, description,
allowed values or range, unit, runtime or restart-only and offline flag, and its check."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from ..setting_names import NODE, Syntax


@dataclass(frozen=True)
class ParamSpec:
    """One parameter: default, description, and either ``choices`` or a numeric range."""

    name: str
    default: Any
    description: str
    choices: tuple[str, ...] = ()
    low: float | None = None
    high: float | None = None
    runtime: bool = False  # may change while the node runs
    unit: str = ""  # of a number: m, s, deg, px, m/unit, share ('' = none)
    # The offline command's flag (``dense-perception process``), None = the node only. Flags
    # are generated from this table (offline/options/settings_args.py) but for --model and
    # --depth-format (npy/png16 for 32FC1/16UC1), which the command line writes out itself.
    offline: str | None = None
    # Whether the setting can change an output's bytes: the fleet's reuse key
    # (offline/fleet/plan.py) is every offline setting marked so. True unless a setting is shown
    # not to, so a new setting is in the key until someone says otherwise.
    affects_output: bool = True
    # A check beyond choices and range (value, syntax) -> why not, or None.
    check: Callable[[Any, Syntax], str | None] | None = None

    def problem(self, value: Any, syntax: Syntax = NODE) -> str | None:
        """Why ``value`` is not allowed, or None (the setting named in ``syntax``)."""
        name = syntax.name(self.name)
        if self.choices and value not in self.choices:
            return f"{name} '{value}' is not allowed; use one of: {', '.join(self.choices)}"
        if self.low is not None and not value >= self.low:
            return f"{name} must be >= {self.low:g}, got {value}"
        if self.high is not None and not value <= self.high:
            return f"{name} must be <= {self.high:g}, got {value}"
        return self.check(value, syntax) if self.check is not None else None


class SettingError(ValueError):
    """A setting's value is outside its row of the table (the message names it for the node;
    :meth:`in_syntax` for another front end)."""

    def __init__(self, spec: ParamSpec, value: Any, problem: str) -> None:
        super().__init__(problem)
        self.spec, self.value = spec, value

    def in_syntax(self, syntax: Syntax) -> str:
        """The message with the setting named as ``syntax`` names it (e.g. a flag)."""
        return self.spec.problem(self.value, syntax) or str(self)


def setting(default: Any, description: str, **row: Any) -> Any:
    """A field of :class:`~.table.Settings`: its default (a list is held as a tuple) and its row."""
    held = tuple(default) if isinstance(default, list) else default
    return field(default=held, metadata={"row": ParamSpec("", default, description, **row)})
