# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""``make eval-real``'s tool on one real frame into a temporary file: the recipe docs/accuracy.md
comes from runs, and its figures agree with the measured depth."""

import re
import subprocess
import sys

import pytest

from support.common import REPO
from tools.eval.real_scenes import REAL_SCENES, available

pytestmark = [pytest.mark.numerics,
              pytest.mark.skipif(not available(), reason=f"{REAL_SCENES} is absent (real RGB-D "
                                 "frames and PyD-Net++; see docs/accuracy.md)")]


def test_eval_real_writes_the_accuracy_table(tmp_path):
    out = tmp_path / "accuracy.md"
    done = subprocess.run([sys.executable, "-m", "tools.eval.real", "--frames", "tum",
                           "--out", str(out)], cwd=REPO, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    assert "PyD-Net++" in text and "real trained network" in text
    assert "Sturm et al." in text and "make eval-real MODEL=" in text
    # | frame | source | scale | AbsRel | delta1 | scale error | ...
    rows = {m[0]: [c.strip() for c in m[1:]] for m in re.findall(
        r"^\| tum \| (\w+) \| ([^|]+) \| ([^|]+) \| ([^|]+) \| ([^|]+) \|", text, re.M)}
    assert set(rows) == {"ground_plane", "reference_depth", "oracle"}
    scale, absrel, delta1, error = rows["oracle"]
    assert error in ("+0.0%", "-0.0%")             # the best single scale is the median ratio
    assert 0.0 < float(absrel) < 1.0 and 0.0 < float(delta1) <= 1.0
    ref = rows["reference_depth"]
    assert abs(float(ref[3].rstrip("%"))) < 6.0     # test_real_model's bound for the reference
    gp = rows["ground_plane"]
    assert gp[0] == "withheld" or abs(float(gp[0]) / float(scale) - 1) <= 0.25
    assert re.search(r"^\| tum \| 1\.\d{3} \| \d+\.\d \| ([+-]\d\.\d%|withheld)", text, re.M)
