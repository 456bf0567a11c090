# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Scenes of the robot's own floor: metric depth written out by ray-plane intersection.

World frame: X right, Y forward (horizontal), Z up; the camera's optical centre at (0, 0, h),
pitched down by ``pitch_deg``. Each surface is a plane n . P = c with bounds; depth is z (REP
118), the ray's length along the optical axis to the nearest surface hit.
"""

from __future__ import annotations

import math

import numpy as np

WIDTH, HEIGHT = 504, 896


def rays_world(pitch_deg: float, fx: float, width: int = WIDTH, height: int = HEIGHT):
    """H x W x 3 world directions of the rays (x/z, y/z, 1) through the pixel centres."""
    p = math.radians(pitch_deg)
    ex = np.array([1.0, 0.0, 0.0])                       # optical x: right
    ey = np.array([0.0, -math.sin(p), -math.cos(p)])     # optical y: down
    ez = np.array([0.0, math.cos(p), -math.sin(p)])      # optical z: forward
    u, v = np.meshgrid(np.arange(width), np.arange(height))
    x, y = (u - (width - 1) / 2.0) / fx, (v - (height - 1) / 2.0) / fx
    return x[..., None] * ex + y[..., None] * ey + ez


def floor_scene(h: float, pitch_deg: float, fx: float = 420.0, *, edge: float | None = None,
                drop: float = 0.0, step: float = 0.0, ramp_deg: float = 0.0,
                side: float | None = None, wall: float = 6.0, width: int = WIDTH,
                height: int = HEIGHT) -> np.ndarray:
    """Metric depth of: the robot's floor (Z = 0) up to ``edge`` metres ahead; beyond it a lower
    floor (``drop`` m down), a step up (``step`` m, with its riser), or a ramp rising at
    ``ramp_deg``; a wall ``wall`` m ahead. ``edge`` None: the floor goes on to the wall.
    ``side``: the floor ends ``side`` m to the left instead (X < side is ``drop`` m lower: a
    stage edge beside the robot)."""
    r = rays_world(pitch_deg, fx, width, height)
    o = np.array([0.0, 0.0, h])
    best = np.full(r.shape[:2], np.inf)

    def hit(normal, c, inside):
        """Intersect every ray with n . P = c; keep the hits ``inside`` (a function of P)."""
        nonlocal best
        normal = np.asarray(normal, float)
        denom = r @ normal
        with np.errstate(divide="ignore", invalid="ignore"):
            t = (c - o @ normal) / denom
        t = np.where(np.isfinite(t) & (t > 1e-9), t, np.inf)
        p = o + r * np.where(np.isfinite(t), t, 0.0)[..., None]
        ok = inside(p) & (t < best)
        best = np.where(ok, t, best)

    far = np.inf if edge is None else edge
    left = -np.inf if side is None else side
    hit([0, 0, 1], 0.0, lambda p: (p[..., 1] <= far) & (p[..., 0] >= left))  # robot's floor
    if side is not None:
        hit([0, 0, 1], -drop, lambda p: p[..., 0] <= side)              # the floor beside it
    hit([0, 1, 0], wall, lambda p: np.ones(p.shape[:2], bool))         # the wall
    if edge is not None and drop > 0:
        hit([0, 0, 1], -drop, lambda p: p[..., 1] >= edge)              # the lower floor
    if edge is not None and step > 0:
        hit([0, 0, 1], step, lambda p: p[..., 1] >= edge)               # the step's top
        hit([0, 1, 0], edge, lambda p: (p[..., 2] >= 0) & (p[..., 2] <= step))  # its riser
    if edge is not None and ramp_deg > 0:
        a = math.radians(ramp_deg)  # Z = (Y - edge) tan a: -sin a Y + cos a Z = -sin a edge
        hit([0, -math.sin(a), math.cos(a)], -math.sin(a) * edge, lambda p: p[..., 1] >= edge)
    return best


# The node test's scene: level camera 1.0 m up, its floor ends 2.2 m ahead (39 % of the lower
# view with this lens) and drops 0.8 m, a wall at 5 m; painted at DROP_S for the DA3 test model.
DROP_FX, DROP_S = 600.0, 1.04


def drop_scene():
    """The depth of the node test's scene (metres)."""
    return floor_scene(1.0, 0.0, DROP_FX, edge=2.2, drop=0.8, wall=5.0)


# The grid family: the drop above seen by a landscape 1280x720 camera (F = 500), stretched onto
# the DA3 test model's portrait 504x896 grid (``fit: stretch``), so the model's grid has fx and fy
# 3.2x apart; painted at each of GRID_SCALES (relative depth = truth / s). The scale must come
# out the same with ``output_resolution: model`` and ``input``.
GRID_WIDTH, GRID_HEIGHT, GRID_F = 1280, 720, 500.0
GRID_SCALES = (1.0, 1.02, 1.03, 1.05, 1.06, 1.08, 1.11, 1.14)  # all within the paintable range


def grid_scene() -> np.ndarray:
    """The grid family's depth (metres): camera level 1.0 m up, its floor ends 2.2 m ahead and
    drops 0.8 m, a wall at 5 m."""
    return floor_scene(1.0, 0.0, GRID_F, edge=2.2, drop=0.8, wall=5.0, width=GRID_WIDTH,
                       height=GRID_HEIGHT)


# The steep family: a camera 0.5 m up pitched down 32-38 deg (beyond the default
# ground_max_tilt_deg of 30), at a drop a little ahead. A plane slanted across the two floors is
# within 30 deg of level; the floors themselves are not. Two lenses: the portrait one above and
# a landscape 896x504 (the 1.32x case).
STEEP_HEIGHT = 0.5
STEEP_PITCHES = (32.0, 33.0, 34.0, 35.0, 36.0, 37.0, 38.0)
STEEP_LENSES = ((WIDTH, HEIGHT, 420.0), (HEIGHT, WIDTH, 420.0))
STEEP_DROPS = ((0.3, 0.45), (0.1, 0.45), (0.03, 0.45), (0.3, 0.7))  # (drop, edge ahead), m


def steep_scene(pitch_deg: float, lens: tuple[int, int, float], drop: float = 0.3,
                edge: float | None = 0.45) -> np.ndarray:
    """The steep family's depth (metres); ``edge`` None: a flat floor to the wall at 5 m."""
    width, height, fx = lens
    return floor_scene(STEEP_HEIGHT, pitch_deg, fx, edge=edge, drop=drop if edge else 0.0,
                       wall=5.0, width=width, height=height)


def nearest_floor_seen(h: float, pitch_deg: float, fx: float, height: int) -> float:
    """How far ahead the lowest row of the view meets the floor (m): a drop nearer than this
    leaves the robot's own floor out of view."""
    return h / math.tan(math.radians(pitch_deg) + math.atan((height - 1) / 2.0 / fx))
