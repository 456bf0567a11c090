# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The offline command's arguments walk down the package and do not keep coming back:
followed with tools/checks/argument_walk.py (every call of the package's functions that is
handed the argparse namespace, the Settings, the ProcessOptions, the RunPlan or the
ModelSession), the
one-input path and the many-input path through the code each visit a module again at most
three times, each further input of a many-input run adds only the per-input loop, and the
argparse namespace never leaves the command line's glue."""

import cv2
import numpy as np
import pytest

from support.common import DA3_TEST_MODEL
from tools.checks.argument_walk import Call, Walk, walk

pytestmark = pytest.mark.repository

MAX_RE_ENTRIES = 3
COMMAND_LINE = {"dense_perception.offline." + m for m in ("cli", "options.settings_args",
                                                          "options.process_options")}


def _images(folder, count):
    rng = np.random.default_rng(0)
    paths = []
    for i in range(count):
        paths.append(folder / f"image{i}.png")
        cv2.imwrite(str(paths[-1]), rng.integers(0, 255, (48, 64, 3), dtype=np.uint8))
    return paths


def _check(result: Walk) -> None:
    assert result.exit_code == 0
    # the walk starts at the command line and reaches the model (the profile saw the run)
    assert result.visits[0] == "dense_perception.offline.cli"
    assert {"dense_perception.offline.run.session", "dense_perception.core.pipeline"} <= \
        set(result.visits)
    assert result.re_entries <= MAX_RE_ENTRIES, " > ".join(result.visits)
    below = {c.module for c in result.calls if "Namespace" in c.carriers} - COMMAND_LINE
    assert below == set(), f"the argparse namespace reached {sorted(below)}"


@pytest.mark.timeout(120)
def test_one_image(tmp_path):
    image, = _images(tmp_path, 1)
    _check(walk(["process", str(image), "--model", DA3_TEST_MODEL, "--backend", "cpu",
                 "--out", str(tmp_path / "out")]))


@pytest.mark.timeout(120)
def test_many_inputs_in_this_process(tmp_path):
    """The many-input path (an input list with one input: the code's path, walked once), then
    three inputs: what the further two add is the per-input loop (fleet/jobs.py, then the input)
    and nothing else."""
    images = _images(tmp_path, 3)
    (tmp_path / "list.txt").write_text(f"{images[0]}\n")
    one = walk(["process", "--inputs-from", str(tmp_path / "list.txt"), "--model",
                DA3_TEST_MODEL, "--backend", "cpu", "--out", str(tmp_path / "one")])
    _check(one)
    assert any(m.startswith("dense_perception.offline.fleet.") for m in one.visits)
    three = walk(["process", *map(str, images), "--model", DA3_TEST_MODEL, "--backend", "cpu",
                  "--out", str(tmp_path / "three")])
    assert three.exit_code == 0 and three.visits[:len(one.visits)] == one.visits
    loop = ["dense_perception.offline.fleet.jobs", "dense_perception.offline.inputs.sources"]
    assert three.visits[len(one.visits):] == loop * 2, " > ".join(three.visits)


def test_visits_rooms_and_re_entries_are_counted_as_documented():
    calls = [Call(m, "f", ("Settings",)) for m in ("a", "a", "b", "c", "b", "b", "a")]
    result = Walk(calls)
    assert result.visits == ["a", "b", "c", "b", "a"]
    assert (result.rooms, result.re_entries) == (3, 2)
