# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The real RGB-D frames and the real depth network of ``../shared/real-scenes`` (its README).

What tests and ``tools/eval/real.py`` share: where the data is, each frame's intrinsics and depth
units, and the floor's distance measured on the frame's *measured* depth, independently of the
package (a floor region chosen by hand per frame, and a least-squares plane written out here with
numpy; nothing from ``dense_perception.core``).

The data is read in place and never copied into the repository.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from dense_perception.core.geometry.intrinsics import Intrinsics

ROOT = Path(__file__).resolve().parents[2]
REAL_SCENES = (ROOT.parent / "shared" / "real-scenes").resolve()
PYDNET = REAL_SCENES / "models" / "pydnet_pp_448x640.tflite"
# FastDepth (Wofk et al.), trained on NYU Depth v2: metric depth, NCHW 224x224, RGB / 255.
FASTDEPTH = REAL_SCENES / "models" / "fastdepth" / "fastdepth_224_fp32.tflite"
SOURCES = {
    "nyu": "NYU Depth v2 (Silberman et al., ECCV 2012), via the Metric3D repository's demo data",
    "tum": "TUM RGB-D benchmark (Sturm et al., IROS 2012, CC BY 4.0), via Open3D's test data",
    "pydnet": "PyD-Net++ (Poggi et al.; FilippoAleotti/mobilePydnet, Apache-2.0), "
              "trained on Matterport3D",
}
NYU_K = (518.8579, 519.46961, 325.58245, 253.73617)
TUM_K = (525.0, 525.0, 319.5, 239.5)  # PrimeSense default: the sequence is not recorded


@dataclass(frozen=True)
class RealFrame:
    """One RGB-D frame: colour, measured depth (uint16 / ``depth_per_metre``, 0 = none),
    intrinsics, and a floor region ``(u0, v0, u1, v1)`` (pixels, end exclusive) chosen by hand
    on the colour image: bare floor only, no furniture, feet or cables."""

    name: str
    rgb_file: str
    depth_file: str
    depth_per_metre: float
    k: tuple[float, float, float, float]   # fx, fy, cx, cy
    floor_box: tuple[int, int, int, int]

    def rgb(self) -> np.ndarray:
        """H x W x 3 uint8 RGB."""
        bgr = cv2.imread(str(REAL_SCENES / self.rgb_file), cv2.IMREAD_COLOR)
        if bgr is None:
            raise FileNotFoundError(REAL_SCENES / self.rgb_file)
        return cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)

    def depth(self) -> np.ndarray:
        """H x W float32 metres, NaN where the sensor measured nothing."""
        raw = cv2.imread(str(REAL_SCENES / self.depth_file), cv2.IMREAD_UNCHANGED)
        if raw is None or raw.dtype != np.uint16:
            raise FileNotFoundError(f"{REAL_SCENES / self.depth_file}: no uint16 depth")
        depth = raw.astype(np.float32) / np.float32(self.depth_per_metre)
        depth[raw == 0] = np.nan
        return depth


FRAMES = (
    # Basement; bare concrete across the bottom rows, left of the chair, right of the pole.
    RealFrame("nyu_00000", "nyu/rgb_00000.jpg", "nyu/sync_depth_00000.png", 1000.0, NYU_K,
              (120, 405, 580, 465)),
    # Basement corridor; the floor below the hose and the crate.
    RealFrame("nyu_00050", "nyu/rgb_00050.jpg", "nyu/sync_depth_00050.png", 1000.0, NYU_K,
              (160, 420, 600, 468)),
    # The wardrobe and the pole; the floor in front of them, left of the pole.
    RealFrame("nyu_00100", "nyu/rgb_00100.jpg", "nyu/sync_depth_00100.png", 1000.0, NYU_K,
              (90, 440, 400, 472)),
    # Office desk (raw Kinect, holes); the floor between the two chairs.
    RealFrame("tum", "tum/TUM_color.png", "tum/TUM_depth.png", 5000.0, TUM_K,
              (250, 390, 370, 470)),
)


def available() -> bool:
    """Whether ``../shared/real-scenes`` is here (the arm64 CI chroot may not have it)."""
    return (REAL_SCENES / "README.md").is_file() and PYDNET.is_file()


def back_project(depth: np.ndarray, k: tuple[float, float, float, float],
                 box: tuple[int, int, int, int] | None = None) -> np.ndarray:
    """N x 3 points X = (u - cx) / fx * Z, Y = (v - cy) / fy * Z, Z of the valid pixels
    (of ``box`` when given), camera optical frame."""
    fx, fy, cx, cy = k
    u0, v0, u1, v1 = box or (0, 0, depth.shape[1], depth.shape[0])
    v, u = np.mgrid[v0:v1, u0:u1]
    z = depth[v0:v1, u0:u1].astype(np.float64)
    seen = np.isfinite(z) & (z > 0)
    z, u, v = z[seen], u[seen], v[seen]
    return np.stack([(u - cx) / fx * z, (v - cy) / fy * z, z], axis=1)


@dataclass(frozen=True)
class Floor:
    """A least-squares plane n . p = distance (unit n, toward the floor) and its fit."""

    normal: np.ndarray
    distance: float     # metres from the optical centre: the camera's height above the floor
    rms: float          # metres, of the inliers' residuals
    inlier_share: float
    points: int


def floor_plane(depth: np.ndarray, frame: RealFrame, band: float = 0.03) -> Floor:
    """The floor of ``frame.floor_box`` in ``depth`` (metres): total least squares (the
    smallest singular vector of the centred points), refitted twice on the points within
    ``band`` metres of the previous plane, so that a stray pebble or a hole's edge does not tilt it.
    """
    points = back_project(depth, frame.k, frame.floor_box)
    keep = np.ones(len(points), bool)
    for _ in range(3):
        centre = points[keep].mean(axis=0)
        normal = np.linalg.svd(points[keep] - centre, full_matrices=False)[2][2]
        distance = float(normal @ centre)
        if distance < 0:
            normal, distance = -normal, -distance
        residual = points @ normal - distance
        keep = np.abs(residual) < band
    rms = float(np.sqrt(np.mean(residual[keep] ** 2)))
    return Floor(normal, distance, rms, float(keep.mean()), len(points))


def oracle_scale(truth: np.ndarray, relative: np.ndarray) -> float:
    """The best single scale for ``relative`` depth: the median of truth / relative where both
    are valid (the usual median scaling of monocular depth evaluation)."""
    both = np.isfinite(truth) & (truth > 0) & np.isfinite(relative) & (relative > 0)
    return float(np.median(truth[both] / relative[both]))


def depth_errors(truth: np.ndarray, depth: np.ndarray) -> dict[str, float]:
    """AbsRel = mean |d - t| / t, delta1 = share with max(d / t, t / d) < 1.25, and the scale
    error = median(d / t) - 1, over the pixels with a valid truth and a valid estimate
    (``coverage``: that share of the pixels with a valid truth)."""
    seen = np.isfinite(truth) & (truth > 0)
    both = seen & np.isfinite(depth) & (depth > 0)
    t, d = truth[both].astype(np.float64), depth[both].astype(np.float64)
    ratio = d / t
    return {"absrel": float(np.mean(np.abs(d - t) / t)),
            "delta1": float(np.mean(np.maximum(ratio, 1.0 / ratio) < 1.25)),
            "scale_error": float(np.median(ratio) - 1.0),
            "coverage": float(both.sum() / max(1, seen.sum()))}


def sparse_reference(truth: np.ndarray, share: float = 0.01, seed: int = 0) -> np.ndarray:
    """A LiDAR-like reference: ``share`` of the measured pixels drawn at random (fixed ``seed``),
    NaN elsewhere (float32 metres, the reference_depth topic's 32FC1)."""
    rng = np.random.default_rng(seed)
    reference = np.full(truth.shape, np.nan, np.float32)
    seen = np.flatnonzero(np.isfinite(truth) & (truth > 0))
    drawn = rng.choice(seen, size=max(1, int(round(share * seen.size))), replace=False)
    reference.flat[drawn] = truth.flat[drawn]
    return reference


def frame_intrinsics(frame: "RealFrame", width: int, height: int) -> Intrinsics:
    """A real frame's pinhole intrinsics on an image ``width`` x ``height``."""
    fx, fy, cx, cy = frame.k
    return Intrinsics(fx, fy, cx, cy, width, height)
