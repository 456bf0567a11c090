# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""A street seen from a car, with known metric depth: the ground plane's outdoor case.

World frame: X right, Y up, Z forward (horizontal); the camera ``height`` above the road,
pitched down by ``pitch_deg``. Surfaces: the road (Y = 0) up to a kerb at X = ``kerb_x``, the
kerb's face, the raised pavement beyond it (Y = ``kerb_height``), building fronts on both
sides and far ahead, and cars (axis-aligned boxes on the road). Depth is z of the camera's
optical frame (REP 118) per pixel centre, by intersecting each ray with every surface, written
out here independently of the package.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

Box = tuple[float, float, float, float, float]  # x0, x1, z0, z1, height (on the road)


@dataclass(frozen=True)
class Street:
    height: float = 1.5              # camera above the road (m)
    pitch_deg: float = 3.0           # camera pitched down
    kerb_x: float = 2.5              # the kerb's line, right of the camera (m)
    kerb_height: float = 0.15        # the pavement above the road (m)
    left_building: float = -9.0      # building fronts (X, m)
    right_building: float = 6.0
    far: float = 80.0                # the street's end ahead (Z, m)
    cars: tuple[Box, ...] = ((-1.0, 1.0, 9.0, 13.5, 1.5),    # ahead in the lane
                             (-4.2, -2.4, 4.0, 8.5, 1.5),    # parked, left
                             (-4.2, -2.4, 10.0, 14.5, 1.6))  # parked, left, further on
    width: int = 640
    height_px: int = 480
    fx: float = 500.0

    def rays_world(self) -> np.ndarray:
        """H x W x 3 rays through the pixel centres (camera z = 1), in world axes."""
        u, v = np.meshgrid(np.arange(self.width), np.arange(self.height_px))
        cx, cy = (self.width - 1) / 2.0, (self.height_px - 1) / 2.0
        x, y = (u - cx) / self.fx, (v - cy) / self.fx
        p = math.radians(self.pitch_deg)
        # optical (x right, y down, z forward) -> world (X right, Y up, Z forward), pitched down
        up = -y * math.cos(p) - math.sin(p)
        forward = math.cos(p) - y * math.sin(p)
        return np.stack([x, up, forward], axis=-1)

    def depth(self) -> tuple[np.ndarray, np.ndarray]:
        """(metric z per pixel, the surface hit: 0 road, 1 pavement, 2 kerb, 3 building,
        4 car)."""
        r = self.rays_world()
        origin = np.array([0.0, self.height, 0.0])
        best = np.full(r.shape[:2], np.inf)
        surface = np.full(r.shape[:2], -1)

        def hit(t: np.ndarray, ok: np.ndarray, kind: int) -> None:
            nonlocal best, surface
            take = ok & (t > 1e-6) & (t < best)
            best = np.where(take, t, best)
            surface = np.where(take, kind, surface)

        with np.errstate(divide="ignore", invalid="ignore"):
            t = (0.0 - origin[1]) / r[..., 1]  # the road
            hit(t, origin[0] + t * r[..., 0] < self.kerb_x, 0)
            t = (self.kerb_height - origin[1]) / r[..., 1]  # the pavement
            hit(t, origin[0] + t * r[..., 0] >= self.kerb_x, 1)
            t = (self.kerb_x - origin[0]) / r[..., 0]  # the kerb's face
            y = origin[1] + t * r[..., 1]
            hit(t, (y >= 0.0) & (y <= self.kerb_height), 2)
            for x_front in (self.left_building, self.right_building):
                hit((x_front - origin[0]) / r[..., 0], np.ones(best.shape, bool), 3)
            hit((self.far - origin[2]) / r[..., 2], np.ones(best.shape, bool), 3)
            for x0, x1, z0, z1, h in self.cars:  # slabs
                lo = np.stack([(x0 - origin[0]) / r[..., 0], (0.0 - origin[1]) / r[..., 1],
                               (z0 - origin[2]) / r[..., 2]], -1)
                hi = np.stack([(x1 - origin[0]) / r[..., 0], (h - origin[1]) / r[..., 1],
                               (z1 - origin[2]) / r[..., 2]], -1)
                near = np.nanmax(np.minimum(lo, hi), -1)
                far = np.nanmin(np.maximum(lo, hi), -1)
                hit(near, near <= far, 4)
        # t along a ray whose optical z is 1 is the optical z itself
        return best, surface
