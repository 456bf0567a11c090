# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The torch environment of the exporter (``.venv-bench``: torch CPU, litert-torch,
depth-anything-3): create it from the requirements files and run the exporter there when this
interpreter lacks them. No torch needed."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path
from typing import Sequence

from .common import PROG, REPO, ExportError

VENV = REPO / ".venv-bench"
REQUIREMENTS = REPO / "requirements/torch.txt"
REQUIREMENTS_NODEPS = REPO / "requirements/torch-nodeps.txt"
ENV_MARKER = VENV / ".export-da3-ready"
TORCH_MODULES = ("torch", "litert_torch", "depth_anything_3", "ai_edge_litert", "safetensors")


def torch_env_problem() -> str | None:
    """Why this interpreter cannot export (a missing module), or None."""
    import importlib.util

    missing = [m for m in TORCH_MODULES if importlib.util.find_spec(m) is None]
    return f"{', '.join(missing)} not importable in {sys.executable}" if missing else None


def _requirements_digest() -> str:
    h = hashlib.sha256()
    for path in (REQUIREMENTS, REQUIREMENTS_NODEPS):
        h.update(path.read_bytes())
    return h.hexdigest()


def _run(cmd: Sequence[str]) -> None:
    print("+ " + " ".join(str(c) for c in cmd), flush=True)
    if subprocess.call([str(c) for c in cmd]) != 0:
        raise ExportError(f"command failed: {' '.join(str(c) for c in cmd)}")


def ensure_torch_env() -> Path:
    """Create/update ``.venv-bench`` from the requirements files; returns its python.

    ``depth-anything-3`` is installed with ``--no-deps``: its declared dependencies pull
    xformers, open3d and numpy<2, none of which the model code imports.
    """
    if not (REQUIREMENTS.is_file() and REQUIREMENTS_NODEPS.is_file()):
        raise ExportError(f"{REQUIREMENTS.name} not found next to the package ({REPO}); run the "
                          "exporter from a clone of the repository")
    python = VENV / "bin" / "python"
    digest = _requirements_digest()
    if python.exists() and ENV_MARKER.exists() and ENV_MARKER.read_text().strip() == digest:
        return python
    print(f"{PROG}: setting up the torch environment in {VENV} (torch, litert-torch, "
          "depth-anything-3; a few minutes, once)", flush=True)
    if not python.exists():
        _run([sys.executable, "-m", "venv", VENV])
    _run([python, "-m", "pip", "install", "-q", "-r", REQUIREMENTS])
    _run([python, "-m", "pip", "install", "-q", "--no-deps", "-r", REQUIREMENTS_NODEPS])
    ENV_MARKER.write_text(digest + "\n")
    return python


def run_in_torch_env(argv: Sequence[str]) -> int:
    """Run ``python -m dense_perception.export ARGV`` under ``.venv-bench``."""
    python = ensure_torch_env()
    # (a venv's python is a symlink to the base interpreter: compare prefixes, not executables)
    if Path(sys.prefix).resolve() == VENV.resolve() or os.environ.get("_DA3_EXPORT_REEXEC"):
        raise ExportError(f"{torch_env_problem()} even after installing {REQUIREMENTS.name}")
    env = dict(os.environ, _DA3_EXPORT_REEXEC="1")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    cmd = [str(python), "-m", "dense_perception.export", *argv]
    print(f"{PROG}: torch is not in this interpreter; running in {VENV.name}: "
          + " ".join(cmd[1:]), flush=True)
    return subprocess.call(cmd, env=env)
