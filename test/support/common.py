# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""What the tests share that is not a fixture: the repository's paths, the bundled test
models, timeouts, and small helpers (the CLI in-process, the GPU probe). Imported normally:
``from support.common import REPO, TIPS_TEST_MODEL`` (pytest puts test/ on the path).
"""

import importlib.util
import shutil
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MODELS_DIR = REPO / "models"
DA3_TEST_MODEL = str(MODELS_DIR / "test_da3_small.tflite")
# DA3 with its confidence output (depth, confidence), as export-da3 writes it.
DA3_CONFIDENCE_TEST_MODEL = str(MODELS_DIR / "test_da3_small_confidence.tflite")
TIPS_TEST_MODEL = str(MODELS_DIR / "test_tipsv2_b14_dpt.tflite")
# How long a test waits for the DDS graph to show a change. An endpoint of a node process that
# an earlier test killed stays in the graph until its participant's lease runs out (Fast DDS:
# 20 s), so waits for something to leave the graph allow more than that.
GRAPH_TIMEOUT = 30.0


def load_test_model_maker():
    """Import models/make_test_models.py (it lives beside the models, not in the package)."""
    spec = importlib.util.spec_from_file_location("make_test_models",
                                                  MODELS_DIR / "make_test_models.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_GPU_PROBE: list = []


def gpu_probe():
    """(adapter, "") when LiteRT's GPU backend works here (adapter may be a CPU emulation such
    as lavapipe), else (None, why not). Probed once per test session."""
    if not _GPU_PROBE:
        from dense_perception.core.backends.runner import litert_version
        if litert_version().startswith("1."):
            _GPU_PROBE.append((None, "the GPU backend needs ai-edge-litert 2.x"))
        else:
            from dense_perception.core.backends.gpu_runner import GpuProcessRunner, GpuUnavailableError
            try:
                runner = GpuProcessRunner(DA3_TEST_MODEL)
                runner.close()
                _GPU_PROBE.append((runner.adapter, ""))
            except GpuUnavailableError as exc:
                _GPU_PROBE.append((None, str(exc)))
    return _GPU_PROBE[0]


def hardware_gpu() -> bool:
    """A GPU adapter that is not a CPU emulation (backend 'auto' would use it)."""
    adapter, _ = gpu_probe()
    return adapter is not None and not adapter.is_software



class SlowRunner:
    """Wraps a pipeline's runner: each inference takes ``delay`` s more (the model becomes the
    bottleneck on any machine, as DA3 on a Raspberry Pi is)."""

    def __init__(self, inner, delay: float) -> None:
        self.inner, self.delay = inner, delay

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def run(self):
        time.sleep(self.delay)
        return self.inner.run()


def layout_topics(node) -> set:
    """Every string in a Foxglove layout that is a topic (starts with '/'), walked here rather
    than read with the package's own layout code."""
    if isinstance(node, dict):
        return set().union(*(layout_topics(v) for v in node.values())) | \
            {k for k in node if k.startswith("/")}
    if isinstance(node, list):
        return set().union(*(layout_topics(v) for v in node))
    return {node} if isinstance(node, str) and node.startswith("/") else set()


def run_cli(argv, capsys, **kwargs):
    """``dense-perception ARGV`` in this process: (exit status, stdout, stderr)."""
    from dense_perception.offline import cli
    code = cli.main([str(a) for a in argv], **kwargs)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def copy_ignore():
    """Skip what .gitignore lists (venvs, build/, install/, caches, outputs) and .git."""
    patterns = [".git"]
    for line in (REPO / ".gitignore").read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            patterns.append(line.rstrip("/"))
    return shutil.ignore_patterns(*patterns)
