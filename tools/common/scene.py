# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The generated sample scene and its camera, shared by the demo, the benchmark and the soak."""

from __future__ import annotations

import cv2
import numpy as np

from dense_perception.core.geometry.intrinsics import Intrinsics

SCENE_SIZE = (1280, 720)  # width, height
SCENE_HFOV_DEG = 70.0


def make_sample_scene(width: int = SCENE_SIZE[0], height: int = SCENE_SIZE[1]) -> np.ndarray:
    """A deterministic H x W x 3 rgb8 scene: sky gradient, a floor with a perspective grid, and
    coloured boxes and circles that shrink with distance toward the horizon."""
    horizon = int(height * 0.42)
    vanish = (width // 2, horizon)
    scene = np.empty((height, width, 3), np.uint8)
    t = np.linspace(0.0, 1.0, horizon)[:, None, None]
    scene[:horizon] = (np.array([70, 130, 210]) * (1 - t) + np.array([200, 225, 245]) * t)
    t = np.linspace(0.0, 1.0, height - horizon)[:, None, None]
    scene[horizon:] = (np.array([120, 110, 95]) * (1 - t) + np.array([185, 170, 150]) * t)
    _draw_floor_grid(scene, horizon, vanish)
    _draw_objects(scene, horizon)
    return scene


def _draw_floor_grid(scene: np.ndarray, horizon: int, vanish: tuple[int, int]) -> None:
    """Lines converging at the vanishing point and cross lines spaced as 1/distance."""
    height, width = scene.shape[:2]
    colour = (70, 65, 55)
    for x in np.linspace(-2 * width, 3 * width, 21):
        cv2.line(scene, vanish, (int(x), height - 1), colour, 2, cv2.LINE_AA)
    for z in (1.0, 1.5, 2.2, 3.2, 4.6, 6.5, 9.5, 14.0):
        y = horizon + int((height - horizon) / z)
        cv2.line(scene, (0, y), (width - 1, y), colour, 2, cv2.LINE_AA)
    scene[horizon - 1:horizon + 1] = (90, 90, 90)


def _draw_objects(scene: np.ndarray, horizon: int) -> None:
    """Boxes and circles standing on the floor; nearer ones are lower and larger."""
    height, width = scene.shape[:2]
    floor = height - horizon
    # (centre x as a fraction of the width, distance, rgb colour, "box" | "circle")
    objects = [(0.47, 6.0, (60, 170, 80), "circle"), (0.12, 4.0, (230, 200, 40), "box"),
               (0.62, 2.6, (50, 90, 210), "box"), (0.36, 1.7, (210, 60, 50), "circle"),
               (0.86, 1.3, (200, 80, 190), "box")]
    for fx, dist, rgb, shape in sorted(objects, key=lambda o: -o[1]):  # far ones first
        base = horizon + int(floor / dist)
        size = int(0.9 * floor / dist)
        cx = int(fx * width)
        cv2.ellipse(scene, (cx, base), (size // 2 + 6, max(size // 12, 3)), 0, 0, 360,
                    (80, 75, 65), -1, cv2.LINE_AA)  # shadow
        if shape == "box":
            top = base - size
            cv2.rectangle(scene, (cx - size // 2, top), (cx + size // 2, base), rgb, -1)
            side = tuple(int(c * 0.7) for c in rgb)
            depth_px = size // 5
            pts = np.array([(cx + size // 2, top), (cx + size // 2 + depth_px, top - depth_px),
                            (cx + size // 2 + depth_px, base - depth_px), (cx + size // 2, base)])
            cv2.fillConvexPoly(scene, pts, side, cv2.LINE_AA)
            lid = tuple(min(int(c * 1.2) + 20, 255) for c in rgb)
            pts = np.array([(cx - size // 2, top), (cx - size // 2 + depth_px, top - depth_px),
                            (cx + size // 2 + depth_px, top - depth_px), (cx + size // 2, top)])
            cv2.fillConvexPoly(scene, pts, lid, cv2.LINE_AA)
        else:
            cv2.circle(scene, (cx, base - size // 2), size // 2, rgb, -1, cv2.LINE_AA)
            hi = tuple(min(int(c * 1.3) + 40, 255) for c in rgb)
            cv2.circle(scene, (cx - size // 7, base - size // 2 - size // 7), size // 6, hi, -1,
                       cv2.LINE_AA)


def scene_intrinsics(width: int = SCENE_SIZE[0], height: int = SCENE_SIZE[1]) -> Intrinsics:
    """A distortion-free pinhole camera for the scene, principal point at the image centre."""
    return Intrinsics.from_hfov(width, height, SCENE_HFOV_DEG)
