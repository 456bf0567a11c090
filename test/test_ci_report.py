# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The CI's timing table (tools/ci/report.py) over logs written here, the DDS domain each pytest
worker takes, and the markers that say where a test runs (CONTRIBUTING.md, "Which tests run
where")."""

import ast
import subprocess
import sys

import pytest

from support.common import REPO
from support.dds_domain import dds_domain_for

pytestmark = [pytest.mark.repository, pytest.mark.timeout(60)]

MAKE_TEST_LOG = """\
.venv/bin/python -m pytest -q -n 4 -m "(not gpu and not npu) and not serial" --durations=10
........................................................................ [ 50%]
============================= slowest 10 durations =============================
33.60s call     test/test_a.py::test_slow
2.50s setup    test/test_b.py::test_fixture
1170 passed, 28 skipped, 1 warning in 256.38s (0:04:16)
.venv/bin/python -m pytest -q -m "(not gpu and not npu) and serial" --durations=10
============================= slowest 10 durations =============================
7.36s call     test/test_c.py::test_bench
6 passed, 2 skipped, 1218 deselected in 20.01s
"""


def _write_run(folder, steps):
    lines = []
    for name, seconds, status, log in steps:
        (folder / f"{name}.log").write_text(log)
        lines.append(f"{name}\t{seconds}\t{status}")
    (folder / "steps.tsv").write_text("\n".join(lines) + "\n")


def _report(folder):
    return subprocess.run([sys.executable, "-m", "tools.ci.report", str(folder)], cwd=REPO,
                          capture_output=True, text=True, timeout=30)


def test_the_table_adds_up_each_targets_runs_and_names_the_slowest_tests(tmp_path):
    _write_run(tmp_path, [
        ("test", 300, 0, MAKE_TEST_LOG),
        ("test-py310", 100, 0, "test-py310: skipped: no Python 3.10 interpreter on this machine\n"),
        ("test-gpu", 100, 0, "2 failed, 5 passed in 3.0s\n"),  # (a status 0 whatever it says)
    ])
    out = _report(tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    rows = {line.split()[0]: line for line in out.stdout.splitlines() if line.strip()}
    # 300 of 500 s is 60 %; the parallel and the serial run of make test added up
    assert "300" in rows["test"] and "60%" in rows["test"]
    assert "1176 passed, 30 skipped" in rows["test"] and "deselected" not in rows["test"]
    assert "skipped: no Python 3.10 interpreter on this machine" in rows["test-py310"]
    assert "500" in rows["total"]
    slow = out.stdout.split("The ten slowest tests of make test:")[1].split("\n\n")[0]
    names = [line.split()[-1] for line in slow.strip().splitlines()]
    assert names == ["test/test_a.py::test_slow", "test/test_c.py::test_bench",
                     "test/test_b.py::test_fixture"]  # longest first, both runs merged
    assert out.stdout.strip().splitlines()[-1] == "all targets: 1181 passed, 2 failed, 30 skipped"


def test_a_failed_target_fails_the_run_and_is_named(tmp_path):
    _write_run(tmp_path, [("test", 10, 0, "3 passed in 1.0s\n"),
                          ("test-jazzy", 20, 2, "1 failed, 2 passed in 1.0s\n")])
    out = _report(tmp_path)
    assert out.returncode == 1
    assert "FAILED (exit 2)" in next(line for line in out.stdout.splitlines()
                                     if line.startswith("test-jazzy"))
    assert "CI targets failed: test-jazzy" in out.stdout


def test_workers_of_one_run_never_share_a_dds_domain():
    for parent in (0, 4321, 99, 12345):
        domains = [dds_domain_for(7, f"gw{i}", parent) for i in range(8)]
        assert len(set(domains)) == 8
        assert all(110 <= d <= 209 for d in domains)
    assert dds_domain_for(4321, None, 1) == 110 + 4321 % 100  # no worker: its own pid's


def _marks(path):
    """The marker names a test file sets for the whole module (``pytestmark``)."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "pytestmark"
                                                for t in node.targets):
            return {n.attr for n in ast.walk(node.value) if isinstance(n, ast.Attribute)
                    and isinstance(n.value, ast.Attribute) and n.value.attr == "mark"}
    return set()


def _imports_rclpy(path):
    """Whether the file imports rclpy or the package's ROS layer, anywhere in it."""
    for node in ast.walk(ast.parse(path.read_text())):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                 else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
        if any(n.split(".")[0] == "rclpy" or n.startswith("dense_perception.ros") for n in names):
            return True
    return False


def test_tests_kept_to_one_place_need_no_rclpy():
    """A numerics or repository test runs under one Python only: it must not be what checks
    rclpy, which differs between the Pythons and the distros."""
    wrong = {}
    for path in sorted((REPO / "test").glob("test_*.py")):
        marks = _marks(path)
        if marks & {"numerics", "repository"} and ("ros" in marks or _imports_rclpy(path)):
            wrong[path.name] = sorted(marks)
    assert wrong == {}
    assert len([p for p in (REPO / "test").glob("test_*.py") if "numerics" in _marks(p)]) >= 20
