# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Rigid camera poses: 4x4 camera-to-world matrices of the camera's optical frame (REP 103/105).

A pose ``T_world_cam`` maps a point in the camera's optical frame (x right, y down, z forward,
metres) to the world (``odom``) frame. The motion between two frames, as used to move depth from
one view into the next, is ``motion(T_world_a, T_world_b)``: it maps points of camera a into
camera b.
"""

from __future__ import annotations

import numpy as np

# A quaternion further than this from unit length is a bug upstream, not rounding: refuse it.
UNIT_QUATERNION_TOLERANCE = 0.01


def quaternion_problem(qx: float, qy: float, qz: float, qw: float) -> str | None:
    """Why (x, y, z, w) is not a usable rotation, or None."""
    q = np.array([qx, qy, qz, qw], dtype=np.float64)
    if not np.all(np.isfinite(q)):
        return f"quaternion {q.tolist()} has a non-finite component"
    norm = float(np.linalg.norm(q))
    if abs(norm - 1.0) > UNIT_QUATERNION_TOLERANCE:
        return (f"quaternion {q.round(6).tolist()} has length {norm:.4f}, not 1 "
                f"(x y z w order, normalised)")
    return None


def rotation_from_quaternion(qx: float, qy: float, qz: float, qw: float) -> np.ndarray:
    """The 3x3 rotation of a unit quaternion (x, y, z, w). Raises ValueError for a non-unit one."""
    problem = quaternion_problem(qx, qy, qz, qw)
    if problem:
        raise ValueError(problem)
    x, y, z, w = np.array([qx, qy, qz, qw], dtype=np.float64) / np.linalg.norm([qx, qy, qz, qw])
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ])


def quaternion_from_rotation(rotation: np.ndarray) -> np.ndarray:
    """The unit quaternion (x, y, z, w), w >= 0, of a 3x3 rotation."""
    r = np.asarray(rotation, dtype=np.float64)
    # Shepperd's method: branch on the largest diagonal term for a well-conditioned square root.
    trace = np.trace(r)
    if trace > 0:
        s = 2.0 * np.sqrt(1.0 + trace)
        q = [(r[2, 1] - r[1, 2]) / s, (r[0, 2] - r[2, 0]) / s, (r[1, 0] - r[0, 1]) / s, s / 4]
    elif r[0, 0] > r[1, 1] and r[0, 0] > r[2, 2]:
        s = 2.0 * np.sqrt(1.0 + r[0, 0] - r[1, 1] - r[2, 2])
        q = [s / 4, (r[0, 1] + r[1, 0]) / s, (r[0, 2] + r[2, 0]) / s, (r[2, 1] - r[1, 2]) / s]
    elif r[1, 1] > r[2, 2]:
        s = 2.0 * np.sqrt(1.0 + r[1, 1] - r[0, 0] - r[2, 2])
        q = [(r[0, 1] + r[1, 0]) / s, s / 4, (r[1, 2] + r[2, 1]) / s, (r[0, 2] - r[2, 0]) / s]
    else:
        s = 2.0 * np.sqrt(1.0 + r[2, 2] - r[0, 0] - r[1, 1])
        q = [(r[0, 2] + r[2, 0]) / s, (r[1, 2] + r[2, 1]) / s, s / 4, (r[1, 0] - r[0, 1]) / s]
    q = np.array(q) / np.linalg.norm(q)
    return -q if q[3] < 0 else q


def pose_matrix(translation: "np.ndarray | list[float]",
                quaternion: "np.ndarray | list[float]") -> np.ndarray:
    """The 4x4 pose of a translation (x, y, z) and a unit quaternion (x, y, z, w)."""
    pose = np.eye(4)
    pose[:3, :3] = rotation_from_quaternion(*quaternion)
    pose[:3, 3] = np.asarray(translation, dtype=np.float64)
    return pose


def invert(pose: np.ndarray) -> np.ndarray:
    """The inverse of a rigid 4x4 transform (exact, no general matrix inverse)."""
    inverse = np.eye(4)
    inverse[:3, :3] = pose[:3, :3].T
    inverse[:3, 3] = -pose[:3, :3].T @ pose[:3, 3]
    return inverse


def motion(world_from_a: np.ndarray, world_from_b: np.ndarray) -> np.ndarray:
    """The transform that maps points of camera a's frame into camera b's frame."""
    return invert(world_from_b) @ world_from_a


def slerp(q0: np.ndarray, q1: np.ndarray, alpha: float) -> np.ndarray:
    """Spherical interpolation between unit quaternions (x, y, z, w), the shorter way round."""
    q0, q1 = np.asarray(q0, dtype=np.float64), np.asarray(q1, dtype=np.float64)
    dot = float(np.dot(q0, q1))
    if dot < 0:
        q1, dot = -q1, -dot
    if dot > 0.9995:  # nearly parallel: linear is exact to float precision and avoids 0/0
        q = q0 + alpha * (q1 - q0)
        return q / np.linalg.norm(q)
    theta = np.arccos(dot)
    return (np.sin((1 - alpha) * theta) * q0 + np.sin(alpha * theta) * q1) / np.sin(theta)


def interpolate(pose0: np.ndarray, pose1: np.ndarray, alpha: float,
                quaternions: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """The pose a fraction ``alpha`` of the way from pose0 to pose1 (linear in translation,
    spherical in rotation). ``quaternions``: the two poses' own
    (:func:`quaternion_from_rotation`), where the caller keeps them."""
    pose = np.eye(4)
    q0, q1 = quaternions or (quaternion_from_rotation(pose0[:3, :3]),
                             quaternion_from_rotation(pose1[:3, :3]))
    q = slerp(q0, q1, alpha)
    pose[:3, :3] = rotation_from_quaternion(*q)
    pose[:3, 3] = (1 - alpha) * pose0[:3, 3] + alpha * pose1[:3, 3]
    return pose


def rotation_angle_deg(transform: np.ndarray) -> float:
    """The rotation angle of a rigid transform, in degrees."""
    cos = (np.trace(transform[:3, :3]) - 1.0) / 2.0
    return float(np.degrees(np.arccos(np.clip(cos, -1.0, 1.0))))
