# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The camera's pose at an image's stamp, from odometry (``nav_msgs/Odometry``: ``odom`` ->
``base_link``, REP 105) and the camera's mounting on the robot (``base_link`` -> the camera's
optical frame, REP 103). ROS-free: the node feeds it messages, ``process`` a bag's topic.

The pose at a stamp between two odometry samples is interpolated (:func:`.pose.interpolate`:
linear in translation, spherical in rotation) and composed with the mounting, giving the
``world_from_camera`` pose of :mod:`.pose` (world = the odometry's frame). There is none, with
the reason, when the stamp lies past the newest sample (never that sample's pose: the node
first waits a bounded time for the next one, as tf2's message filter does), more than a
tolerance before the oldest, when the two samples around it are further apart than a gap limit
(messages were lost: the robot may have turned in between), or when one of them was refused (a
quaternion that is not unit, a non-finite number). A sample stamped before the newest starts a
new history (time went back: a bag played again, a simulator reset), so two runs never mix.
Memory is bounded: samples older than ``history_s`` before the newest go, and at most
``max_samples`` are kept.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ..by_stamp import ByStamp
from ..setting_names import NODE, Syntax
from .pose import interpolate, pose_matrix, quaternion_problem

HISTORY_S = 10.0      # a slow model's frame (seconds of inference) still finds its odometry
MAX_SAMPLES = 4096    # 10 s of 400 Hz odometry; a faster source keeps less time
GAVE_UP_KEPT = 64     # stamps of frames that stopped waiting, kept to count late samples
# Why a frame has no pose, in short: the kinds of CameraPose.reason.
NO_POSE = ("no odometry", "out of range", "late odometry", "gap", "refused odometry",
           "no mounting", "restarted")


@dataclass(frozen=True)
class _Sample:
    pose: np.ndarray | None  # odom_from_base (4x4); None: refused, ``problem`` says why
    problem: str = ""


@dataclass(frozen=True)
class CameraPose:
    """The camera's pose at one stamp: ``pose`` (4x4 world_from_camera of the optical frame)
    or None, ``reason`` ("" with a pose) why there is none, and ``kind``, the reason in one of
    :data:`NO_POSE` (to count and throttle by: the reason holds stamps)."""

    pose: np.ndarray | None
    reason: str = ""
    kind: str = ""


def mounting_problem(values: Sequence[float]) -> str | None:
    """Why ``values`` (x y z qx qy qz qw: the camera's optical frame in the robot's base frame)
    is not a mounting, or None; [] (not given) is allowed."""
    values = list(values)
    if not values:
        return None
    if len(values) != 7:
        return f"needs 7 numbers (x y z qx qy qz qw), got {len(values)}"
    if not all(math.isfinite(v) for v in values):
        return f"has a non-finite number: {values}"
    return quaternion_problem(*values[3:])


def given_mountings(values: Sequence[float]) -> list[float]:
    """``camera_in_base`` as given: [] for [0.0] or [] (not given)."""
    values = list(values)
    return [] if values == [0.0] else values


def mountings_problem(values: Sequence[float], syntax: Syntax = NODE) -> str | None:
    """The ``camera_in_base`` setting's check: [0.0] or [] (not given; [0.0] is the typed
    default a ROS parameter needs) or 7 numbers per camera, each a mounting."""
    values = given_mountings(values)
    name = syntax.name("camera_in_base")
    if len(values) % 7:
        return (f"{name} needs 7 numbers per camera (x y z qx qy qz qw of the camera's optical "
                f"frame in the robot's base frame), got {len(values)}")
    for i in range(0, len(values), 7):
        problem = mounting_problem(values[i:i + 7])
        if problem:
            return f"{name}: camera {i // 7 + 1}'s mounting {problem}"
    return None


def camera_mountings(values: Sequence[float], cameras: int,
                     syntax: Syntax = NODE) -> list[np.ndarray | None]:
    """Each camera's base_from_camera (optical) pose from ``camera_in_base`` (checked by
    :func:`mountings_problem`): None for every camera when it is [], else one per camera.
    ValueError when it holds another number of mountings than ``cameras``."""
    values = given_mountings(values)
    if not values:
        return [None] * cameras
    if len(values) != 7 * cameras:
        raise ValueError(f"{syntax.name('camera_in_base')} holds {len(values) // 7} "
                         f"mounting(s) for {cameras} camera(s); give 7 numbers (x y z qx qy "
                         "qz qw) per camera, in the order of the cameras, or none")
    return [mounting_matrix(values[i:i + 7]) for i in range(0, len(values), 7)]


def mounting_matrix(values: Sequence[float]) -> np.ndarray | None:
    """The 4x4 base_from_camera (optical) pose of x y z qx qy qz qw, or None for []."""
    values = list(values)
    if not values:
        return None
    problem = mounting_problem(values)
    if problem:
        raise ValueError(problem)
    return pose_matrix(values[:3], values[3:])


def transform_matrix(transform: Any) -> np.ndarray:
    """The 4x4 pose of a geometry_msgs/Transform (rclpy's or rosbags'): ``translation`` x y z,
    ``rotation`` x y z w. ValueError for a rotation that is not a unit quaternion."""
    t, r = transform.translation, transform.rotation
    return pose_matrix([t.x, t.y, t.z], [r.x, r.y, r.z, r.w])


class OdometryBuffer:
    """Odometry samples by stamp (ns) that answer "the camera's pose at stamp t". Thread-safe
    (the node adds on its executor and looks up, waiting, on a worker)."""

    def __init__(self, tolerance_s: float = 0.05, max_gap_s: float = 0.5,
                 history_s: float = HISTORY_S, max_samples: int = MAX_SAMPLES,
                 wait_s: float = 0.0) -> None:
        """``tolerance_s``: how far before the oldest sample a stamp may lie and still take its
        pose (start-up); ``max_gap_s``: the longest time between the two samples around a
        stamp that is interpolated across; ``history_s``: how long before the newest sample
        samples are kept (0: no limit by time, only ``max_samples``); ``wait_s``: how long a
        lookup with a deadline may wait for a later sample (``odometry_wait``: it bounds which
        stamps are worth waiting for, see :meth:`wait_for`)."""
        self.tolerance_s, self.max_gap_s, self.wait_s = tolerance_s, max_gap_s, wait_s
        self.history_s, self.max_samples = history_s, max_samples
        self._held: ByStamp[_Sample] = ByStamp()
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)  # a sample came (or a restart)
        self._gave_up: list[int] = []  # stamps of frames that stopped waiting (late count)
        self._closed = False
        self.refused = 0          # samples refused (counted for diagnostics)
        self.restarts = 0         # times the history started again because time went back
        self.restart_note = ""    # why the last restart happened
        self.last_problem = ""    # why the last refused sample was refused
        self.waited = 0           # lookups that waited for a later sample
        self.late = 0             # samples that came after a frame needing them stopped waiting

    def __len__(self) -> int:
        return len(self._held)

    def newest_ns(self) -> int | None:
        """The newest sample's stamp (ns), or None while none is held."""
        with self._lock:
            return self._held.stamps[-1] if len(self._held) else None

    def configure(self, tolerance_s: float, max_gap_s: float,
                  wait_s: float | None = None) -> None:
        """New limits (runtime parameters), used from the next lookup on."""
        self.tolerance_s, self.max_gap_s = tolerance_s, max_gap_s
        if wait_s is not None:
            self.wait_s = wait_s

    def clear(self) -> None:
        with self._lock:
            self._held = ByStamp()
            self._arrived.notify_all()

    def close(self) -> None:
        """Wake every lookup waiting for a sample (the node is closing): none will come."""
        with self._lock:
            self._closed = True
            self._arrived.notify_all()

    def add(self, stamp_ns: int, translation: Sequence[float],
            quaternion: Sequence[float]) -> str | None:
        """Keep the sample odom_from_base = (``translation`` x y z, ``quaternion`` x y z w) at
        ``stamp_ns``. Returns why it is refused (kept as a refused sample, so that no stamp
        next to it is interpolated across it), or None. A stamp before the newest sample's
        starts the history again (:attr:`restarts`, :attr:`restart_note`)."""
        problem = self._sample_problem(translation, quaternion)
        sample = _Sample(None, problem) if problem else \
            _Sample(pose_matrix(translation, quaternion))
        with self._lock:
            held = self._held
            if len(held) and stamp_ns < held.stamps[-1]:  # time went back: another run
                self.restart_note = (
                    f"odometry time went back from {held.stamps[-1] * 1e-9:.3f} s to "
                    f"{stamp_ns * 1e-9:.3f} s (a bag played again, a simulator reset): the "
                    "motion starts again from here, the earlier samples are another run's")
                self._held = held = ByStamp()
                self._gave_up.clear()
                self.restarts += 1
            previous = held.stamps[-1] if len(held) else None
            held.put(stamp_ns, sample)
            newest = held.stamps[-1]
            while len(held) > self.max_samples or (
                    self.history_s > 0 and held.stamps[0] < newest - self.history_s * 1e9):
                held.pop_oldest()
            needed = [t for t in self._gave_up if t <= stamp_ns and
                      (previous is None or t > previous)]
            if needed:  # the sample after a frame's stamp, come after the frame stopped waiting
                self.late += 1
                self._gave_up = [t for t in self._gave_up if t > stamp_ns]
            self._arrived.notify_all()
        if problem:
            self.refused += 1
            self.last_problem = problem
        return problem or None

    @staticmethod
    def _sample_problem(translation: Sequence[float], quaternion: Sequence[float]) -> str:
        if not all(math.isfinite(v) for v in translation):
            return f"odometry position {list(translation)} has a non-finite number"
        problem = quaternion_problem(*quaternion)
        return f"odometry orientation: {problem}" if problem else ""

    def wait_for(self, stamp_ns: int, deadline: float) -> bool:
        """Wait until a sample stamped at or after ``stamp_ns`` is held (the one that brackets
        it), a restart, or the monotonic ``deadline``. No wait without odometry, nor when the
        newest sample is more than ``wait_s`` + ``max_gap_s`` before the stamp (odometry that
        stopped, or a clock far off: waiting would cost every frame ``wait_s`` for nothing).
        Whether it waited."""
        with self._lock:
            held, restarts = self._held, self.restarts
            if not len(held) or held.stamps[-1] >= stamp_ns or \
                    stamp_ns - held.stamps[-1] > (self.wait_s + self.max_gap_s) * 1e9:
                return False
            self.waited += 1
            while not self._closed and restarts == self.restarts and (
                    not len(self._held) or self._held.stamps[-1] < stamp_ns):
                left = deadline - time.monotonic()
                if left <= 0 or not self._arrived.wait(left):
                    break
            return True

    def base_pose_at(self, stamp_ns: int, waited: bool | None = None) -> CameraPose:
        """The robot's pose odom_from_base at ``stamp_ns``, or None with the reason.
        ``waited``: whether the caller waited for a later sample (None: it does not wait, as
        ``process`` reading a bag ahead), said in the reason of a stamp past the newest."""
        with self._lock:
            held = self._held
            if not len(held):
                return CameraPose(None, "no odometry received yet", "no odometry")
            first, last = held.stamps[0], held.stamps[-1]
            before = max(held.at_or_before(stamp_ns), 0)
            after = before + 1 if held.stamps[before] < stamp_ns < last else before
            around = [(held.stamps[j], held.items[j]) for j in sorted({before, after})]
            if stamp_ns > last and waited is not None:  # a late sample is counted when it comes
                self._gave_up = [*self._gave_up[-GAVE_UP_KEPT + 1:], stamp_ns]
        t, tolerance = stamp_ns * 1e-9, self.tolerance_s
        held_range = f"{first * 1e-9:.3f}-{last * 1e-9:.3f} s"
        if stamp_ns > last:
            why = "" if waited is None else (
                f": none came within odometry_wait ({self.wait_s:g} s) of the frame" if waited
                or stamp_ns - last <= (self.wait_s + self.max_gap_s) * 1e9 else
                f": more than odometry_wait + odometry_max_gap ({self.wait_s:g} + "
                f"{self.max_gap_s:g} s) behind, not waited for")
            return CameraPose(None, f"image stamp {t:.3f} s is {(stamp_ns - last) * 1e-9:.3f} s "
                                    f"after the newest odometry held ({held_range}), and a "
                                    f"pose is only interpolated, never the newest's{why}",
                              "out of range" if waited is None else "late odometry")
        if stamp_ns < first - tolerance * 1e9:
            return CameraPose(None, f"image stamp {t:.3f} s is {(first - stamp_ns) * 1e-9:.3f} s "
                                    f"before the oldest odometry held ({held_range}; tolerance "
                                    f"{tolerance:g} s)", "out of range")
        for stamp, sample in around:
            if sample.pose is None:
                return CameraPose(None, f"odometry at {stamp * 1e-9:.3f} s next to the image "
                                        f"stamp was refused: {sample.problem}",
                                  "refused odometry")
        if len(around) == 1:  # on a sample's stamp, or within the tolerance before the oldest
            return CameraPose(around[0][1].pose.copy())
        (t0, s0), (t1, s1) = around
        gap = (t1 - t0) * 1e-9
        if gap > self.max_gap_s:
            return CameraPose(None, f"odometry has a gap of {gap:.3f} s around image stamp "
                                    f"{t:.3f} s (longer than {self.max_gap_s:g} s)", "gap")
        return CameraPose(interpolate(s0.pose, s1.pose, (stamp_ns - t0) / (t1 - t0)))

    def pose_at(self, stamp_ns: int, base_from_camera: np.ndarray | None,
                deadline: float | None = None) -> CameraPose:
        """The camera's world_from_camera pose at ``stamp_ns`` (world: the odometry's frame),
        or None with the reason; ``base_from_camera``: the camera's mounting (None: not
        known, no pose). ``deadline`` (monotonic s): wait until then for the sample after the
        stamp (:meth:`wait_for`); None: look up what is held now."""
        if base_from_camera is None:
            return CameraPose(None, "the camera's mounting on the robot is not known",
                              "no mounting")
        waited = None if deadline is None else self.wait_for(stamp_ns, deadline)
        base = self.base_pose_at(stamp_ns, waited)
        if base.pose is None:
            return base
        return CameraPose(base.pose @ base_from_camera)
