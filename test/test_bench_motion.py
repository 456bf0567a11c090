# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""tools/bench/motion.py (make bench's camera-motion rows, make bench-arm64's ratios) runs end to
end: every stage is timed, the parts are no larger than the stage they belong to, and
``--compare`` prints each stage's ratio of two runs as the division written out here."""

import json
import re

import pytest

from tools.bench import motion as bench_motion

pytestmark = [pytest.mark.numerics, pytest.mark.timeout(120)]


def test_stages_written_and_parts_within_their_stage(tmp_path, capsys):
    out = tmp_path / "motion.json"
    assert bench_motion.main(["--rounds", "3", "--json", str(out)]) == 0
    stages = json.loads(out.read_text())["stages_ms"]
    assert set(stages) == {"temporal alignment", "TAE of the last two", "motion scale",
                           "of which the two DIS flows", "of which the pose clock's offset",
                           "scale map", "scale filter", "scale map + filter"}
    assert all(ms >= 0 for ms in stages.values())
    assert stages["of which the two DIS flows"] > 0  # every round past the first has a pair
    assert stages["of which the two DIS flows"] <= stages["motion scale"]
    assert stages["of which the pose clock's offset"] <= stages["motion scale"]
    assert "| temporal alignment |" in capsys.readouterr().out


def test_compare_prints_each_stage_ratio(tmp_path, capsys):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps({"rounds": 4, "stages_ms": {
        "temporal alignment": 990.0, "motion scale": 300.0, "scale filter": 0.02}}))
    b.write_text(json.dumps({"rounds": 4, "stages_ms": {
        "temporal alignment": 8.0, "motion scale": 25.0, "scale filter": 0.01}}))
    assert bench_motion.main(["--compare", str(a), str(b)]) == 0
    rows = {m.group(1): m.group(2) for m in
            re.finditer(r"^\| ([^|]+) \| [^|]+ \| [^|]+ \| ([^|]+) \|$",
                        capsys.readouterr().out, re.M)}
    assert rows["temporal alignment"].strip() == f"{990.0 / 8.0:.0f}"
    assert rows["motion scale"].strip() == f"{300.0 / 25.0:.0f}"
    assert rows["scale filter"].strip() == "-"  # a few microseconds: no ratio
