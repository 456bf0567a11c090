# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Follow the node's settings through the package: from ``Perception.__init__``, which modules
the ``Settings`` visits, in call order, and how often it comes back to one.

    python tools/checks/node_walk.py [-v] [--derived] [name:=value ...]

Makes the node's working parts (:class:`~dense_perception.ros.perception.Perception`) on a real
rclpy node with the given parameters (the bundled DA3 test model and ``ground_plane`` scale
by default) under :func:`sys.setprofile`, and records every call of a function defined in a
module of ``dense_perception`` that is handed the ``Settings`` (the offline command's walk,
``tools/checks/argument_walk.py``, counts the same way: consecutive calls in one module are
one visit, rooms are the distinct modules, re-entries the visits past the first to each).
``--derived`` also follows what the node derives from the settings: a call handed a part's
configuration (``ScaleConfig``, ``MotionConfig``, ...) or a camera's setup counts too.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path
from types import FrameType
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from tools.checks.argument_walk import PACKAGE, Call, Walk, arguments, report  # noqa: E402

DEFAULTS = {"model_path": "test_da3_small.tflite", "depth_scale_source": "ground_plane",
            "camera_height": 1.2}


# What the node derives from the settings, by type name (``--derived``).
DERIVED = ("PipelineConfig", "ScaleConfig", "MotionConfig", "BackendConfig", "DepthOptions",
           "CompressionConfig", "CameraSetup", "CameraInputSetup", "OdometrySetup", "StartNotes",
           "NodeSetup")


def is_settings(value: Any, derived: bool = False) -> bool:
    """Whether ``value`` is the node's typed ``Settings`` (``derived``: or a configuration
    made from it)."""
    kind = type(value)
    names = ("Settings", *DERIVED) if derived else ("Settings",)
    return kind.__name__ in names and kind.__module__.startswith(PACKAGE + ".")


def walk(values: dict[str, Any], derived: bool = False) -> Walk:
    """Make and close the node's :class:`Perception` with ``values``; record its settings
    calls (the construction only: that is where the node derives what it needs)."""
    import rclpy
    from rclpy.node import Node

    from dense_perception.core.settings.table import Settings
    from dense_perception.ros.perception import Perception

    settings = Settings.from_values({**DEFAULTS, **values})
    result = Walk()

    def profile(frame: FrameType, event: str, _arg: Any) -> None:
        if event != "call":
            return
        module = frame.f_globals.get("__name__", "")
        if not module.startswith(PACKAGE + "."):
            return
        if any(is_settings(v, derived) for v in arguments(frame)):
            code = frame.f_code
            result.calls.append(Call(module, getattr(code, "co_qualname", code.co_name),
                                     ("Settings",)))

    context = rclpy.Context()  # its own: a test process may hold the default one
    rclpy.init(args=[], context=context)
    node = Node("node_walk", context=context)
    try:
        sys.setprofile(profile)
        try:
            perception = Perception(node, settings)
        finally:
            sys.setprofile(None)
        perception.close()
        result.exit_code = 0
    finally:
        node.destroy_node()
        rclpy.shutdown(context=context)
    return result


def parse(items: list[str]) -> dict[str, Any]:
    """``name:=value`` pairs (values as YAML-ish Python literals where they parse)."""
    values: dict[str, Any] = {}
    for item in items:
        name, _, text = item.partition(":=")
        try:
            values[name] = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            values[name] = text
    return values


def main(argv: list[str] | None = None) -> int:
    """``node_walk.py [-v] [--derived] [name:=value ...]``: the node's settings walk."""
    argv = list(sys.argv[1:] if argv is None else argv)
    verbose = "-v" in argv or "--verbose" in argv
    derived = "--derived" in argv
    items = [a for a in argv if a not in ("-v", "--verbose", "--derived")]
    print(report(walk(parse(items), derived), verbose))
    return 0


if __name__ == "__main__":
    sys.exit(main())
