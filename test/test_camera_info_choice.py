"""The one rule for which CameraInfo describes a frame (node and offline command alike)."""

from types import SimpleNamespace

import pytest

from dense_perception.core.camera_info_choice import (LATEST_BEFORE, MATCHED, NONE_BEFORE,
                                                      NONE_RECEIVED, CameraInfoHistory, stamp_ns)

pytestmark = pytest.mark.timeout(10)


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
