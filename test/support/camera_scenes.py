# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Scenes of known geometry filmed through real camera models, for the camera-model tests.

Everything here is written out independently of the package: the distortion formulas
(plumb_bob / rational_polynomial as OpenCV and ROS define them, equidistant as the Kannala-Brandt
model), their inversion (Newton), the ray casting, and the painting. The bundled test models
compute depth as a linear function of colour, so painting each pixel with the colour whose
"depth" is the true Z along that pixel's ray makes the model's output the truth; any error in the
points is then the package's geometry.

``cd test && python -m support.camera_scenes`` prints docs/cameras.md's table (K only, and the
whole CameraInfo) through the pipeline.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace

import numpy as np

from support.model_truth import DA3_BIAS, DA3_WEIGHTS, MEAN, STD
from dense_perception.core.settings.table import Settings

# Depth = bias + w . (r, g, b) with colours in [0, 1] (models/README.md).
TIPS_DEPTH = ((2.0, 1.0, 0.5), 0.5)
# DA3: the same law (model_truth) as weights on colours in [0, 1] and a bias.
DA3_DEPTH = (tuple(float(w / s) for w, s in zip(DA3_WEIGHTS, STD)),
             float(DA3_BIAS - np.sum(DA3_WEIGHTS * MEAN / STD)))


# ---- the scene -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Scene:
    """A tilted plane Z = c + a X + b Y (camera optical frame), optionally with fronto-parallel
    box faces (z, x0, x1, y0, y1) in front of it."""

    a: float = 0.2
    b: float = 0.15
    c: float = 2.0
    boxes: tuple[tuple[float, float, float, float, float], ...] = ()

    def z_along(self, xn: np.ndarray, yn: np.ndarray) -> np.ndarray:
        """True Z where the ray (xn, yn, 1) first meets the scene (inf: never)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            denom = 1.0 - self.a * xn - self.b * yn
            z = np.where(denom > 1e-6, self.c / denom, np.inf)
        for zb, x0, x1, y0, y1 in self.boxes:
            hit = (xn * zb >= x0) & (xn * zb <= x1) & (yn * zb >= y0) & (yn * zb <= y1) & (zb < z)
            z = np.where(hit, zb, z)
        return z

    def plane_distance(self, x: np.ndarray, y: np.ndarray, z: np.ndarray) -> np.ndarray:
        """Distance of points from the plane."""
        return np.abs(z - self.a * x - self.b * y - self.c) / np.sqrt(1 + self.a ** 2 + self.b ** 2)


@dataclass(frozen=True)
class Dome:
    """The inside of a sphere of ``radius`` around the camera: the depth falls off from the
    centre of the view to its edge, the same way on every side."""

    radius: float = 3.0

    def z_along(self, xn: np.ndarray, yn: np.ndarray) -> np.ndarray:
        """True Z where the ray (xn, yn, 1) meets the sphere."""
        return self.radius / np.sqrt(1.0 + xn * xn + yn * yn)


PLANE = Scene()
BOXES = Scene(boxes=((1.4, -0.55, -0.1, -0.25, 0.3), (1.8, 0.25, 0.8, -0.5, 0.05)))


# ---- cameras ---------------------------------------------------------------------------------
@dataclass
class Camera:
    """A calibration as a CameraInfo carries it (full resolution), plus binning and ROI."""

    width: int
    height: int
    k: tuple
    d: tuple = (0.0,) * 5
    distortion_model: str = "plumb_bob"
    p: tuple | None = None  # 3x4; None: P = K
    r: tuple = (1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0)  # raw -> rectified frame
    binning: int = 1
    roi: tuple[int, int, int, int] = (0, 0, 0, 0)  # x, y, w, h (full-resolution pixels)
    name: str = field(default="", compare=False)

    def camera_info(self) -> SimpleNamespace:
        """A CameraInfo-shaped message."""
        k = self.k
        p = self.p or (k[0], 0.0, k[2], 0.0, 0.0, k[4], k[5], 0.0, 0.0, 0.0, 1.0, 0.0)
        x, y, w, h = self.roi
        return SimpleNamespace(
            width=self.width, height=self.height, k=list(k), d=list(self.d),
            distortion_model=self.distortion_model, r=list(self.r),
            p=list(p), binning_x=self.binning, binning_y=self.binning,
            roi=SimpleNamespace(x_offset=x, y_offset=y, width=w, height=h, do_rectify=False))


def k_matrix(fx, cx, cy, fy=None):
    return (fx, 0.0, cx, 0.0, fy or fx, cy, 0.0, 0.0, 1.0)


def p_matrix(fx, cx, cy, fy=None):
    return (fx, 0.0, cx, 0.0, 0.0, fy or fx, cy, 0.0, 0.0, 0.0, 1.0, 0.0)


W, H = 1280, 720
CX, CY = 639.5, 359.5
PINHOLE = Camera(W, H, k_matrix(600.0, CX, CY), name="pinhole, D = 0, P = K")
BARREL = Camera(W, H, k_matrix(600.0, CX + 6.0, CY - 4.0), d=(-0.35, 0.12, 0.0, 0.0, 0.0),
                name="raw, barrel k1=-0.35 k2=0.12, fx 600")
RATIONAL = Camera(W, H, k_matrix(610.0, CX - 5.0, CY + 3.0, fy=605.0),
                  d=(-0.2, 0.05, 0.001, -0.0008, 0.0, 0.1, 0.0, 0.0),
                  distortion_model="rational_polynomial", p=p_matrix(520.0, CX, CY),
                  name="raw, rational_polynomial")
FISHEYE = Camera(W, H, k_matrix(420.0, CX + 3.0, CY + 2.0), d=(0.05, -0.01, 0.003, -0.001),
                 distortion_model="equidistant", p=p_matrix(450.0, CX, CY),
                 name="raw, equidistant (fisheye)")
# A 1920x1080 camera: TIPSv2's 448x448 grid is 2.4 times coarser (area-averaged first).
BARREL_HD = Camera(1920, 1080, k_matrix(900.0, 959.5 + 9.0, 539.5 - 6.0),
                   d=(-0.35, 0.12, 0.0, 0.0, 0.0), name="raw, barrel, 1920x1080")
# image_proc style: K and D of the raw camera, P of the rectified image it publishes.
RECTIFIED = Camera(W, H, k_matrix(600.0, CX, CY), d=(-0.35, 0.12, 0.0, 0.0, 0.0),
                   p=p_matrix(450.0, CX, CY), name="rectified, K fx 600, P fx 450")


# ---- distortion, written out -----------------------------------------------------------------
def distort(camera: Camera, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Normalised ideal (x, y) -> normalised distorted coordinates."""
    d = list(camera.d) + [0.0] * 8
    if camera.distortion_model == "equidistant":
        r = np.hypot(x, y)
        theta = np.arctan(r)
        t2 = theta * theta
        theta_d = theta * (1 + d[0] * t2 + d[1] * t2 ** 2 + d[2] * t2 ** 3 + d[3] * t2 ** 4)
        scale = np.where(r > 1e-12, theta_d / np.maximum(r, 1e-12), 1.0)
        return x * scale, y * scale
    k1, k2, p1, p2, k3, k4, k5, k6 = d[:8]
    r2 = x * x + y * y
    radial = (1 + k1 * r2 + k2 * r2 ** 2 + k3 * r2 ** 3) / (1 + k4 * r2 + k5 * r2 ** 2 + k6 * r2 ** 3)
    return (x * radial + 2 * p1 * x * y + p2 * (r2 + 2 * x * x),
            y * radial + p1 * (r2 + 2 * y * y) + 2 * p2 * x * y)


def undistort(camera: Camera, xd: np.ndarray, yd: np.ndarray, iterations: int = 12
              ) -> tuple[np.ndarray, np.ndarray]:
    """Invert :func:`distort` by Newton's method (numerical Jacobian; 1-D for equidistant,
    where rays at 90 degrees or more from the axis have no (x, y, 1) form: NaN)."""
    if camera.distortion_model == "equidistant":
        k1, k2, k3, k4 = (list(camera.d) + [0.0] * 4)[:4]
        theta_d = np.hypot(xd, yd)
        theta = theta_d.copy()
        for _ in range(iterations):
            t2 = theta * theta
            f = theta * (1 + k1 * t2 + k2 * t2 ** 2 + k3 * t2 ** 3 + k4 * t2 ** 4) - theta_d
            df = 1 + 3 * k1 * t2 + 5 * k2 * t2 ** 2 + 7 * k3 * t2 ** 3 + 9 * k4 * t2 ** 4
            theta = theta - f / df
        scale = np.where(theta_d > 1e-12, np.tan(theta) / np.maximum(theta_d, 1e-12), 1.0)
        scale = np.where(theta < np.radians(85.0), scale, np.nan)
        return xd * scale, yd * scale
    x, y = xd.copy(), yd.copy()
    eps = 1e-7
    for _ in range(iterations):
        fx, fy = distort(camera, x, y)
        ex, ey = fx - xd, fy - yd
        ax, ay = distort(camera, x + eps, y)
        bx, by = distort(camera, x, y + eps)
        j11, j21 = (ax - fx) / eps, (ay - fy) / eps
        j12, j22 = (bx - fx) / eps, (by - fy) / eps
        det = j11 * j22 - j12 * j21
        x = x - (j22 * ex - j12 * ey) / det
        y = y - (-j21 * ex + j11 * ey) / det
    return x, y


def rotation_y(degrees: float) -> tuple:
    """Row-major R turning the raw frame by ``degrees`` about its y axis (a stereo head's)."""
    c, s = np.cos(np.radians(degrees)), np.sin(np.radians(degrees))
    return (c, 0.0, s, 0.0, 1.0, 0.0, -s, 0.0, c)


def raw_pixel_rays(camera: Camera, u: np.ndarray, v: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Normalised ray (x, y, 1) of raw pixels (u, v) (full resolution), in the RECTIFIED frame
    (turned by R, where the scenes are; NaN for a ray behind it)."""
    k = camera.k
    yd = (v - k[5]) / k[4]
    xd = (u - k[2] - k[1] * yd) / k[0]
    x, y = xd, yd
    if any(camera.d):
        x, y = undistort(camera, xd, yd)
        bx, by = distort(camera, x, y)
        assert np.nanmax(np.hypot(bx - xd, by - yd)) * k[0] < 1e-3, "inversion did not converge"
    r = np.array(camera.r, np.float64).reshape(3, 3)
    rays = np.stack([x, y, np.ones_like(x)], axis=-1) @ r.T
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(rays[..., 2] > 0, rays[..., 2], np.nan)
        return rays[..., 0] / z, rays[..., 1] / z


def raw_rays(camera: Camera) -> tuple[np.ndarray, np.ndarray]:
    """Normalised ray of every full-resolution raw pixel centre (rectified frame)."""
    u, v = np.meshgrid(np.arange(camera.width, dtype=np.float64),
                       np.arange(camera.height, dtype=np.float64))
    return raw_pixel_rays(camera, u, v)


def rectified_rays(camera: Camera) -> tuple[np.ndarray, np.ndarray]:
    """Normalised ray of every pixel of the rectified image P describes (image_rect)."""
    p = camera.p or p_matrix(camera.k[0], camera.k[2], camera.k[5], camera.k[4])
    u, v = np.meshgrid(np.arange(camera.width, dtype=np.float64),
                       np.arange(camera.height, dtype=np.float64))
    return (u - p[2]) / p[0], (v - p[6]) / p[5]


# ---- painting ----------------------------------------------------------------------------------
def paint(z: np.ndarray, depth_of_colour=TIPS_DEPTH) -> np.ndarray:
    """rgb8 colours whose model depth is ``z`` (clipped to what the model can say)."""
    (w0, w1, w2), bias = depth_of_colour
    t = np.clip(np.nan_to_num(z, nan=0.0, posinf=0.0), bias, bias + w0 + w1 + w2) - bias
    r = np.clip(np.floor(t / w0 * 255.0), 0, 255)
    t = t - w0 * r / 255.0
    g = np.clip(np.floor(t / w1 * 255.0), 0, 255)
    t = t - w1 * g / 255.0
    b = np.clip(np.rint(t / w2 * 255.0), 0, 255)
    return np.stack([r, g, b], axis=-1).astype(np.uint8)


def bin_and_crop(image: np.ndarray, camera: Camera) -> np.ndarray:
    """What a camera with ROI and binning delivers from a full-resolution frame (REP 104)."""
    x, y, w, h = camera.roi
    if w and h:
        image = image[y:y + h, x:x + w]
    n = camera.binning
    if n > 1:
        hh, ww = image.shape[0] // n * n, image.shape[1] // n * n
        image = image[:hh, :ww].reshape(hh // n, n, ww // n, n, -1).mean(axis=(1, 3))
        image = np.rint(image).astype(np.uint8)
    return image


def film(camera: Camera, scene: Scene, rectified: bool = False,
         depth_of_colour=TIPS_DEPTH) -> np.ndarray:
    """The rgb8 frame ``camera`` delivers of ``scene``: raw (distorted) or rectified by P."""
    xn, yn = rectified_rays(camera) if rectified else raw_rays(camera)
    return bin_and_crop(paint(scene.z_along(xn, yn), depth_of_colour), camera)


# ---- scoring -----------------------------------------------------------------------------------
def ray_errors(points: np.ndarray, scene: Scene) -> np.ndarray:
    """Distance of each point from where its own ray meets the scene (metres)."""
    x, y, z = (points[n].astype(np.float64) for n in ("x", "y", "z"))
    xn, yn = x / z, y / z
    zt = scene.z_along(xn, yn)
    return np.abs(z - zt) * np.sqrt(xn * xn + yn * yn + 1.0)


def depth_image_proc_points(depth: np.ndarray, p: list[float]) -> np.ndarray:
    """depth_image_proc ``convertDepth`` for 32FC1 (conversions.hpp), organised, float32:
    center_x = P[0,2] (image_geometry ``cx()``), constant_x = 1 / P[0,0], NaN for invalid."""
    center_x, center_y = np.float32(p[2]), np.float32(p[6])
    constant_x, constant_y = np.float32(1.0 / p[0]), np.float32(1.0 / p[5])
    out = np.full(depth.shape + (3,), np.nan, np.float32)
    u = np.arange(depth.shape[1], dtype=np.float32)
    for v in range(depth.shape[0]):  # one image row at a time, as the C++ loop walks it
        d = depth[v].astype(np.float32)
        ok = np.isfinite(d)
        out[v, ok, 0] = (u[ok] - center_x) * d[ok] * constant_x
        out[v, ok, 1] = (np.float32(v) - center_y) * d[ok] * constant_y
        out[v, ok, 2] = d[ok]
    return out


def main() -> None:
    """docs/cameras.md's table: K only (no rectification) and the whole CameraInfo, through the
    pipeline."""
    from pathlib import Path
    from dense_perception.core.geometry.camera_model import CameraModel
    from dense_perception.core.geometry.intrinsics import Intrinsics
    from dense_perception.core.pipeline import load_pipeline
    from dense_perception.core.frame_data import Request
    model = str(Path(__file__).resolve().parents[2] / "models" / "test_tipsv2_b14_dpt.tflite")
    pipeline = load_pipeline(model, Settings(backend="cpu"), log=lambda _: None)
    print("| case | before, p95 | after, p95 |\n|---|---|---|")
    for camera, rectified in ((PINHOLE, False), (BARREL, False), (FISHEYE, False),
                              (RECTIFIED, True)):
        frame = film(camera, PLANE, rectified)
        info = camera.camera_info()
        before = Intrinsics.from_k(info.k, info.width, info.height)
        after = CameraModel.from_camera_info(info, input_rectified=rectified)
        row = []
        for cam in (before, after):
            products = pipeline.process(frame, "rgb8", cam, Request(points=True))
            pts = products.points
            row.append(np.percentile(PLANE.plane_distance(pts["x"], pts["y"], pts["z"]), 95))
        print(f"| {camera.name} | {row[0] * 1000:.1f} mm | {row[1] * 1000:.1f} mm |")


if __name__ == "__main__":
    main()
