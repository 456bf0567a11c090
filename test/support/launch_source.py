# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The package's own facts and launch/depth.launch.py as read from their sources with ``ast``,
for the launch and config tests: console scripts, the node's constants, the declared launch
arguments and the keyword arguments of the launch file's calls."""

from __future__ import annotations

import ast

from support.common import REPO

LAUNCH_FILE = REPO / "launch" / "depth.launch.py"


# ---- facts about the package, read from its sources ---------------------------------------------
def module_constants(tree: ast.Module) -> dict[str, object]:
    """A module's top-level constant assignments as {name: value}."""
    return {t.id: node.value.value for node in tree.body if isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Constant) for t in node.targets
            if isinstance(t, ast.Name)}


def console_scripts() -> dict[str, str]:
    """setup.py's console_scripts as {script: 'module:function'} (f-strings resolved)."""
    tree = ast.parse((REPO / "setup.py").read_text())
    consts = module_constants(tree)

    def text(node: ast.AST) -> str:
        if isinstance(node, ast.Constant):
            return str(node.value)
        if isinstance(node, ast.Name):
            return str(consts[node.id])
        if isinstance(node, ast.FormattedValue):
            return text(node.value)
        assert isinstance(node, ast.JoinedStr), ast.dump(node)
        return "".join(text(v) for v in node.values)

    scripts = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "entry_points":
            for key, value in zip(node.value.keys, node.value.values):
                if text(key) == "console_scripts":
                    for item in value.elts:
                        name, target = text(item).split("=")
                        scripts[name.strip()] = target.strip()
    return scripts


def node_source_facts() -> tuple[str, set[str]]:
    """The node's NODE_NAME and the topics it subscribes to (the *_TOPIC constants of
    ros/camera_input.py and ros/odometry_input.py; read with ast: no rclpy needed)."""
    ros = REPO / "dense_perception" / "ros"
    node_name = module_constants(ast.parse((ros / "perception.py").read_text()))["NODE_NAME"]
    topics = set()
    for module in ("camera_input.py", "odometry_input.py"):
        constants = module_constants(ast.parse((ros / module).read_text()))
        topics |= {value for name, value in constants.items() if name.endswith("_TOPIC")}
    return node_name, topics


# ---- the launch file, statically ----------------------------------------------------------------
def launch_tree() -> ast.Module:
    """launch/depth.launch.py parsed."""
    return ast.parse(LAUNCH_FILE.read_text(), filename=str(LAUNCH_FILE))


def calls(tree: ast.AST, name: str) -> list[ast.Call]:
    """Every call in ``tree`` of a function or class named ``name``."""
    def called(call: ast.Call) -> str:
        f = call.func
        return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call) and called(n) == name]


def kwargs_of(call: ast.Call) -> dict[str, ast.AST]:
    """A call's keyword arguments as {name: value node}."""
    return {k.arg: k.value for k in call.keywords}


def declared_args() -> dict[str, ast.Call]:
    """The launch file's DeclareLaunchArgument calls by argument name."""
    declared = {}
    for call in calls(launch_tree(), "DeclareLaunchArgument"):
        name = call.args[0].value if call.args else kwargs_of(call)["name"].value
        assert name not in declared, f"launch argument {name} declared twice"
        declared[name] = call
    return declared

