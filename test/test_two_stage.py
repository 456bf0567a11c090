# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The two-stage overlap shared by the node (newest wins) and the offline command (ordered)."""

import threading
import time

import pytest

from dense_perception.core.scheduling.two_stage import LiveTwoStage, OrderedTwoStage

pytestmark = pytest.mark.timeout(30)


def wait_for(event: threading.Event, what: str, timeout: float = 5.0) -> None:
    assert event.wait(timeout), f"timed out waiting for {what}"


def test_live_newest_wins_and_counts_drops():
    gate, started, done = threading.Event(), threading.Event(), threading.Event()
    firsts, seconds = [], []

    def first(item):
        firsts.append(item)
        started.set()
        gate.wait(5)  # hold stage one on the first item
        return item * 10

    def second(value):
        seconds.append(value)
        if value == 40:
            done.set()
    stage = LiveTwoStage(first, second, on_error=lambda e: None)
    try:
        stage.put(1)
        wait_for(started, "stage one to start")
        for item in (2, 3, 4):  # arrive while stage one is busy: only the newest survives
            stage.put(item)
        gate.set()
        wait_for(done, "the newest item through both stages")
        assert firsts == [1, 4] and seconds[-1] == 40
        # 2 and 3 dropped before stage one; 10 too if 40 overtook it before stage two took it.
        assert seconds in ([10, 40], [40]) and stage.dropped == 4 - len(seconds)
    finally:
        stage.stop()


def test_live_errors_are_reported_and_threads_live_on():
    errors, done = [], threading.Event()

    def first(item):
        if item == "bad":
            raise ValueError("bad frame")
        return item

    stage = LiveTwoStage(first, lambda v: done.set(), on_error=errors.append)
    try:
        stage.put("bad")
        deadline = time.monotonic() + 5
        while not errors:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        stage.put("good")
        wait_for(done, "a good item after a failure")
        assert [str(e) for e in errors] == ["bad frame"] and stage.alive()
    finally:
        stage.stop()
    assert not stage.alive()


def test_ordered_keeps_order_with_passthroughs_and_bounds_work_in_flight():
    running, most = [0], [0]
    lock = threading.Lock()

    def first(item):
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.01 * (item % 3))  # uneven work
        with lock:
            running[0] -= 1
        if item == 5:
            raise ValueError("refused")
        return item * 2

    stage = OrderedTwoStage(first, in_flight=2, catch=(ValueError,))
    out = []
    try:
        for item in range(8):
            out += stage.add(item)
            if item == 3:
                out += stage.add_passthrough("copy")
        out += stage.drain()
    finally:
        stage.close()
    items = [item for item, _ in out]
    assert items == [0, 1, 2, 3, "copy", 4, 5, 6, 7]
    results = dict((item, result) for item, result in out if item != 5)
    assert results == {0: 0, 1: 2, 2: 4, 3: 6, "copy": None, 4: 8, 6: 12, 7: 14}
    assert isinstance(dict(out)[5], ValueError)
    assert most[0] == 1  # one worker: stage one never runs twice at once


def test_ordered_with_one_in_flight_runs_the_stages_one_after_another():
    """in_flight=1 (a Ray worker granted one CPU): stage one of the next item starts only
    after the caller has taken the previous item back, so the two stages never overlap."""
    log = []
    stage = OrderedTwoStage(lambda item: log.append(("first", item)) or item, in_flight=1)
    try:
        for item in range(4):
            for done, _ in stage.add(item):
                log.append(("second", done))
        for done, _ in stage.drain():
            log.append(("second", done))
    finally:
        stage.close()
    assert log == [(step, i) for i in range(4) for step in ("first", "second")]


def test_ordered_hands_back_each_item_once_the_next_has_started():
    release = threading.Event()
    stage = OrderedTwoStage(lambda item: release.wait(5) and item)
    try:
        assert list(stage.add("a")) == []       # "a" in flight: nothing due yet
        release.set()
        assert list(stage.add("b")) == [("a", "a")]  # "b" started: "a" is due
        assert list(stage.drain()) == [("b", "b")]
    finally:
        stage.close()


def test_ordered_raises_uncaught_errors():
    stage = OrderedTwoStage(lambda item: 1 / 0)
    try:
        with pytest.raises(ZeroDivisionError):
            list(stage.add(1))
            list(stage.drain())
    finally:
        stage.close()


@pytest.mark.timeout(30)
def test_ordered_close_waits_for_the_stage_one_in_progress():
    """After close() nothing of this stage runs any more (the next input shares the runner)."""
    started, release, finished = threading.Event(), threading.Event(), []

    def first(item):
        started.set()
        release.wait(10)
        finished.append(item)
        return item
    stage = OrderedTwoStage(first, in_flight=3)
    assert list(stage.add("a")) == []
    assert list(stage.add("b")) == []  # "b" queued behind "a", which is in progress
    assert started.wait(10)
    threading.Timer(0.2, release.set).start()
    stage.close()
    assert finished == ["a"]  # "a" was waited for; "b", not started, was cancelled
