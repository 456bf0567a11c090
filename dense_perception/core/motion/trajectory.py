# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Camera trajectories in the TUM format, and which pose goes with which frame.

A TUM file holds one pose a line, ``t tx ty tz qx qy qz qw`` (seconds, metres, a unit
quaternion x y z w): here the camera-to-world transform of the camera's *optical* frame (x
right, y down, z forward). Empty lines and lines starting with ``#`` are skipped. Every problem
is one line naming the file, the line and what to fix (:class:`TrajectoryError`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .pose import interpolate, pose_matrix, quaternion_problem

STAMP_TOLERANCE_S = 0.002  # a frame's time and a line's stamp closer than this are the same
# A frame's own stamp between two lines: as a bag's odometry (the odometry_tolerance and
# odometry_max_gap defaults): interpolated across at most MAX_GAP_S, an end's pose at most
# END_TOLERANCE_S past it.
END_TOLERANCE_S = 0.05
MAX_GAP_S = 0.5


class TrajectoryError(ValueError):
    """A trajectory that cannot be used; the message says what is wrong and how to fix it."""


@dataclass(frozen=True)
class Trajectory:
    """Poses (4x4 world_from_camera, optical frame) in file order, with their stamps (s)."""

    path: str
    stamps: np.ndarray
    poses: tuple[np.ndarray, ...]

    def __len__(self) -> int:
        return len(self.poses)

    def for_frames(self, count: int | None, times: list[float] | None = None
                   ) -> list[tuple[float, np.ndarray] | None]:
        """The (stamp, pose) of each of ``count`` frames, or None for a frame without one.

        One line per frame, in order, when the counts agree; else the lines are matched by
        stamp to the frames' ``times`` (a video's frame times), when every line's stamp is
        one of them. TrajectoryError otherwise (a wrong number of lines)."""
        if count is not None and count == len(self):
            return list(zip(self.stamps.tolist(), self.poses))
        if times:
            index = {round(t / STAMP_TOLERANCE_S): i for i, t in enumerate(times)}
            matched: list[tuple[float, np.ndarray] | None] = [None] * len(times)
            hits = 0
            for stamp, pose in zip(self.stamps.tolist(), self.poses):
                i = index.get(round(stamp / STAMP_TOLERANCE_S))
                if i is not None and matched[i] is not None:
                    raise TrajectoryError(
                        f"--poses: {self.path} has two poses for the frame at {times[i]:.3f} s "
                        f"(stamps {matched[i][0]} and {stamp}): give one line per frame")
                if i is not None:
                    matched[i], hits = (stamp, pose), hits + 1
            if hits == len(self):
                return matched
        raise TrajectoryError(
            f"--poses: {self.path} has {len(self)} poses but the input has "
            f"{'an unknown number of' if count is None else count} frames"
            + ("" if not times else ", and not every stamp is a frame's time "
               f"({times[0]:.3f}-{times[-1]:.3f} s)")
            + ": give one line per frame, in order" + (", or stamps at the frames' times"
                                                       if times else ""))

    def at_stamps(self, times: list[float]) -> list[tuple[float, np.ndarray] | None]:
        """The pose of each frame at its own stamp in ``times`` (s, on the trajectory's
        clock), with that stamp: a line's pose where one is within STAMP_TOLERANCE_S of it,
        else the two lines around it interpolated (linear in position, slerp in rotation) when
        at most MAX_GAP_S apart, or the first or last line's when it lies at most
        END_TOLERANCE_S before or after them; None for a frame without one. TrajectoryError
        when no frame has a pose (the stamps and the trajectory do not overlap)."""
        stamps, poses = self.stamps, self.poses
        matched: list[tuple[float, np.ndarray] | None] = []
        for t in times:
            j = int(np.searchsorted(stamps, t))  # the first line at or after t
            near = sorted((abs(stamps[k] - t), k) for k in (j - 1, j) if 0 <= k < len(stamps))
            if near and near[0][0] <= STAMP_TOLERANCE_S:  # on a line's stamp
                matched.append((t, poses[near[0][1]]))
            elif j == 0 and stamps[0] - t <= END_TOLERANCE_S:
                matched.append((t, poses[0]))
            elif j == len(stamps) and t - stamps[-1] <= END_TOLERANCE_S:
                matched.append((t, poses[-1]))
            elif 0 < j < len(stamps) and stamps[j] - stamps[j - 1] <= MAX_GAP_S:
                alpha = (t - stamps[j - 1]) / (stamps[j] - stamps[j - 1])
                matched.append((t, interpolate(poses[j - 1], poses[j], float(alpha))))
            else:
                matched.append(None)
        if times and all(m is None for m in matched):
            raise TrajectoryError(
                f"--poses: no frame's stamp ({min(times):.3f}-{max(times):.3f} s, from the "
                f"frames' names) lies within {self.path}'s stamps ({stamps[0]:.3f}-"
                f"{stamps[-1]:.3f} s): give the trajectory on the clock the frames are named "
                "by, or name the frames otherwise (e.g. frame_000000.png) to take one line "
                "per frame in order")
        return matched


def read_tum(path: str | Path) -> Trajectory:
    """The trajectory in ``path`` (TUM: ``t tx ty tz qx qy qz qw`` a line, camera-to-world of
    the optical frame). Raises TrajectoryError for a missing file, a malformed line, a
    non-unit quaternion, stamps that go back or repeat, or no pose at all."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise TrajectoryError(f"--poses: cannot read {path} ({exc.strerror or exc})") from None
    stamps: list[float] = []
    poses: list[np.ndarray] = []
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split()
        try:
            values = [float(p) for p in parts]
        except ValueError:
            values = []
        if len(values) != 8 or not np.all(np.isfinite(values)):
            raise TrajectoryError(
                f"--poses: {path} line {number} is not 't tx ty tz qx qy qz qw' (8 numbers, "
                f"TUM format): '{line[:60]}'")
        problem = quaternion_problem(*values[4:])
        if problem:
            raise TrajectoryError(f"--poses: {path} line {number}: {problem}")
        if stamps and values[0] < stamps[-1]:
            raise TrajectoryError(f"--poses: {path} line {number}: stamp {values[0]} is "
                                  f"before the previous line's {stamps[-1]} (lines in time "
                                  "order)")
        if stamps and values[0] == stamps[-1]:
            raise TrajectoryError(f"--poses: {path} line {number}: stamp {values[0]} is the "
                                  "previous line's too (one pose per stamp: remove one of the "
                                  "two lines)")
        stamps.append(values[0])
        poses.append(pose_matrix(values[1:4], values[4:]))
    if not poses:
        raise TrajectoryError(f"--poses: {path} holds no pose (TUM: 't tx ty tz qx qy qz qw' "
                              "a line)")
    return Trajectory(str(path), np.array(stamps), tuple(poses))
