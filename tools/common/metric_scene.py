# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Scenes with known metric depth, and frames that make the DA3 test model output depth / s.

Used by the metric-scale tests and by ``make bench`` (the cost of the scale estimators).

Geometry (camera optical frame, REP 103: x right, y down, z forward): a camera ``height`` metres
above a flat floor, pitched down by ``pitch_deg``, a wall facing it ``wall`` metres ahead
(horizontally), optionally a box on the floor. Depth is z (REP 118), computed per pixel centre
by intersecting each ray with every surface, written out here independently of the package.

The DA3 test model outputs ``3 + 0.5 x0 + 0.25 x1 + 0.125 x2`` of the ImageNet-normalised
channels (models/README.md), an affine function of the 8-bit colour. :func:`paint` inverts it:
red carries the coarse part, green and blue the rest, so any relative depth between
:data:`REL_MIN` and :data:`REL_MAX` is painted to within 0.0011.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

MEAN = np.array([0.485, 0.456, 0.406])
STD = np.array([0.229, 0.224, 0.225])
WEIGHTS = np.array([0.5, 0.25, 0.125])
GAIN = WEIGHTS / (255.0 * STD)               # model output per colour step, per channel
BASE = 3.0 - float(np.sum(WEIGHTS * MEAN / STD))  # output for black
REL_MIN, REL_MAX = BASE + 0.01, BASE + 255 * float(GAIN.sum()) - 0.01
WIDTH, HEIGHT = 504, 896                     # the DA3 model's own input: no resampling


def da3_output_of(rgb8: np.ndarray) -> np.ndarray:
    """What the DA3 test model outputs for an 8-bit RGB frame (its formula)."""
    return BASE + rgb8.astype(np.float64) @ GAIN


def paint(relative: np.ndarray) -> np.ndarray:
    """An rgb8 frame whose DA3 test-model depth is ``relative`` (H x W, within the range)."""
    if np.nanmin(relative) < REL_MIN or np.nanmax(relative) > REL_MAX:
        raise ValueError(f"relative depth {np.nanmin(relative):.3f}..{np.nanmax(relative):.3f} "
                         f"is outside what the test model can output "
                         f"({REL_MIN:.3f}..{REL_MAX:.3f})")
    rest = relative - BASE
    rgb = np.zeros(relative.shape + (3,), np.uint8)
    for c in range(3):
        last = c == 2
        steps = np.clip(np.rint(rest / GAIN[c]) if last else np.floor(rest / GAIN[c]), 0, 255)
        rgb[..., c] = steps
        rest = rest - steps * GAIN[c]
    return rgb


@dataclass(frozen=True)
class Scene:
    height: float          # camera above the floor (m)
    pitch_deg: float       # camera pitched down
    wall: float            # horizontal distance to the wall ahead (m)
    fx: float = 420.0
    box: tuple[float, float, float, float, float] | None = None  # x0, x1, near, far, box height

    @property
    def cx(self) -> float:
        return (WIDTH - 1) / 2.0

    @property
    def cy(self) -> float:
        return (HEIGHT - 1) / 2.0

    def down(self) -> np.ndarray:
        """The world's down direction in the camera frame (the floor's normal, away from us)."""
        p = math.radians(self.pitch_deg)
        return np.array([0.0, math.cos(p), math.sin(p)])

    def forward(self) -> np.ndarray:
        """The horizontal forward direction (the wall's normal) in the camera frame."""
        p = math.radians(self.pitch_deg)
        return np.array([0.0, -math.sin(p), math.cos(p)])

    def rays(self) -> np.ndarray:
        """H x W x 3 rays (x/z, y/z, 1) through the pixel centres."""
        u, v = np.meshgrid(np.arange(WIDTH), np.arange(HEIGHT))
        return np.stack([(u - self.cx) / self.fx, (v - self.cy) / self.fx,
                         np.ones(u.shape)], axis=-1)

    def depth_and_surface(self) -> tuple[np.ndarray, np.ndarray]:
        """Metric z per pixel and which surface it is on (0 floor, 1 wall, 2 box)."""
        r = self.rays()
        down, fwd = self.down(), self.forward()
        rd, rf = r @ down, r @ fwd
        with np.errstate(divide="ignore", invalid="ignore"):
            t_floor = np.where(rd > 1e-9, self.height / rd, np.inf)
            t_wall = np.where(rf > 1e-9, self.wall / rf, np.inf)
        t = np.minimum(t_floor, t_wall)
        surface = np.where(t_floor <= t_wall, 0, 1)
        if self.box is not None:
            x0, x1, near, far, bh = self.box
            with np.errstate(divide="ignore", invalid="ignore"):
                t_front = np.where(rf > 1e-9, near / rf, np.inf)
                t_top = np.where(rd > 1e-9, (self.height - bh) / rd, np.inf)
            for tb in (t_front, t_top):
                with np.errstate(invalid="ignore"):
                    p = r * tb[..., None]
                    x, h_below, ahead = p[..., 0], p @ down, p @ fwd
                hit = ((x >= x0) & (x <= x1) & (h_below >= self.height - bh - 1e-9)
                       & (h_below <= self.height + 1e-9) & (ahead >= near - 1e-9)
                       & (ahead <= far + 1e-9) & (tb < t))
                t = np.where(hit, tb, t)
                surface = np.where(hit, 2, surface)
        return t.astype(np.float64), surface

    def fitting_scale(self, margin: float = 0.02) -> tuple[float, float]:
        """The range of s for which depth / s fits the test model's output range."""
        z, _ = self.depth_and_surface()
        low, high = z.max() / (REL_MAX - margin), z.min() / (REL_MIN + margin)
        if low > high:
            raise ValueError("scene depth range is wider than the test model can paint")
        return low, high


# The scenes of the metric-scale tests: a level camera facing a wall, and a pitched one with a box.
FORWARD = Scene(height=1.2, pitch_deg=0.0, wall=3.0)
PITCHED_WITH_BOX = Scene(height=0.6, pitch_deg=20.0, wall=1.6, box=(-0.3, 0.1, 0.8, 1.0, 0.2))
# A desk in front of the robot (camera 1.0 m up, desk top 0.4 m below it, wall at 4 m, a narrower
# lens): its top covers 25 % of the lower view, more than the floor beside it (17 %); its front
# face 37 %. Taking the desk for the floor puts everything 2.5x too far.
DESK_BESIDE_FLOOR = Scene(height=1.0, pitch_deg=0.0, wall=4.0, fx=600.0,
                          box=(-0.22, 5.0, 1.05, 4.0, 0.6))
# The same desk across the whole view: no floor anywhere. Its top holds 38 % of the lower view,
# its front face (beneath the top, down past the bottom of the view) 49 %.
DESK_ONLY = Scene(height=1.0, pitch_deg=0.0, wall=4.0, fx=600.0, box=(-5.0, 5.0, 1.05, 4.0, 0.6))


def sparse_reference(z, fraction, outliers, rng, shape=None):
    """Metric depth at ``fraction`` of the pixels, ``outliers`` of them replaced by junk."""
    ref = np.full(z.shape, np.nan, np.float32)
    idx = rng.choice(z.size, int(fraction * z.size), replace=False)
    values = z.ravel()[idx].copy()
    bad = rng.random(len(idx)) < outliers
    values[bad] = rng.uniform(0.2, 10.0, bad.sum())
    ref.ravel()[idx] = values
    return ref, bad.mean()
