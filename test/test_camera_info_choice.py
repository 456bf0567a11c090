# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The one rule for which CameraInfo describes a frame (node and offline command alike)."""

import threading
import time
from types import SimpleNamespace

import pytest

from dense_perception.core.geometry.camera_info_choice import (AFTER_WITHIN_SLOP, LATEST_BEFORE, MATCHED,
                                                      NONE_BEFORE, NONE_RECEIVED,
                                                      CameraInfoHistory, stamp_ns)

pytestmark = [pytest.mark.numerics, pytest.mark.timeout(10)]


def test_stamp_is_read_as_nanoseconds():
    assert stamp_ns(SimpleNamespace(sec=3, nanosec=7)) == 3_000_000_007


def test_same_stamp_else_latest_before_else_none():
    history = CameraInfoHistory()
    assert history.choose(5) == (None, NONE_RECEIVED)
    # added out of order, as a bag read up front or a late CameraInfo can be
    for stamp in (30, 10, 20):
        history.add(stamp, f"info@{stamp}")
    assert history.choose(20) == ("info@20", MATCHED)
    assert history.choose(25) == ("info@20", LATEST_BEFORE)
    assert history.choose(10_000) == ("info@30", LATEST_BEFORE)
    # before the first CameraInfo: none (never one stamped after the image)
    assert history.choose(9) == (None, NONE_BEFORE)


def test_a_repeated_stamp_replaces_and_the_oldest_go_first():
    history = CameraInfoHistory(limit=2)
    history.add(1, "a")
    history.add(1, "a2")
    assert history.choose(1) == ("a2", MATCHED) and len(history) == 1
    history.add(2, "b")
    history.add(3, "c")
    assert len(history) == 2
    assert history.choose(1) == (None, NONE_BEFORE)
    assert history.choose(2) == ("b", MATCHED)


def test_one_stamped_just_after_is_used_only_when_none_is_at_or_before():
    """Drivers that stamp CameraInfo on another clock, or a moment after the image."""
    history = CameraInfoHistory()
    history.add(120, "info@120")
    history.add(200, "info@200")
    assert history.choose(100, slop=20) == ("info@120", AFTER_WITHIN_SLOP)
    assert history.choose(100, slop=19) == (None, NONE_BEFORE)  # 20 ns after: beyond the slop
    assert history.choose(100) == (None, NONE_BEFORE)  # no slop: as before
    # One at or before wins over one just after (a later calibration never replaces it).
    assert history.choose(190, slop=50) == ("info@120", LATEST_BEFORE)


def test_a_frame_waits_for_the_first_camera_info_once():
    history = CameraInfoHistory()
    adder = threading.Timer(0.05, history.add, (110, "info@110"))
    adder.start()
    start = time.monotonic()
    assert history.choose(100, slop=20, wait_s=5.0) == ("info@110", AFTER_WITHIN_SLOP)
    assert time.monotonic() - start < 4.0  # woken by the add, not by the time limit
    adder.join()

    silent = CameraInfoHistory()
    start = time.monotonic()
    assert silent.choose(100, slop=20, wait_s=0.1) == (None, NONE_RECEIVED)
    assert time.monotonic() - start >= 0.1
    # That wait was in vain: later frames are not held up at all.
    start = time.monotonic()
    assert silent.choose(200, slop=20, wait_s=5.0) == (None, NONE_RECEIVED)
    assert time.monotonic() - start < 1.0
