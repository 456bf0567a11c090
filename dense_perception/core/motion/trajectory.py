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

from .pose import pose_matrix, quaternion_problem

STAMP_TOLERANCE_S = 0.002  # a frame's time and a line's stamp closer than this are the same


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


def read_tum(path: str | Path) -> Trajectory:
    """The trajectory in ``path`` (TUM: ``t tx ty tz qx qy qz qw`` a line, camera-to-world of
    the optical frame). Raises TrajectoryError for a missing file, a malformed line, a
    non-unit quaternion, stamps that go back, or no pose at all."""
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
        stamps.append(values[0])
        poses.append(pose_matrix(values[1:4], values[4:]))
    if not poses:
        raise TrajectoryError(f"--poses: {path} holds no pose (TUM: 't tx ty tz qx qy qz qw' "
                              "a line)")
    return Trajectory(str(path), np.array(stamps), tuple(poses))
