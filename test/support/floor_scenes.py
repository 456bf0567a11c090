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
