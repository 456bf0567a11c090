# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Follow the offline command's arguments through the package: which modules they
visit, in call order, and how often they come back to one.

    python tools/checks/argument_walk.py [-v] process IMAGE --model M [--out OUT] [...]

Runs ``dense_perception.offline.cli.main(argv)`` under :func:`sys.setprofile` and records, in
call order, every call of a function defined in a module of ``dense_perception`` whose
arguments (positional or keyword, ``*args`` and ``**kwargs`` included, read from the frame's
locals at its 'call' event; ``self`` excluded) include an object that carries the command's
arguments: the argparse namespace, the ``Settings``, the command's options
(``ProcessOptions``), the run's ``RunPlan`` or the ``ModelSession`` (code the package did not
write, such as a dataclass's generated ``__init__``, is not followed). Consecutive calls in
one module are one visit;
rooms are the distinct modules visited, re-entries the visits past the first to each room.

Only this thread is followed: the frame loop's second thread (overlap) runs inference on
arrays, never on these objects. A method called on one of them with nothing else of theirs
is not a visit: the object works on what it holds, nothing is handed on.
"""

from __future__ import annotations

import argparse
import inspect
import sys
from dataclasses import dataclass, field
from types import FrameType
from typing import Any, Iterator, NamedTuple

PACKAGE = "dense_perception"
# The package's types that carry the command's arguments, by name: the same tool measures a
# tree before they existed (a checkout of an older commit, through PYTHONPATH).
CARRIERS = ("Settings", "ProcessOptions", "RunPlan", "ModelSession")


class Call(NamedTuple):
    """One call that was handed a carrier: where, and the carriers' type names."""

    module: str
    function: str
    carriers: tuple[str, ...]


@dataclass
class Walk:
    """The carrier calls of one run, in call order, and the command's exit status."""

    calls: list[Call] = field(default_factory=list)
    exit_code: int | None = None

    @property
    def visits(self) -> list[str]:
        """The modules in call order, consecutive calls in one module as one visit."""
        out: list[str] = []
        for module, _, _ in self.calls:
            if not out or out[-1] != module:
                out.append(module)
        return out

    @property
    def rooms(self) -> int:
        """Distinct modules visited."""
        return len(set(self.visits))

    @property
    def re_entries(self) -> int:
        """Visits past the first to each module."""
        return len(self.visits) - self.rooms


def is_carrier(value: Any) -> bool:
    """Whether ``value`` carries the command's arguments (see the module docstring)."""
    kind = type(value)
    return isinstance(value, argparse.Namespace) or (
        kind.__name__ in CARRIERS and kind.__module__.startswith(PACKAGE + "."))


def arguments(frame: FrameType) -> Iterator[Any]:
    """The values of a frame's parameters at its 'call' event, ``self`` excluded."""
    code = frame.f_code
    count = code.co_argcount + code.co_kwonlyargcount
    varargs = bool(code.co_flags & inspect.CO_VARARGS)
    varkw = bool(code.co_flags & inspect.CO_VARKEYWORDS)
    names = code.co_varnames[:count + varargs + varkw]
    local = frame.f_locals
    for index, name in enumerate(names):
        if name == "self" and index == 0 or name not in local:
            continue
        value = local[name]
        if varargs and index == count:
            yield from value
        elif varkw and index == count + varargs:
            yield from value.values()
        else:
            yield value


def walk(argv: list[str]) -> Walk:
    """Run ``dense-perception ARGV`` in this process and record its carrier calls."""
    from dense_perception.offline import cli
    result = Walk()

    def profile(frame: FrameType, event: str, _arg: Any) -> None:
        if event != "call":
            return
        module = frame.f_globals.get("__name__", "")
        if module != PACKAGE and not module.startswith(PACKAGE + "."):
            return
        if frame.f_code.co_filename.startswith("<"):
            return  # generated code (a dataclass's __init__, storing its fields): no one's room
        carriers = tuple(type(v).__name__ for v in arguments(frame) if is_carrier(v))
        if carriers:
            # co_qualname (the class too) is Python 3.11+; 3.10 has the bare name
            code = frame.f_code
            result.calls.append(Call(module, getattr(code, "co_qualname", code.co_name),
                                     carriers))

    sys.setprofile(profile)
    try:
        result.exit_code = cli.main(argv)
    finally:
        sys.setprofile(None)
    return result


def report(result: Walk, verbose: bool = False) -> str:
    """Rooms, re-entries and the module sequence (``verbose``: each call too)."""
    short = [m.removeprefix(PACKAGE + ".") for m in result.visits]
    lines = [f"exit status {result.exit_code}",
             f"rooms {result.rooms}, re-entries {result.re_entries}",
             "walk: " + " > ".join(short)]
    if verbose:
        lines += [f"  {m.removeprefix(PACKAGE + '.')}.{f}({', '.join(c)})"
                  for m, f, c in result.calls]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """``argument_walk.py [-v] COMMAND ...``: the walk of ``dense-perception COMMAND ...``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    verbose = bool(argv) and argv[0] in ("-v", "--verbose")
    result = walk(argv[verbose:])
    print(report(result, verbose))
    return 0


if __name__ == "__main__":
    sys.exit(main())
