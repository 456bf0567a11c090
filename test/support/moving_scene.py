# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""A painted world seen by a moving camera: a textured wall and floor, rendered exactly for any
pose by ray-plane intersection, with the true depth of every pixel.

The world frame is the first camera's optical frame (x right, y down, z forward). The wall is
the plane z = WALL_Z, the floor y = FLOOR_Y; the texture is a sum of sines of the world
coordinates on each plane, so the optical flow has detail everywhere. Poses are 4x4
world_from_camera (camera-to-world, optical frame).
"""

from __future__ import annotations

import numpy as np

from dense_perception.core.geometry.intrinsics import Intrinsics
from dense_perception.core.motion.pose import pose_matrix, quaternion_from_rotation

WIDTH, HEIGHT = 320, 240
K = Intrinsics(250.0, 250.0, 159.5, 119.5, WIDTH, HEIGHT)
WALL_Z = 3.0    # m ahead of the first camera
FLOOR_Y = 1.0   # m below it


def _texture(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (0.5 + 0.18 * np.sin(9.1 * a) * np.cos(7.3 * b) + 0.12 * np.sin(23.0 * a + 4.0 * b)
            + 0.1 * np.cos(31.0 * b - 11.0 * a))


def render(pose: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(grey uint8 image, true depth in metres) seen from ``pose``."""
    u, v = np.meshgrid(np.arange(WIDTH, dtype=np.float64), np.arange(HEIGHT, dtype=np.float64))
    rays = np.stack([(u - K.cx) / K.fx, (v - K.cy) / K.fy, np.ones_like(u)], -1)
    rot, origin = pose[:3, :3], pose[:3, 3]
    world_rays = rays @ rot.T
    with np.errstate(divide="ignore", invalid="ignore"):
        t_wall = (WALL_Z - origin[2]) / world_rays[..., 2]
        t_floor = (FLOOR_Y - origin[1]) / world_rays[..., 1]
    t_floor = np.where(t_floor > 0, t_floor, np.inf)
    t_wall = np.where(t_wall > 0, t_wall, np.inf)
    floor = t_floor < t_wall
    t = np.where(floor, t_floor, t_wall)
    points = origin + world_rays * t[..., None]
    shade = np.where(floor, _texture(points[..., 0], points[..., 2]),
                     _texture(points[..., 0], points[..., 1]))
    grey = np.clip(255 * shade, 0, 255).astype(np.uint8)
    depth = (t * 1.0).astype(np.float32)  # rays have z = 1 in the camera: t is the depth
    return grey, depth


def path(count: int, step: float = 0.01, turn_deg: float = 0.2) -> list[np.ndarray]:
    """A hand-held-like path: sideways and forward ``step`` m a frame, turning a little."""
    poses = []
    for i in range(count):
        angle = np.radians(turn_deg * i)
        rot = np.array([[np.cos(angle), 0, np.sin(angle)], [0, 1, 0],
                        [-np.sin(angle), 0, np.cos(angle)]])
        poses.append(pose_matrix([step * i, -0.002 * i, 0.5 * step * i],
                                 quaternion_from_rotation(rot)))
    return poses
