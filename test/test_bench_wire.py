# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""tools/bench/wire.py (make bench's wire rows) runs on the test models and its figures agree
with the messages' own sizes: raw = H x W x channels x bytes, compressed = the payload."""

import json

import pytest

from tools.bench import wire as bench_wire

pytestmark = pytest.mark.timeout(120)


def test_wire_rows(tmp_path, capsys):
    out = tmp_path / "wire.json"
    assert bench_wire.main(["--runs", "1", "--out", str(out)]) == 0
    results = json.loads(out.read_text())
    rows = {(r["model"], r["resolution"], r["input"]): r for r in results["models"]}
    da3 = rows[("da3", "input", "504x280")]
    assert da3["output"] == "504x280"
    depth = next(t for t in da3["topics"] if t["topic"] == "depth_compressed")
    assert depth["raw_bytes"] == 504 * 280 * 4 and depth["ratio"] >= 4
    tips = rows[("tipsv2", "model", "1280x720")]
    assert {t["topic"] for t in tips["topics"]} == {
        "depth_compressed", "depth_colored_compressed", "normals_colored_compressed",
        "labels_compressed", "labels_colored_compressed"}
    labels = next(t for t in tips["topics"] if t["topic"] == "labels_compressed")
    assert labels["raw_bytes"] == 448 * 448
    for row in results["models"]:
        points = [c["points"] for c in row["cloud"]]
        assert points == sorted(points, reverse=True) and points[-1] < points[0]
        assert all(c["bytes"] == 16 * c["points"] for c in row["cloud"])  # x y z rgb float32
    assert "depth_compressed" in capsys.readouterr().out
