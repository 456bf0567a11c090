# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""A run's scales tallied: withheld frames counted by the kind of their reason (its words, the
numbers left to each frame's own entry), every frame's record, and the closing line."""

import pytest

from dense_perception.core.motion.output_error import OutputError
from dense_perception.core.scale.metric_scale import (ScaleConfig, ScaleReport,
                                                      error_bound_problem)
from dense_perception.core.scale.scale_tally import ScaleTally, reason_kind

pytestmark = [pytest.mark.numerics, pytest.mark.timeout(60)]


def bounded(sigma: float, why: str) -> str:
    """A withheld frame's reason as the scaler writes it."""
    return f"{error_bound_problem(sigma, ScaleConfig('motion'))}: {why}"


def test_reasons_that_differ_only_in_their_numbers_are_one_kind():
    error = OutputError()
    error.update(False, None, 0.05)
    for gap in (0.1, -0.12, 0.09, -0.1):
        error.update(True, gap, 0.05)
    first, second = bounded(0.071, error.why), bounded(0.2, error.why)
    assert first != second                       # the numbers differ ...
    assert reason_kind(first) == reason_kind(second)  # ... the kind does not
    kind = reason_kind(first)
    assert not any(ch.isdigit() for ch in kind)
    assert kind.startswith("the scale's error bound exceeds max_scale_error: ")
    assert "the images contradict the poses" not in kind  # the first clause of the cause
    assert reason_kind("one pair gave 0.1766: waiting for a second to confirm it") == \
        reason_kind("one pair gave 0.2: waiting for a second to confirm it") == "one pair gave N"
    assert reason_kind("") == ""


def test_the_tally_keeps_every_frame_and_counts_the_withheld_by_kind():
    tally = ScaleTally()
    reports = [ScaleReport("motion", None, False, reason="one pair gave 0.17: waiting"),
               ScaleReport("motion", None, False, reason="one pair gave 0.19: waiting"),
               ScaleReport("motion", 0.5, True, estimate=0.51, sigma=0.02),
               ScaleReport("motion", 0.5, True, estimate=0.49, sigma=0.03),
               ScaleReport("motion", None, False, sigma=0.2, bounded_out=True,
                           reason=bounded(0.2, "this frame's motion estimate is unsure"))]
    for i, report in enumerate(reports):
        tally.add(report, f"frame-{i}", 10.0 + i / 30)
    summary = tally.summary()
    assert summary["frames_metric"] == 2 and summary["frames_withheld"] == 3
    assert summary["withheld_by_reason"] == {
        "one pair gave N": 2,
        "the scale's error bound exceeds max_scale_error: this frame's motion estimate is "
        "unsure": 1}
    frames = summary["frames"]
    assert [f["input"] for f in frames] == [f"frame-{i}" for i in range(5)]
    assert frames[1]["stamp"] == pytest.approx(10.0 + 1 / 30)
    # sigma 0.02 and 0.03 are 4.0 % and 6.0 % at 2 sigma, as /diagnostics says them
    assert [f["error_2sigma_pct"] for f in frames[2:4]] == [4.0, 6.0]
    assert summary["error_2sigma_pct_median"] == 5.0
    assert [f["in_metres"] for f in frames] == [False, False, True, True, False]
    line = tally.closing_line()
    assert line.startswith("2 of 5 frames in metres from motion, claiming a median 2 sigma "
                           "of 5.0 %; withheld: 2 x one pair gave N; 1 x ")


def test_a_run_without_metres_says_so_and_a_set_scale_says_nothing():
    tally = ScaleTally()
    tally.add(ScaleReport("ground_plane", None, False, reason="no floor in view"), "a", 0.0)
    assert tally.closing_line() == ("no frame came out in metres (depth_scale_source "
                                    "ground_plane); withheld: 1 x no floor in view")
    fixed = ScaleTally()
    fixed.add(ScaleReport("fixed", 1.0, True), "a", 0.0)
    assert fixed.closing_line() == "" and "frames" not in fixed.summary()
