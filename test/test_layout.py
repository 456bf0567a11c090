# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The folders are the architecture: core/ and offline/ import without ROS and without torch,
torch is imported only inside export/, and tools/ and test/ are not installed with the package."""

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from support.common import REPO

PACKAGE = REPO / "dense_perception"
ROS_MODULES = ("rclpy", "sensor_msgs", "std_msgs", "diagnostic_msgs", "builtin_interfaces",
               "rcl_interfaces", "lifecycle_msgs")
TORCH_MODULES = ("torch", "litert_torch", "depth_anything_3", "ray")


def _modules(folder: str) -> list[str]:
    """Every module of the folder, its sub-packages' included."""
    return sorted(".".join(p.relative_to(REPO).with_suffix("").parts)
                  for p in (PACKAGE / folder).rglob("*.py") if p.stem != "__init__")


@pytest.mark.timeout(120)
@pytest.mark.parametrize("folder", ["core", "offline"])
def test_folder_imports_without_ros_or_torch(folder):
    """Import every module of the folder in a fresh interpreter and list what came with it."""
    modules = _modules(folder)
    assert len(modules) >= 3, f"no modules found in {folder}/"
    code = ("import sys\n" + "".join(f"import {m}\n" for m in modules)
            + f"bad = sorted(m for m in sys.modules if m.split('.')[0] in {ROS_MODULES + TORCH_MODULES!r})\n"
              "print(','.join(bad))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         timeout=100)
    assert out.stdout.strip() == "", f"{folder}/ pulled in {out.stdout.strip()}"


def _top_level_imports(path: Path) -> set[str]:
    """Modules imported at module level (not inside functions): what importing the file costs."""
    tree = ast.parse(path.read_text())
    names = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_torch_is_imported_only_inside_export():
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        if "export" in path.relative_to(PACKAGE).parts:
            continue
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            mods = ([a.name for a in node.names] if isinstance(node, ast.Import)
                    else [node.module] if isinstance(node, ast.ImportFrom) and node.module else [])
            if any(m.split(".")[0] in ("torch", "litert_torch", "depth_anything_3") for m in mods):
                offenders.append(str(path.relative_to(REPO)))
    assert offenders == []


def test_ros_layer_is_the_only_one_importing_rclpy():
    offenders = [str(p.relative_to(REPO)) for p in PACKAGE.rglob("*.py")
                 if "ros" not in p.relative_to(PACKAGE).parts
                 and _top_level_imports(p) & set(ROS_MODULES)]
    assert offenders == []


def test_every_python_file_says_its_copyright_and_licence():
    """The two lines ament_copyright and REUSE read, at the top (after a shebang) of every
    tracked Python file: the package's, the tools', the tests' and the launch files'."""
    import subprocess
    tracked = subprocess.run(["git", "ls-files", "*.py"], cwd=REPO, capture_output=True,
                             text=True, check=True).stdout.split()
    assert len(tracked) > 100
    missing = []
    for name in tracked:
        head = [line for line in (REPO / name).read_text().splitlines()[:3]
                if not line.startswith("#!")][:2]
        if not (head and head[0].startswith("# Copyright ") and
                head[1:] == ["# SPDX-License-Identifier: Apache-2.0"]):
            missing.append(name)
    assert missing == []


def test_no_module_is_over_400_lines():
    """The package's modules and the tools' alike."""
    long = {str(p.relative_to(REPO)): n for root in (PACKAGE, REPO / "tools")
            for p in root.rglob("*.py") if (n := len(p.read_text().splitlines())) > 400}
    assert long == {}


def test_tools_are_in_rooms_over_common():
    """tools/ holds rooms by purpose and no loose module; common/ (what the rooms and the tests
    share) imports no room, so the arrows go from the rooms down to it."""
    tools = REPO / "tools"
    assert sorted(p.name for p in tools.iterdir() if p.is_file()) == ["__init__.py"]
    rooms = {p.name for p in tools.iterdir() if (p / "__init__.py").exists()}
    assert {"bench", "checks", "common", "demo", "eval", "generate"} <= rooms
    upward = {}
    for path in (tools / "common").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                parts = node.module.split(".")
                if parts[0] == "tools" and len(parts) > 1 and parts[1] != "common":
                    upward[path.name] = node.module
    assert upward == {}


def test_tools_and_tests_are_not_installed():
    from setuptools import find_packages
    packages = find_packages(str(REPO), exclude=["test", "test.*", "tools", "tools.*"])
    assert "dense_perception.core" in packages and "dense_perception.ros" in packages
    assert not [p for p in packages if p.split(".")[0] in ("tools", "test")]
    setup_py = (REPO / "setup.py").read_text()
    assert '"tools"' in setup_py and '"test"' in setup_py  # setup.py excludes both


def test_tests_share_helpers_through_helper_modules_not_other_tests():
    """Shared test code lives in conftest.py or a helper module, never in another test file."""
    offenders = []
    for path in (REPO / "test").glob("test_*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            mods = ([a.name for a in node.names] if isinstance(node, ast.Import)
                    else [node.module] if isinstance(node, ast.ImportFrom) and node.module else [])
            offenders += [f"{path.name}: {m}" for m in mods if m.split(".")[0].startswith("test_")]
    assert offenders == []


def _package_imports(path: Path, module: str) -> set[str]:
    """The dense_perception modules ``path`` (module ``module``) imports, at any level
    (function-level imports too): ``from .x import y`` counts as ``x.y`` when that is a
    module, else ``x``."""
    package = module.rsplit(".", 1)[0] if path.name != "__init__.py" else module
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[:len(parts) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            names = [f"{base}.{a.name}" for a in node.names] + [base]
        else:
            continue
        found.update(n for n in names if n.startswith("dense_perception"))
    return found


def _import_graph() -> dict[str, set[str]]:
    root = REPO / "dense_perception"
    files = {".".join(p.relative_to(REPO).with_suffix("").parts): p
             for p in root.rglob("*.py")}
    modules = {m.removesuffix(".__init__"): p for m, p in files.items()}
    graph = {}
    for module, path in modules.items():
        targets = {t for t in _package_imports(path, module) if t in modules}
        # 'from .x import name' lists both x and x.name: keep the most specific module
        graph[module] = {t for t in targets
                         if not any(o.startswith(t + ".") for o in targets)} - {module}
    # a package's __init__ is not a cycle participant of its own submodules
    return {m: {t for t in ts if not m.startswith(t + ".")} for m, ts in graph.items()}


def test_the_package_import_graph_has_no_cycles():
    """Imports go one way: every module's imports, function-level ones included,
    form a graph without a cycle, so no module needs another that needs it back."""
    import graphlib
    graph = _import_graph()
    assert "dense_perception.core.backends.runner_base" in graph["dense_perception.core.backends.cpu_precision"]
    try:
        list(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as exc:
        pytest.fail(f"import cycle: {' -> '.join(exc.args[1])}")


def test_the_rooms_of_core_are_layers():
    """Inside core/ each folder (and top-level module) is a room; the rooms' imports form a
    graph without a cycle (so no import runs back up a floor), and the wiring, which builds
    each part's configuration from the settings, is imported by no part: only the pipeline
    (the top of core/) and the front ends use it."""
    import graphlib
    prefix = "dense_perception.core."

    def room(module: str) -> str | None:
        return module[len(prefix):].split(".")[0] if module.startswith(prefix) else None
    rooms: dict[str, set[str]] = {}
    for module, targets in _import_graph().items():
        here = room(module)
        if here is None:
            continue
        rooms.setdefault(here, set()).update(
            r for r in map(room, targets) if r is not None and r != here)
    assert "settings" in rooms["wiring"] and "motion" in rooms["wiring"]  # the graph is read
    try:
        list(graphlib.TopologicalSorter(rooms).static_order())
    except graphlib.CycleError as exc:
        pytest.fail(f"core's rooms import each other: {' -> '.join(exc.args[1])}")
    users = sorted(r for r, targets in rooms.items() if "wiring" in targets)
    assert users == ["pipeline"], users


def test_tests_import_shared_helpers_from_the_support_package():
    """No test imports conftest as a module or edits sys.path: shared code is in test/support/."""
    offenders = []
    for path in [*(REPO / "test").glob("*.py"), *(REPO / "test" / "support").glob("*.py")]:
        text = path.read_text()
        for node in ast.walk(ast.parse(text)):
            mods = ([a.name for a in node.names] if isinstance(node, ast.Import)
                    else [node.module] if isinstance(node, ast.ImportFrom) and node.module else [])
            offenders += [f"{path.name}: {m}" for m in mods if m == "conftest"]
        if re.search(r"^\s*sys\.path\.(insert|append)\(", text, re.M):
            offenders.append(f"{path.name}: edits sys.path")
    assert offenders == []


@pytest.mark.timeout(120)
def test_settings_and_help_load_no_litert():
    """The settings table and the offline --help load none of LiteRT's runtime (its native
    interpreter takes most of a second to import and is only needed once a model is opened;
    the pure-Python flatbuffer schema that reads a file's signature is fine)."""
    code = ("import sys, contextlib, io\n"
            "import dense_perception.core.settings.table, dense_perception.core.wiring.derived\n"
            "from dense_perception.offline.cli import build_parser\n"
            "with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):\n"
            "    build_parser().parse_args(['process', '--help'])\n"
            "print(','.join(sorted(m for m in sys.modules if m.startswith('ai_edge_litert.')\n"
            "                      and m != 'ai_edge_litert.schema_py_generated')))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=100, cwd=REPO)
    assert out.stdout.strip() == "", f"LiteRT loaded: {out.stdout.strip()}"
