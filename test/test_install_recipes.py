# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The README's install recipes, run as a new user would, each in a fresh venv from a copy of the
clone (`make test-install`; they install from PyPI, about a minute each):

* "Offline processing": the README's own lines (venv, `pip install .`, activate), then
  `dense-perception --help` and `dense-perception process` on a bag;
* "Running on a robot" on Debian 12's own, externally managed `/usr/bin/python3`: pip refuses
  the system Python (PEP 668), the `--system-site-packages` venv with requirements/robot.txt
  works over apt's numpy and OpenCV, and colcon run with the venv's Python installs commands
  that use it (where `ros2 run` looks for them).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from support.common import REPO, TIPS_TEST_MODEL

pytest.importorskip("rosbags")

from support.bag_maker import COLOURS, read_bag, tips_depth, write_bag  # noqa: E402
from support.common import copy_ignore  # noqa: E402

from dense_perception.core import conversions  # noqa: E402

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.environ.get("DENSE_PERCEPTION_INSTALL_TESTS") != "1",
                       reason="installs fresh venvs from PyPI; run by `make test-install`"),
]
README = (REPO / "README.md").read_text()
INSTALL_DOC = (REPO / "docs" / "install-on-a-robot.md").read_text()
OFFLINE_DOC = (REPO / "docs" / "offline-and-fleet.md").read_text()
SYSTEM_PYTHON = Path("/usr/bin/python3")
INSTALL_TIMEOUT = 600


def readme_block(section: str, index: int = 0, text: str = README) -> list[str]:
    """The lines of the ``index``-th ```bash block of a section of ``text`` (the README or a
    docs/ file)."""
    body = text.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```bash\n(.*?)```", body, re.S)
    return [line for line in blocks[index].splitlines() if line.strip()]


def clean_env(home: Path) -> dict[str, str]:
    """The environment of a new shell: no venv active, nothing on PYTHONPATH, HOME in tmp."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
    venv_bin = str(Path(sys.prefix) / "bin")
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if p != venv_bin)
    env["HOME"] = str(home)
    # The user's pip cache stays (only a download speed-up; the index is the same).
    env.setdefault("PIP_CACHE_DIR", str(Path.home() / ".cache" / "pip"))
    return env


def bash(script: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    result = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=cwd, env=env,
                            capture_output=True, text=True, timeout=INSTALL_TIMEOUT,
                            stdin=subprocess.DEVNULL)
    assert result.returncode == 0, \
        f"failed:\n{script}\n--- stdout\n{result.stdout[-3000:]}\n--- stderr\n{result.stderr[-3000:]}"
    return result


def assert_tips_depth(out: Path, frames: int) -> None:
    """The output bag's depth is the bundled TIPSv2 test model's known function of colour."""
    msgs, _ = read_bag(out)
    depth = msgs["/cam/depth/image"]
    assert len(depth) == frames
    for i, (_, msg) in enumerate(depth):
        np.testing.assert_allclose(conversions.image_msg_to_array(msg),
                                   tips_depth(COLOURS[i]), atol=1e-4)


def test_offline_section_from_a_fresh_clone(tmp_path):
    lines = readme_block("Offline processing", text=OFFLINE_DOC)
    assert any("pip install ." in line for line in lines), lines
    clone = tmp_path / "dense_perception"
    shutil.copytree(REPO, clone, ignore=copy_ignore())
    bag = write_bag(tmp_path / "run42", "mcap", frames=3)
    home = tmp_path / "home"
    home.mkdir()
    script = "\n".join([*lines,
                        'echo "FOUND $(command -v dense-perception)"',
                        "dense-perception --help",
                        f"cd {tmp_path} && dense-perception process {bag} --model "
                        f"{clone / 'models' / Path(TIPS_TEST_MODEL).name} --backend cpu "
                        f"--topic /cam/image_raw --out {tmp_path / 'out'}"])
    result = bash(script, clone, clean_env(home))
    found = re.search(r"^FOUND (.*)$", result.stdout, re.M).group(1)
    assert Path(found).is_relative_to(home), f"dense-perception found at {found!r}, not the venv"
    assert "process" in result.stdout and "info" in result.stdout  # the sub-commands' help
    assert "3 frames" in result.stdout
    assert_tips_depth(tmp_path / "out", 3)


def _system_python_has(*modules: str) -> bool:
    code = "import importlib.util, sys; sys.exit(any(importlib.util.find_spec(m) is None " \
           f"for m in {modules!r}))"
    return subprocess.run([str(SYSTEM_PYTHON), "-c", code], capture_output=True).returncode == 0


@pytest.mark.skipif(not list(Path("/usr/lib").glob("python3*/EXTERNALLY-MANAGED")),
                    reason="/usr/bin/python3 is not an externally managed (PEP 668) Python")
def test_robot_recipe_on_debian_python(tmp_path):
    if not _system_python_has("venv", "numpy", "cv2", "colcon_core", "colcon_ros", "tqdm",
                              "yaml"):
        pytest.skip("apt packages of the robot recipe missing (make test-install installs "
                    "python3-venv python3-numpy python3-opencv python3-tqdm python3-yaml "
                    "colcon)")
    env = clean_env(tmp_path / "home")
    (tmp_path / "home").mkdir()
    # What the recipe is for: pip refuses the system Python.
    refused = subprocess.run([str(SYSTEM_PYTHON), "-m", "pip", "install", "--dry-run",
                              "rosbags"], capture_output=True, text=True, env=env, timeout=120)
    assert refused.returncode != 0 and "externally-managed-environment" in refused.stderr

    ws = tmp_path / "ros2_ws"
    shutil.copytree(REPO, ws / "src" / "dense_perception", ignore=copy_ignore())
    # The README's lines from the venv to the build (no ROS here: no sourcing, no rosdep).
    lines = readme_block("Running on a robot")
    start = next(i for i, line in enumerate(lines) if "venv --system-site-packages" in line)
    end = next(i for i, line in enumerate(lines) if "colcon build" in line)
    # docs/install-on-a-robot.md explains the same lines, with comments: one recipe.
    doc = [line.split("#")[0].strip()
           for line in readme_block("Running on a robot", text=INSTALL_DOC)]
    assert [line.split("#")[0].strip() for line in lines[start:end + 1]] == \
        doc[doc.index(lines[start].strip()):][:end + 1 - start]
    recipe = [line.replace("python3 -m venv", f"{SYSTEM_PYTHON} -m venv", 1)
              for line in lines[start:end + 1]]
    bash("\n".join(recipe), ws, env)

    venv_python = ws / ".venv" / "bin" / "python"
    report = subprocess.run([str(venv_python), "-c",
                             "import numpy, cv2, ai_edge_litert, rosbags, sys; "
                             "print(numpy.__version__, numpy.__file__, cv2.__version__, "
                             "sys.base_prefix)"],
                            capture_output=True, text=True, timeout=60)
    numpy_version, numpy_file, cv2_version, base = report.stdout.split()
    assert base == "/usr", f"the venv is not over Debian's Python: {base}"
    # apt's numpy (1.x) and OpenCV, seen through the system site packages, were kept.
    assert numpy_file.startswith("/usr/lib/python3/dist-packages/"), numpy_file
    assert numpy_version.startswith("1."), numpy_version
    assert cv2_version.startswith("4."), cv2_version

    # What `ros2 run dense_perception <name>` runs: <prefix>/lib/dense_perception/<name>.
    lib = ws / "install" / "dense_perception" / "lib" / "dense_perception"
    for name in ("dense-perception", "dense_perception_node"):
        command = lib / name
        assert command.is_file() and os.access(command, os.X_OK), f"{command} not installed"
        shebang = command.read_text().splitlines()[0]
        assert shebang == f"#!{venv_python}", f"{name} runs {shebang}, not the venv's python"
    # The README's next line: the workspace's setup script (colcon's; no ROS underneath here).
    source = f"set +u; source {ws / 'install' / 'setup.bash'}; set -u; "
    help_text = bash(source + f"{lib / 'dense-perception'} --help", ws, env).stdout
    assert "process" in help_text
    bag = write_bag(tmp_path / "bag", "mcap", frames=2)
    model = ws / "install" / "dense_perception" / "share" / "dense_perception" / "models" / \
        Path(TIPS_TEST_MODEL).name
    bash(source + f"{lib / 'dense-perception'} process {bag} --model {model} --backend cpu "
         f"--topic /cam/image_raw --out {tmp_path / 'out'}", tmp_path, env)
    assert_tips_depth(tmp_path / "out", 2)

