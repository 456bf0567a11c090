# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Odometry-like poses from a true trajectory, the way a robot has them: each pose late, each
step a little long, and jitter that accumulates (``--pose-noise SEED`` of the sequence tools).

The model (seeded, so a table can be made again): the pose of ``t + delay`` stamped ``t``
(interpolated along the true trajectory), then every step between consecutive poses made
``long`` too long, with ``jitter_m`` of translation (a random direction) and ``jitter_deg`` of
rotation (a random axis) added, integrated from the first pose (dead reckoning: the errors
add up, as wheel odometry's and VIO's do).
"""

from __future__ import annotations

import math

import cv2
import numpy as np

from dense_perception.core.motion.pose import interpolate

LONG = 0.02          # each step 2 % too long
JITTER_M = 0.001     # m of random translation per step
JITTER_DEG = 0.1     # deg of random rotation per step
DELAY_S = 0.020      # the pose of t + 20 ms stamped t


def late(poses: list[np.ndarray], stamps: list[float], delay: float) -> list[np.ndarray]:
    """The true pose at each stamp + ``delay`` (interpolated; held at the ends)."""
    out = []
    for t in stamps:
        when = t + delay
        j = int(np.clip(np.searchsorted(stamps, when, side="right") - 1, 0, len(stamps) - 2))
        span = stamps[j + 1] - stamps[j]
        alpha = float(np.clip((when - stamps[j]) / span if span > 0 else 0.0, 0.0, 1.0))
        out.append(interpolate(poses[j], poses[j + 1], alpha))
    return out


def odometry_like(poses: list[np.ndarray], stamps: list[float], seed: int,
                  long: float = LONG, jitter_m: float = JITTER_M,
                  jitter_deg: float = JITTER_DEG, delay: float = DELAY_S) -> list[np.ndarray]:
    """``poses`` (4x4 camera-to-world at ``stamps``) as odometry gives them (module docstring)."""
    rng = np.random.default_rng(seed)
    shifted = late(poses, stamps, delay) if len(poses) > 1 else list(poses)
    out = [shifted[0].copy()]
    for before, after in zip(shifted, shifted[1:]):
        step = np.linalg.inv(before) @ after
        direction = rng.normal(size=3)
        step[:3, 3] = step[:3, 3] * (1.0 + long) + \
            jitter_m * direction / max(np.linalg.norm(direction), 1e-12)
        axis = rng.normal(size=3)
        axis *= math.radians(jitter_deg) / max(np.linalg.norm(axis), 1e-12)
        turn, _ = cv2.Rodrigues(axis)
        step[:3, :3] = step[:3, :3] @ turn
        out.append(out[-1] @ step)
    return out
