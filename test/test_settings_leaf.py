# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The settings table is a leaf: importing it loads no inference backend, no LiteRT and no
OpenCV, and ``make docs`` (tools/generate/gen_docs.py, which reads the table and the docstrings) runs
where OpenCV cannot be imported at all."""

import subprocess
import sys

import pytest

from support.common import REPO

pytestmark = pytest.mark.repository

# Makes ``import cv2`` fail in the child, as on a machine without OpenCV (None in sys.modules
# is Python's own "this module is not there": the import raises ModuleNotFoundError).
NO_OPENCV = "import sys; sys.modules['cv2'] = None\n"


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", NO_OPENCV + code], capture_output=True,
                          text=True, timeout=100, cwd=REPO)


@pytest.mark.timeout(120)
def test_the_opencv_shim_does_block_opencv():
    """The shim works: without it the tests below would prove nothing."""
    out = _run("import cv2\n")
    assert out.returncode != 0 and "ModuleNotFoundError" in out.stderr, out.stderr


@pytest.mark.timeout(120)
def test_the_settings_table_imports_no_backend_and_no_opencv():
    out = _run("import dense_perception.core.settings.table\n"
               "print('\\n'.join(sorted(sys.modules)))\n")
    assert out.returncode == 0, f"the settings table needs OpenCV:\n{out.stderr}"
    loaded = out.stdout.split()
    backends = [m for m in loaded if m.startswith("dense_perception.core.backends")]
    assert backends == [], f"the settings table loads backends: {backends}"
    assert not [m for m in loaded if m.startswith("ai_edge_litert")], "it loads LiteRT"


@pytest.mark.timeout(120)
def test_make_docs_check_runs_without_opencv():
    """``tools/generate/gen_docs.py --check`` as ``make docs`` runs it (a script, by path)."""
    out = _run("import runpy\n"
               "sys.argv = ['tools/generate/gen_docs.py', '--check']\n"
               "runpy.run_path('tools/generate/gen_docs.py', run_name='__main__')\n")
    assert "ModuleNotFoundError" not in out.stderr, f"make docs needs OpenCV:\n{out.stderr}"
    assert out.returncode == 0, out.stderr
