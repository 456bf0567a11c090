# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""`colcon build` of this package in a temporary workspace, and the installed layout it gives."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support.common import copy_ignore

REPO = Path(__file__).resolve().parents[1]
PACKAGE = "dense_perception"
BUILD_TIMEOUT = 120  # seconds; a build takes a few seconds


@pytest.fixture(scope="module")
def install_prefix(tmp_path_factory) -> Path:
    """Build the package with colcon into a temporary workspace; its install prefix."""
    if importlib.util.find_spec("colcon_core") is None:
        pytest.skip("colcon is not installed (pip install colcon-common-extensions)")
    ws = tmp_path_factory.mktemp("colcon_ws")
    shutil.copytree(REPO, ws / "src" / PACKAGE, ignore=copy_ignore())
    command = [sys.executable, "-m", "colcon", "--log-base", str(ws / "log"), "build",
               "--base-paths", str(ws / "src"), "--build-base", str(ws / "build"),
               "--install-base", str(ws / "install"), "--event-handlers", "console_direct+"]
    env = dict(os.environ, COLCON_HOME=str(ws / "colcon_home"))  # no user colcon defaults
    start = time.monotonic()
    result = subprocess.run(command, cwd=ws, env=env, capture_output=True, text=True,
                            timeout=BUILD_TIMEOUT, stdin=subprocess.DEVNULL)
    elapsed = time.monotonic() - start
    assert result.returncode == 0, \
        f"colcon build failed ({elapsed:.1f} s):\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    print(f"colcon build took {elapsed:.1f} s")
    return ws / "install" / PACKAGE


def _site_packages(prefix: Path) -> Path:
    found = list(prefix.glob("lib/python3*/site-packages"))
    assert len(found) == 1, f"no single site-packages under {prefix}: {found}"
    return found[0]


@pytest.mark.slow
def test_installed_layout(install_prefix):
    share = install_prefix / "share" / PACKAGE
    for name in ("dense_perception_node", "dense-perception"):
        command = install_prefix / "lib" / PACKAGE / name
        assert command.is_file() and os.access(command, os.X_OK), \
            f"{command} missing or not executable"
    expected = [
        share / "package.xml",
        share / "launch" / "depth.launch.py",
        share / "config" / "depth.yaml",
        share / "config" / "tipsv2.yaml",
        share / "config" / "dense_perception.rviz",
        share / "config" / "dense_perception.foxglove.json",
        share / "models" / "test_da3_small.tflite",
        share / "models" / "test_tipsv2_b14_dpt.tflite",
        install_prefix / "share" / "ament_index" / "resource_index" / "packages" / PACKAGE,
    ]
    missing = [str(p.relative_to(install_prefix)) for p in expected if not p.is_file()]
    assert not missing, f"not installed: {missing}"
    for name in ("package.xml", "launch/depth.launch.py", "config/depth.yaml",
                 "models/test_da3_small.tflite"):
        assert (share / name).read_bytes() == (REPO / name).read_bytes(), name


@pytest.mark.slow
def test_installed_python_package_has_its_data(install_prefix):
    package = _site_packages(install_prefix) / PACKAGE
    for layer in ("core", "ros", "offline", "export"):
        assert (package / layer / "__init__.py").is_file(), f"{layer}/ not installed"
    assert (package / "ros" / "node.py").is_file()
    assert not (_site_packages(install_prefix) / "tools").exists(), "tools/ must not be installed"
    for name in ("models.json", "ade20k_classes.txt", "ade20k_palette.csv"):
        assert (package / "core" / "model" / "data" / name).is_file(), \
            f"core/model/data/{name} not installed"


@pytest.mark.slow
def test_installed_package_finds_its_data_and_models(install_prefix, tmp_path):
    """Imported from the install (not the source tree): class names load and relative
    model paths resolve to share/dense_perception/models through the ament index."""
    pytest.importorskip("ament_index_python")
    env = dict(os.environ, PYTHONPATH=str(_site_packages(install_prefix)),
               AMENT_PREFIX_PATH=str(install_prefix))
    code = ("import dense_perception, dense_perception.core.postprocess as p;"
            "from dense_perception.core.backends.runner import resolve_model_path;"
            "print(dense_perception.__file__);"
            "print(len(p.ade20k_class_names()));"
            "print(resolve_model_path('test_da3_small.tflite'))")
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    module_file, classes, model = result.stdout.split()
    assert Path(module_file).is_relative_to(install_prefix), module_file
    assert classes == "150"
    assert Path(model) == install_prefix / "share" / PACKAGE / "models" / "test_da3_small.tflite"


@pytest.mark.slow
def test_ros2_run_finds_the_offline_command(install_prefix, tmp_path):
    """`ros2 run dense_perception dense-perception ...`: ros2run runs the executable of that name
    under <prefix>/lib/<package>/ (ros2pkg.api.get_executable_paths); run it the same way, with
    the PYTHONPATH that install/setup.bash sets."""
    lib = install_prefix / "lib" / PACKAGE
    executables = {p.name for p in lib.iterdir() if p.is_file() and os.access(p, os.X_OK)}
    assert {"dense-perception", "dense_perception_node"} <= executables
    env = dict(os.environ, PYTHONPATH=str(_site_packages(install_prefix)),
               AMENT_PREFIX_PATH=str(install_prefix))
    model = install_prefix / "share" / PACKAGE / "models" / "test_da3_small.tflite"
    result = subprocess.run([str(lib / "dense-perception"), "info", str(model)], cwd=tmp_path,
                            env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "Depth Anything 3" in result.stdout
