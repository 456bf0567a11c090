"""The camera's pose at an image's stamp, from odometry (``nav_msgs/Odometry``: ``odom`` ->
``base_link``, REP 105) and the camera's mounting on the robot (``base_link`` -> the camera's
optical frame, REP 103). ROS-free: the node feeds it messages, ``process`` a bag's topic.

The pose at a stamp between two odometry samples is interpolated (:func:`.pose.interpolate`:
linear in translation, spherical in rotation) and composed with the mounting, giving the
``world_from_camera`` pose of :mod:`.pose` (world = the odometry's frame). There is none, with
the reason, when the stamp lies outside the odometry's time range by more than a tolerance,
when the two samples around it are further apart than a gap limit (messages were lost: the
robot may have turned in between), or when one of them was refused (a quaternion that is not
unit, a non-finite number). Memory is bounded: samples older than ``history_s`` before the
newest go, and at most ``max_samples`` are kept.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ..by_stamp import ByStamp
from ..settings.names import NODE, Syntax
from .pose import interpolate, pose_matrix, quaternion_problem

HISTORY_S = 10.0      # a slow model's frame (seconds of inference) still finds its odometry
MAX_SAMPLES = 4096    # 10 s of 400 Hz odometry; a faster source keeps less time
JUMP_BACK_S = 1.0     # a stamp this far before the newest: time restarted (a bag looped, sim reset)
# Why a frame has no pose, in short: the kinds of CameraPose.reason.
NO_POSE = ("no odometry", "out of range", "gap", "refused odometry", "no mounting")


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
    (the node adds on its executor and looks up on a worker)."""

    def __init__(self, tolerance_s: float = 0.05, max_gap_s: float = 0.5,
                 history_s: float = HISTORY_S, max_samples: int = MAX_SAMPLES) -> None:
        """``tolerance_s``: how far past either end of the samples a stamp may lie and still
        take that end's pose; ``max_gap_s``: the longest time between the two samples around a
        stamp that is interpolated across; ``history_s``: how long before the newest sample
        samples are kept (0: no limit by time, only ``max_samples``)."""
        self.tolerance_s, self.max_gap_s = tolerance_s, max_gap_s
        self.history_s, self.max_samples = history_s, max_samples
        self._held: ByStamp[_Sample] = ByStamp()
        self._lock = threading.Lock()
        self.refused = 0          # samples refused (counted for diagnostics)
        self.restarts = 0         # times the history was cleared because time jumped back
        self.last_problem = ""    # why the last refused sample was refused

    def __len__(self) -> int:
        return len(self._held)

    def newest_ns(self) -> int | None:
        """The newest sample's stamp (ns), or None while none is held."""
        with self._lock:
            return self._held.stamps[-1] if len(self._held) else None

    def configure(self, tolerance_s: float, max_gap_s: float) -> None:
        """New limits (runtime parameters), used from the next lookup on."""
        self.tolerance_s, self.max_gap_s = tolerance_s, max_gap_s

    def clear(self) -> None:
        with self._lock:
            self._held = ByStamp()

    def add(self, stamp_ns: int, translation: Sequence[float],
            quaternion: Sequence[float]) -> str | None:
        """Keep the sample odom_from_base = (``translation`` x y z, ``quaternion`` x y z w) at
        ``stamp_ns``. Returns why it is refused (kept as a refused sample, so that no stamp
        next to it is interpolated across it), or None."""
        problem = self._sample_problem(translation, quaternion)
        sample = _Sample(None, problem) if problem else \
            _Sample(pose_matrix(translation, quaternion))
        with self._lock:
            held = self._held
            if len(held) and stamp_ns < held.stamps[-1] - JUMP_BACK_S * 1e9:
                self._held = held = ByStamp()  # time restarted: the old samples are another run
                self.restarts += 1
            held.put(stamp_ns, sample)
            newest = held.stamps[-1]
            while len(held) > self.max_samples or (
                    self.history_s > 0 and held.stamps[0] < newest - self.history_s * 1e9):
                held.pop_oldest()
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

    def base_pose_at(self, stamp_ns: int) -> CameraPose:
        """The robot's pose odom_from_base at ``stamp_ns``, or None with the reason."""
        with self._lock:
            held = self._held
            if not len(held):
                return CameraPose(None, "no odometry received yet", "no odometry")
            first, last = held.stamps[0], held.stamps[-1]
            before = max(held.at_or_before(stamp_ns), 0)
            after = before + 1 if held.stamps[before] < stamp_ns < last else before
            around = [(held.stamps[j], held.items[j]) for j in sorted({before, after})]
        t, tolerance = stamp_ns * 1e-9, self.tolerance_s
        if not first - tolerance * 1e9 <= stamp_ns <= last + tolerance * 1e9:
            side = f"{(first - stamp_ns) * 1e-9:.3f} s before the oldest" if stamp_ns < first \
                else f"{(stamp_ns - last) * 1e-9:.3f} s after the newest"
            return CameraPose(None, f"image stamp {t:.3f} s is {side} odometry held "
                                    f"({first * 1e-9:.3f}-{last * 1e-9:.3f} s; tolerance "
                                    f"{tolerance:g} s)", "out of range")
        for stamp, sample in around:
            if sample.pose is None:
                return CameraPose(None, f"odometry at {stamp * 1e-9:.3f} s next to the image "
                                        f"stamp was refused: {sample.problem}",
                                  "refused odometry")
        if len(around) == 1:  # on a sample's stamp, or within the tolerance past an end
            return CameraPose(around[0][1].pose.copy())
        (t0, s0), (t1, s1) = around
        gap = (t1 - t0) * 1e-9
        if gap > self.max_gap_s:
            return CameraPose(None, f"odometry has a gap of {gap:.3f} s around image stamp "
                                    f"{t:.3f} s (longer than {self.max_gap_s:g} s)", "gap")
        return CameraPose(interpolate(s0.pose, s1.pose, (stamp_ns - t0) / (t1 - t0)))

    def pose_at(self, stamp_ns: int, base_from_camera: np.ndarray | None) -> CameraPose:
        """The camera's world_from_camera pose at ``stamp_ns`` (world: the odometry's frame),
        or None with the reason; ``base_from_camera``: the camera's mounting (None: not
        known, no pose)."""
        if base_from_camera is None:
            return CameraPose(None, "the camera's mounting on the robot is not known",
                              "no mounting")
        base = self.base_pose_at(stamp_ns)
        if base.pose is None:
            return base
        return CameraPose(base.pose @ base_from_camera)
