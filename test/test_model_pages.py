# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""release_file_pages: the model file's mapped pages leave the process's RSS once XNNPACK has
packed the weights, and the model still computes its known function afterwards."""

import os
import sys

import numpy as np
import pytest

from support.common import DA3_TEST_MODEL
from dense_perception.core.backends.runner import litert_version
from dense_perception.core.backends.runner_base import CompiledModelRunner, InterpreterRunner

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc: Linux")


def resident_kb_of(path: str) -> list[int]:
    """Rss (kB) of each mapping of ``path`` in this process, from /proc/self/smaps."""
    real, found, current = os.path.realpath(path), [], False
    with open("/proc/self/smaps") as smaps:
        for line in smaps:
            fields = line.split()
            if "-" in fields[0] and len(fields) >= 5 and ":" not in fields[0]:
                current = len(fields) == 6 and fields[5] == real
            elif current and fields[0] == "Rss:":
                found.append(int(fields[1]))
    return found


@pytest.mark.parametrize("api", ["Interpreter", "CompiledModel"])
def test_cpu_runners_give_back_the_model_file_pages(api):
    if api == "CompiledModel" and litert_version().startswith("1."):
        pytest.skip("CompiledModel options need ai-edge-litert 2.x")
    runner = (InterpreterRunner(DA3_TEST_MODEL, 1) if api == "Interpreter"
              else CompiledModelRunner(DA3_TEST_MODEL, "cpu", num_threads=1))
    size = os.path.getsize(DA3_TEST_MODEL)
    assert runner.released_bytes >= size
    mapped = resident_kb_of(DA3_TEST_MODEL)
    assert mapped and all(kb == 0 for kb in mapped), mapped  # mapped, nothing resident
    # Still the test model's function (bag_maker's closed form): depth = 3 + 0.5 x0 +
    # 0.25 x1 + 0.125 x2 of the normalised input planes.
    x = np.random.default_rng(0).normal(size=runner.input_shapes[0]).astype(np.float32)
    runner.input_buffer()[...] = x  # (no view of the interpreter's memory is kept)
    planes = [x[0, c] if x.shape[1] == 3 else x[0, ..., c] for c in range(3)]
    expected = 3.0 + 0.5 * planes[0] + 0.25 * planes[1] + 0.125 * planes[2]
    depth = np.squeeze(runner.run()[0])
    np.testing.assert_allclose(depth, expected, rtol=1e-5, atol=1e-5)
