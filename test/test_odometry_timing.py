# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""When odometry comes, against the image stamps (core/motion/odometry.py): a stamp past the
newest sample never takes that sample's pose, a lookup waits a bounded time for the sample
after its stamp and interpolates it, a sample that comes after the frame stopped waiting is
counted late, and any stamp that goes back past the newest starts a new run. The truth is a
robot driving along x at 1 m/s: its position at t is written out in each test."""

import threading
import time

import numpy as np
import pytest

from dense_perception.core.motion.odometry import NO_POSE, OdometryBuffer

pytestmark = [pytest.mark.numerics, pytest.mark.timeout(60)]

S = 1_000_000_000  # ns per s
STILL = [0.0, 0.0, 0.0, 1.0]  # no turn


def ns(t):
    return int(round(t * S))


def driving(times, start=0.0, **limits):
    """A buffer with the robot at x = t - ``start`` (1 m/s) at each of ``times``."""
    buffer = OdometryBuffer(**limits)
    for t in times:
        assert buffer.add(ns(t), [t - start, 0.0, 0.0], STILL) is None
    return buffer


def wait_for(predicate, timeout=10.0):
    """Poll ``predicate`` (another thread's state) until it holds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.002)


def test_a_clock_jump_back_of_less_than_a_second_starts_a_new_run():
    # Run 1 drives at 1 m/s up to t = 10 s; run 2 starts again at x = 0 at t = 9.40 s,
    # sampled from 9.41 s (a simulator reset, a bag played again from just before its end).
    buffer = driving([k / 10 for k in range(101)])
    for k in range(6):
        t = 9.41 + k / 10
        assert buffer.add(ns(t), [t - 9.40, 0.0, 0.0], STILL) is None
    assert buffer.restarts == 1
    assert "went back from 10.000 s to 9.410 s" in buffer.restart_note
    pose = buffer.pose_at(ns(9.715), np.eye(4))
    assert pose.reason == ""
    assert pose.pose[0, 3] == pytest.approx(9.715 - 9.40, abs=1e-9)  # 0.315 m into run 2
    # run 1's poses are gone: a stamp before run 2's first sample is not answered from them
    assert buffer.pose_at(ns(9.2), np.eye(4)).kind == "out of range"


def test_a_repeated_stamp_is_not_a_restart():
    buffer = driving([0.0, 0.1, 0.2])
    buffer.add(ns(0.2), [0.2, 0.0, 0.0], STILL)
    assert buffer.restarts == 0 and len(buffer) == 3


def test_a_stamp_just_past_the_newest_sample_has_no_pose_and_says_why():
    buffer = driving([k / 10 for k in range(11)])  # 0.0-1.0 s
    for t in (1.001, 1.03, 1.049):  # within the old 50 ms tolerance: it took x = 1.0 silently
        late = buffer.pose_at(ns(t), np.eye(4))
        assert late.pose is None and late.kind == "out of range" and late.kind in NO_POSE
        assert f"{t - 1.0:.3f} s after the newest odometry held (0.000-1.000 s)" in late.reason
        assert "never the newest's" in late.reason


def test_a_lookup_waits_for_the_sample_after_its_stamp_and_interpolates_it():
    buffer = driving([k / 10 for k in range(11)], wait_s=5.0)  # 0.0-1.0 s
    got = []
    lookup = threading.Thread(target=lambda: got.append(
        buffer.pose_at(ns(1.07), np.eye(4), deadline=time.monotonic() + 5.0)))
    lookup.start()
    wait_for(lambda: buffer.waited == 1)  # it is waiting
    assert not got
    buffer.add(ns(1.1), [1.1, 0.0, 0.0], STILL)  # the sample after its stamp comes
    lookup.join(timeout=4.0)
    assert not lookup.is_alive(), "the lookup did not end when its sample came"
    assert got[0].reason == "" and got[0].pose[0, 3] == pytest.approx(1.07, abs=1e-9)
    assert buffer.late == 0


def test_a_sample_that_comes_after_the_frame_stopped_waiting_is_counted_late():
    buffer = driving([k / 10 for k in range(11)], wait_s=0.3)
    gave_up = buffer.pose_at(ns(1.05), np.eye(4), deadline=time.monotonic() - 1.0)
    assert gave_up.pose is None and gave_up.kind == "late odometry"
    assert "none came within odometry_wait (0.3 s) of the frame" in gave_up.reason
    buffer.add(ns(1.02), [1.02, 0.0, 0.0], STILL)  # still before the frame: not its sample
    assert buffer.late == 0
    buffer.add(ns(1.1), [1.1, 0.0, 0.0], STILL)  # the one it needed, too late
    buffer.add(ns(1.2), [1.2, 0.0, 0.0], STILL)
    assert buffer.late == 1
    # once there, a later frame at that stamp is interpolated (0.02 -> 0.1 s apart)
    assert buffer.pose_at(ns(1.05), np.eye(4)).pose[0, 3] == pytest.approx(1.05, abs=1e-9)


def test_odometry_that_stopped_is_not_waited_for():
    # The newest sample is 1 s before the stamp: more than odometry_wait + odometry_max_gap
    # (0.3 + 0.5 s), so waiting would cost every frame the wait for nothing.
    buffer = driving([k / 10 for k in range(11)], wait_s=0.3, max_gap_s=0.5)
    found = buffer.pose_at(ns(2.0), np.eye(4), deadline=time.monotonic() + 30.0)
    assert found.pose is None and buffer.waited == 0
    assert "more than odometry_wait + odometry_max_gap (0.3 + 0.5 s) behind" in found.reason
    # without odometry at all there is nothing to wait for either
    assert OdometryBuffer(wait_s=5.0).pose_at(0, np.eye(4), deadline=time.monotonic() + 30.0
                                              ).kind == "no odometry"


def test_closing_wakes_a_lookup_that_waits():
    buffer = driving([0.0, 0.1], wait_s=30.0)
    got = []
    lookup = threading.Thread(target=lambda: got.append(
        buffer.pose_at(ns(0.15), np.eye(4), deadline=time.monotonic() + 30.0)))
    lookup.start()
    wait_for(lambda: buffer.waited == 1)
    buffer.close()
    lookup.join(timeout=4.0)
    assert not lookup.is_alive() and got[0].kind == "late odometry"
