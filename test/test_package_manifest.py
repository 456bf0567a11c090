# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""package.xml, setup.py and the requirements files say what the code really imports.

The imports are read from the source (ast), not from the manifests: every third-party module
that the robot's code (core, ros, offline, the launch file) imports is declared in package.xml
(rosdep) or is one of the pip-only packages that requirements/robot.txt installs.
"""

import ast
import re
import sys
import xml.etree.ElementTree as ET

import pytest

from packaging.specifiers import SpecifierSet

from support.common import REPO

pytestmark = pytest.mark.repository

# Python module -> rosdep key, for what is not a ROS package of the same name.
ROSDEP_KEYS = {"numpy": "python3-numpy", "cv2": "python3-opencv", "tqdm": "python3-tqdm",
               "yaml": "python3-yaml"}
# Python module -> pip distribution, for what has no rosdep key.
PIP_ONLY = {"ai_edge_litert": "ai-edge-litert", "rosbags": "rosbags", "flatbuffers": "flatbuffers"}
# Python module -> the pip extra that brings it (optional features, imported lazily; never the node).
EXTRAS = {"ray": "fleet", "openvino": "openvino", "rerun": "rerun"}
ROBOT_CODE = [*(REPO / "dense_perception").glob("core/**/*.py"),
              *(REPO / "dense_perception").glob("ros/**/*.py"),
              *(REPO / "dense_perception").glob("offline/**/*.py"),
              *(REPO / "launch").glob("*.launch.py")]


def imported_modules(paths) -> set[str]:
    """Top-level names of every absolute import in ``paths`` (lazy imports in functions too)."""
    names = set()
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
    return names - set(sys.stdlib_module_names) - {"dense_perception", "__future__"}


def manifest(kind: str) -> set[str]:
    root = ET.parse(REPO / "package.xml").getroot()
    return {e.text.strip() for e in root if e.tag in (kind, "depend")}


def requirement_ranges(name: str) -> dict[str, str]:
    """{distribution: version range} of a requirements file."""
    found = {}
    for line in (REPO / name).read_text().splitlines():
        m = re.match(r"([A-Za-z0-9_.-]+)\s*(\S*)", line.split("#")[0].strip())
        if m:
            found[m.group(1).lower()] = m.group(2)
    return found


def test_every_import_of_the_robot_code_is_declared():
    modules = imported_modules(ROBOT_CODE)
    assert {"rclpy", "sensor_msgs", "numpy", "cv2", "rosbags", "ai_edge_litert"} <= modules
    exec_depends = manifest("exec_depend")
    undeclared = sorted(m for m in modules - set(PIP_ONLY) - set(EXTRAS)
                        if ROSDEP_KEYS.get(m, m) not in exec_depends)
    assert not undeclared, f"imported but not in package.xml: {undeclared}"
    unused = sorted(key for key in exec_depends
                    if key not in {ROSDEP_KEYS.get(m, m) for m in modules}
                    and key != "lifecycle_msgs")  # used through rclpy.lifecycle
    assert not unused, f"in package.xml but never imported: {unused}"


def test_optional_imports_are_pip_extras():
    setup_py = (REPO / "setup.py").read_text()
    for module, extra in EXTRAS.items():
        assert re.search(rf'"{extra}":\s*\["{module}', setup_py), f"{module}: no '{extra}' extra"


def test_pip_only_packages_are_what_the_robot_venv_installs():
    modules = imported_modules(ROBOT_CODE)
    pip_only = {PIP_ONLY[m] for m in modules if m in PIP_ONLY}
    robot = requirement_ranges("requirements/robot.txt")
    assert pip_only == set(robot) - {"numpy"}  # numpy: only a guard on apt's version
    runtime = requirement_ranges("requirements/runtime.txt")
    for name in pip_only:
        assert robot[name] == runtime[name], f"{name}: robot and package ranges differ"


def test_every_runtime_requirement_is_pinned_to_a_range_and_locked():
    runtime = requirement_ranges("requirements/runtime.txt")
    assert set(runtime) == {"ai-edge-litert", "flatbuffers", "numpy", "opencv-python-headless",
                            "rosbags", "tqdm", "pyyaml"}
    for name, spec in runtime.items():
        assert ">=" in spec and "<" in spec, f"{name} has no upper and lower bound: {spec!r}"
    for lock in ("constraints.txt", "constraints-jazzy.txt", "constraints-py310.txt",
                 "constraints-py312.txt"):
        lines = (REPO / "requirements" / lock).read_text().splitlines()
        pins = dict(line.split("==") for line in lines if "==" in line and not line.startswith("#"))
        pins = {k.lower(): v for k, v in pins.items()}
        for name, spec in runtime.items():
            assert name in pins, f"{lock} does not pin {name}"
            assert pins[name] in SpecifierSet(spec), f"{lock}: {name} {pins[name]} not in {spec}"


# rclpy API that Humble (rclpy 3.3) lacks, from the rclpy changelogs: Iron added the
# event_handler module, BEST_AVAILABLE policies, the logger service, type hashes and service
# introspection; Jazzy content filters; Kilted made rclpy.init a context manager.
NOT_IN_HUMBLE = ("event_handler", "BEST_AVAILABLE", "enable_logger_service", "type_hash",
                 "service_introspection", "content_filter_options", "ContentFilterOptions")


def test_ros_layer_keeps_to_humbles_rclpy_api_outside_compat():
    """What differs between distributions lives in ros/compat.py (with its fallbacks)."""
    offenders = []
    for path in [*(REPO / "dense_perception" / "ros").glob("*.py"),
                 *(REPO / "launch").glob("*.launch.py")]:
        if path.name == "compat.py":
            continue
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Attribute):
                names = [node.attr]
            elif isinstance(node, ast.Name):
                names = [node.id]
            elif isinstance(node, ast.ImportFrom):
                names = [*(node.module or "").split("."), *(a.name for a in node.names)]
            elif isinstance(node, ast.keyword):
                names = [node.arg or ""]
            elif isinstance(node, ast.With):  # `with rclpy.init(...)` (Kilted only)
                names = ["with rclpy.init()" for item in node.items
                         if isinstance(item.context_expr, ast.Call)
                         and getattr(item.context_expr.func, "attr", "") == "init"]
            offenders += [f"{path.name}:{node.lineno}: {n}" for n in names
                          if n in NOT_IN_HUMBLE or n == "with rclpy.init()"]
    assert not offenders, f"post-Humble rclpy API outside ros/compat.py: {offenders}"
