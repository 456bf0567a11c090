# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The camera's pose at an image stamp from odometry samples (core/motion/odometry.py), checked
against poses written out by hand: a robot turning about its vertical axis while it drives, a
camera mounted ahead of and above its base, looking forward (REP 103's optical frame)."""

import math

import numpy as np
import pytest

from dense_perception.core.motion.odometry import (OdometryBuffer, camera_mountings,
                                                   mounting_matrix, mountings_problem)
from dense_perception.core.motion.pose import motion

pytestmark = [pytest.mark.numerics, pytest.mark.timeout(60)]

S = 1_000_000_000  # ns per s
# The optical frame (x right, y down, z forward) of a camera 0.1 m ahead of and 0.5 m above
# base_link (x forward, y left, z up), looking forward: optical z = base x, optical x = base -y,
# optical y = base -z; as a quaternion (x y z w) that is (-0.5, 0.5, -0.5, 0.5).
MOUNT = [0.1, 0.0, 0.5, -0.5, 0.5, -0.5, 0.5]


def yaw_quaternion(yaw):
    return [0.0, 0.0, math.sin(yaw / 2), math.cos(yaw / 2)]


def world_point_of(optical_point, base_xy, base_z, yaw):
    """Where a point given in the camera's optical frame is in odom, written out: optical ->
    base by the mounting above, base -> odom by a turn of ``yaw`` about z and the base's
    position."""
    ox, oy, oz = optical_point
    bx, by, bz = 0.1 + oz, -ox, 0.5 - oy
    c, s = math.cos(yaw), math.sin(yaw)
    return np.array([base_xy[0] + c * bx - s * by, base_xy[1] + s * bx + c * by, base_z + bz])


def buffer_with(samples, **limits):
    buffer = OdometryBuffer(**limits)
    for t, xyz, yaw in samples:
        assert buffer.add(int(round(t * S)), xyz, yaw_quaternion(yaw)) is None
    return buffer


def test_the_pose_between_two_samples_is_interpolated_and_mounted():
    buffer = buffer_with([(10.0, [1.0, 2.0, 0.0], 0.2), (10.1, [1.3, 2.1, 0.04], 0.5)])
    pose = buffer.pose_at(int(10.025 * S), mounting_matrix(MOUNT))
    assert pose.reason == "" and pose.pose is not None
    # A quarter of the way: position and heading a quarter of the way from one to the other.
    base, z, yaw = (1.0 + 0.25 * 0.3, 2.0 + 0.25 * 0.1), 0.25 * 0.04, 0.2 + 0.25 * 0.3
    for point in ([0.0, 0.0, 2.0], [1.0, 0.0, 0.0], [0.3, -0.7, 4.0]):
        got = pose.pose @ np.array([*point, 1.0])
        np.testing.assert_allclose(got[:3], world_point_of(point, base, z, yaw), atol=1e-9)


def test_a_stamp_on_a_sample_or_just_before_the_oldest_takes_that_samples_pose():
    buffer = buffer_with([(1.0, [0.0, 0.0, 0.0], 0.0), (1.1, [0.5, 0.0, 0.0], 0.3)],
                         tolerance_s=0.05)
    mount = mounting_matrix(MOUNT)
    for t, base, yaw in ((1.0, (0.0, 0.0), 0.0), (1.1, (0.5, 0.0), 0.3),
                         (0.96, (0.0, 0.0), 0.0)):
        pose = buffer.pose_at(int(round(t * S)), mount)
        np.testing.assert_allclose((pose.pose @ [0, 0, 1.0, 1])[:3],
                                   world_point_of([0, 0, 1.0], base, 0.0, yaw), atol=1e-9)
    # Just past the newest: the robot has moved on since; never the newest's pose.
    past = buffer.pose_at(int(round(1.14 * S)), mount)
    assert past.pose is None and past.kind == "out of range"


def test_the_motion_between_two_image_stamps():
    # Driving straight ahead at 1 m/s: a point 3 m ahead of the camera at t = 0.2 s is 2 m
    # ahead of it at t = 1.2 s.
    buffer = buffer_with([(0.1 * i, [0.1 * i, 0.0, 0.0], 0.0) for i in range(15)])
    mount = mounting_matrix(MOUNT)
    a, b = (buffer.pose_at(int(t * S), mount).pose for t in (0.2, 1.2))
    np.testing.assert_allclose((motion(a, b) @ [0, 0, 3.0, 1])[:3], [0, 0, 2.0], atol=1e-9)


def test_a_stamp_outside_the_odometry_beyond_the_tolerance_gets_no_pose():
    buffer = buffer_with([(5.0, [0, 0, 0], 0.0), (5.1, [0, 0, 0], 0.0)], tolerance_s=0.05)
    mount = mounting_matrix(MOUNT)
    late = buffer.pose_at(int(5.2 * S), mount)
    assert late.pose is None and late.kind == "out of range"
    assert "0.100 s after the newest odometry" in late.reason
    assert "never the newest's" in late.reason
    early = buffer.pose_at(int(4.9 * S), mount)
    assert early.pose is None and "0.100 s before the oldest" in early.reason
    assert "no odometry received yet" in OdometryBuffer().pose_at(0, mount).reason


def test_a_gap_in_the_odometry_is_not_interpolated_across():
    buffer = buffer_with([(0.0, [0, 0, 0], 0.0), (0.1, [0.1, 0, 0], 0.0),
                          (0.9, [0.9, 0, 0], 0.0), (1.0, [1.0, 0, 0], 0.0)], max_gap_s=0.5)
    mount = mounting_matrix(MOUNT)
    lost = buffer.pose_at(int(0.5 * S), mount)
    assert lost.pose is None and "gap of 0.800 s" in lost.reason
    assert "longer than 0.5 s" in lost.reason
    assert buffer.pose_at(int(0.95 * S), mount).pose is not None
    buffer.configure(tolerance_s=0.05, max_gap_s=1.0)  # a longer limit: interpolated again
    np.testing.assert_allclose(buffer.pose_at(int(0.5 * S), mount).pose[0, 3], 0.1 + 0.5, atol=1e-9)


def test_a_non_unit_quaternion_is_refused_and_no_stamp_beside_it_gets_a_pose():
    buffer = buffer_with([(0.0, [0, 0, 0], 0.0), (0.1, [0.1, 0, 0], 0.0)])
    problem = buffer.add(int(0.2 * S), [0.2, 0, 0], [0.0, 0.0, 0.0, 2.0])
    assert problem is not None and "length 2.0000, not 1" in problem
    buffer.add(int(0.3 * S), [0.3, 0, 0], yaw_quaternion(0.0))
    mount = mounting_matrix(MOUNT)
    for t in (0.15, 0.2, 0.25):
        near = buffer.pose_at(int(t * S), mount)
        assert near.pose is None and "odometry at 0.200 s" in near.reason
        assert "length 2.0000" in near.reason
    assert buffer.pose_at(int(0.05 * S), mount).pose is not None
    assert buffer.refused == 1
    assert "non-finite" in buffer.add(int(0.4 * S), [math.nan, 0, 0], yaw_quaternion(0.0))


def test_without_the_mounting_there_is_no_camera_pose():
    buffer = buffer_with([(0.0, [0, 0, 0], 0.0)])
    assert "mounting" in buffer.pose_at(0, None).reason


def test_memory_is_bounded_by_count_and_by_time():
    buffer = OdometryBuffer(history_s=2.0, max_samples=500)
    for i in range(3000):  # 3 s at 1 kHz
        buffer.add(i * 1_000_000, [0, 0, 0], [0, 0, 0, 1])
    assert len(buffer) == 500
    slow = OdometryBuffer(history_s=2.0, max_samples=10_000)
    for i in range(100):  # 10 s at 10 Hz: the last 2 s are kept
        slow.add(i * 100_000_000, [0, 0, 0], [0, 0, 0, 1])
    assert len(slow) == 21
    assert "before the oldest" in slow.pose_at(0, np.eye(4)).reason


def test_time_jumping_back_starts_the_history_again():
    buffer = buffer_with([(100.0, [5, 0, 0], 0.0), (100.1, [5.1, 0, 0], 0.0)])
    buffer.add(1 * S, [0, 0, 0], yaw_quaternion(0.0))  # a bag played again, a simulator reset
    assert len(buffer) == 1 and buffer.restarts == 1
    assert buffer.pose_at(int(100.05 * S), np.eye(4)).pose is None


@pytest.mark.parametrize("values, problem", [
    ([], None),
    ([0.0], None),  # the typed "not given" a ROS parameter needs
    (MOUNT, None),
    ([0.1, 0.0, 0.5], "needs 7 numbers per camera"),
    (MOUNT + MOUNT[:6] + [0.9], "camera 2's mounting"),
    ([0, 0, 0, 0, 0, 0, 0.5], "not 1"),
    ([0, 0, math.inf, 0, 0, 0, 1], "non-finite"),
])
def test_the_mounting_setting_is_checked(values, problem):
    found = mountings_problem(values)
    assert (found is None) if problem is None else (problem in found)
    if problem is None:
        given = camera_mountings(values, 1)[0]
        assert (given is None) == (len(values) != 7)
