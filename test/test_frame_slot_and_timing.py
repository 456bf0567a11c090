# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The newest-wins slot of one camera and the timing helpers."""

import threading

import pytest

from dense_perception.core.scheduling.newest_slots import NewestSlots
from dense_perception.core.timing import RateMeter, StageTimer


def test_newest_wins_and_drops_are_counted():
    slot = NewestSlots()
    assert slot.put(1) is False
    assert slot.put(2) is True and slot.put(3) is True
    assert slot.dropped == 2
    assert slot.take(0.01) == 3
    assert slot.take(0.01) is None


def test_take_wakes_on_put():
    slot = NewestSlots()
    got = []
    worker = threading.Thread(target=lambda: got.append(slot.take(5.0)))
    worker.start()
    slot.put("frame")
    worker.join(2.0)
    assert got == ["frame"]


def test_stage_timer_stats():
    timer = StageTimer(window=4)
    for ms in (1.0, 2.0, 3.0, 4.0, 100.0):
        timer.add("inference", ms)
    stats = timer.stats()["inference"]
    assert stats.count == 4 and stats.last_ms == 100.0  # window keeps the last four
    assert stats.mean_ms == pytest.approx((2 + 3 + 4 + 100) / 4)
    assert 4.0 < stats.p95_ms <= 100.0
    with timer.stage("publish"):
        pass
    assert timer.stats()["publish"].count == 1
    timer.clear()
    assert timer.stats() == {}


def test_rate_meter():
    meter = RateMeter(window_s=10.0)
    for i in range(11):
        meter.tick(now=100.0 + i * 0.5)  # 2 Hz
    assert meter.rate(now=105.0) == pytest.approx(2.0)
    assert meter.rate(now=105.3) == pytest.approx(2.0)  # between two events: not lower
    assert meter.rate(now=107.5) < 2.0  # events are late: the rate decays
    assert meter.total == 11
    assert meter.rate(now=200.0) == 0.0  # nothing in the window any more
