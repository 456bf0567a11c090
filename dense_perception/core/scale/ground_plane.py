# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The floor in relative depth: sampling the lower view and a RANSAC for its level planes.

DA3's relative depth x the camera rays is a point cloud right up to one factor, so the floor in
it is a plane at some distance d from the optical centre, and ``camera_height`` / d is metres
per unit (``metric_scale.ground_plane_scale``). Here only the geometry, without units; which of
the level planes is the floor the robot stands on is :mod:`.robot_floor`'s job.

Half the candidates are drawn from points near each other in the image (a few grid cells
apart), so that a floor holding only 15-20 % of the lower view next to a larger desk is still
drawn: three points drawn anywhere all lie on it with probability 0.2^3.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..geometry.intrinsics import Intrinsics

GROUND_SAMPLE_POINTS = 2000   # about this many points of the lower view go to the RANSAC
GROUND_ITERATIONS = 256       # candidate planes, scored all at once
GROUND_LOCAL_RADIUS = 3       # grid cells: the reach of the locally drawn candidates
GROUND_INLIER_TOLERANCE = 0.04  # inlier band, as a fraction of the plane's distance
GROUND_MIN_BAND = 0.005       # the refinement's band never narrows below this (0.5 % of d)
GROUND_REFINE_ROUNDS = 4      # least-squares refits, each on the points of a narrowed band
GROUND_MIN_SHARE = 0.15       # default share of the points a lower plane needs
GROUND_LEVELS = 3             # level planes found, at most
LOCAL_ACROSS = 0.5           # |cos| of a point's own surface normal to a plane's: 60 deg off
LOCAL_ACROSS_SHARE = 0.2     # a plane with more of its points on surfaces across it is a wedge
SURFACE_TILT_DEG = 10.0      # a plane whose points' surfaces face farther off spans a step/drop
SAME_TILT_DEG = 3.0          # candidates this close to a plane across surfaces go with it


def lower_view_samples(depth: np.ndarray, k: Intrinsics, lower_fraction: float = 0.5,
                       max_points: int = GROUND_SAMPLE_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """(N x 3 back-projected points, N x 2 grid cells (row, column)) of the lower
    ``lower_fraction`` of the view, valid depth only, in row-major order.

    Sampled on a grid that is regular in the camera's rays, not its pixels, so that about
    ``max_points`` come back and the same rays are sampled whatever the grid's size and pixel
    aspect (a frame stretched onto a model's grid has fx and fy far apart).
    """
    h, w = depth.shape
    top = int(h * (1.0 - lower_fraction))
    step = math.sqrt((h - top) / k.fy * w / k.fx / max_points)  # rad, between samples
    v, u = np.mgrid[top:h:max(1, int(step * k.fy)), 0:w:max(1, int(step * k.fx))]
    cells = np.stack(np.mgrid[0:v.shape[0], 0:v.shape[1]], axis=-1).reshape(-1, 2)
    z = depth[v, u].ravel()
    keep = np.isfinite(z) & (z > 0)
    z, u, v = z[keep], u.ravel()[keep], v.ravel()[keep]
    points = np.stack([(u - k.cx) / k.fx * z, (v - k.cy) / k.fy * z, z], axis=1)
    return points, cells[keep]


def ground_points(depth: np.ndarray, k: Intrinsics, lower_fraction: float = 0.5,
                  max_points: int = GROUND_SAMPLE_POINTS) -> np.ndarray:
    """N x 3 back-projected points of the lower view (see :func:`lower_view_samples`)."""
    return lower_view_samples(depth, k, lower_fraction, max_points)[0]


def _draw_triples(n_points: int, iterations: int, cells: np.ndarray | None,
                  rng: np.random.Generator) -> np.ndarray:
    """iterations x 3 point indices: half anywhere, half (with ``cells``) a random point and two
    within :data:`GROUND_LOCAL_RADIUS` grid cells of it (a random point where none is valid)."""
    idx = rng.integers(0, n_points, size=(iterations, 3))
    if cells is None:
        return idx
    local = iterations // 2
    table = np.full(tuple(cells.max(axis=0) + 1), -1, np.int64)  # grid cell -> point index
    table[cells[:, 0], cells[:, 1]] = np.arange(n_points)
    r = GROUND_LOCAL_RADIUS
    near = cells[idx[:local, :1]] + rng.integers(-r, r + 1, size=(local, 2, 2))
    near = np.minimum(np.maximum(near, 0), np.array(table.shape) - 1)
    found = table[near[..., 0], near[..., 1]]
    idx[:local, 1:] = np.where(found >= 0, found, idx[:local, 1:])
    return idx


@dataclass(frozen=True)
class Plane:
    """A level plane n . p = d of the lower view (n unit, from the camera towards the plane)."""

    normal: np.ndarray
    d: float
    share: float        # of the lower view's points within the inlier band


def plane_offset(points: np.ndarray, normal: np.ndarray, d: float) -> np.ndarray:
    """Each point's signed offset from the plane n . p = d, as a fraction of d: 0 on it,
    positive beneath it (farther along n). einsum, not @: an inner size of 3 through BLAS costs
    more than it computes (see the scoring in :func:`level_planes`)."""
    return np.einsum("ij,j->i", points, normal) / d - 1.0


def level_planes(points: np.ndarray, max_tilt_deg: float = 30.0,
                 tolerance: float = GROUND_INLIER_TOLERANCE,
                 iterations: int = GROUND_ITERATIONS, seed: int = 0, *,
                 cells: np.ndarray | None = None, min_share: float = GROUND_MIN_SHARE,
                 min_points: int = 30, rejected: list[str] | None = None) -> list[Plane]:
    """RANSAC for the level planes of the lower view, largest first (at most
    :data:`GROUND_LEVELS`).

    Points p on a plane satisfy n . p = d, with n pointing from the camera to the plane
    (optical frame: +y is down). Candidates whose normal is more than ``max_tilt_deg`` from +y
    (walls, the ceiling) are rejected before scoring. Inliers lie within ``tolerance`` x d of
    the plane (a scale-free band). Every candidate is scored at once (one N x iterations
    matrix). ``cells`` (the points' grid cells, :func:`lower_view_samples`) lets half the
    candidates be drawn locally (module doc).

    The first plane is the candidate fitting most inliers closest (MSAC weights); each next one
    the candidate doing so for the points no plane found so far holds, while it holds at least
    ``min_share`` of all points (and ``min_points``). Each takes the largest plane of what is
    left, so a candidate that merely cuts across a desk's edge (a wedge of its top and its front
    face) never wins. A plane whose points lie on surfaces facing another way (across a riser;
    slanted across a step or a drop, :func:`_surface_problem`) is dropped with the candidates
    like it; ``rejected`` (when given) gets a note for each slanted one.

    Each chosen candidate is refined by least squares (SVD), each round on the points within a
    band narrowed to the floor's own scatter: 3 robust standard deviations (1.4826 x the
    median absolute residual) of the previous round's inliers, between :data:`GROUND_MIN_BAND`
    and ``tolerance``. A fixed ``tolerance`` band also holds the foot of every wall or box
    standing on the floor (their points within ``tolerance`` x d of it); all on one side of
    the plane, they tilt the least-squares fit and bias the distance (about 1 % for a level
    camera facing a wall). The narrowed band keeps them out and keeps a noisy floor's points
    in, and points on surfaces across the candidate (more than 60 deg off) are left out of its
    fit. A candidate whose refit is not level (a strip of a vertical face) is dropped.
    """
    n_points = len(points)
    if n_points < 3:
        return []
    idx = _draw_triples(n_points, iterations, cells, np.random.default_rng(seed))
    a, b, c = points[idx[:, 0]], points[idx[:, 1]], points[idx[:, 2]]
    normals = np.cross(b - a, c - a)
    length = np.linalg.norm(normals, axis=1)
    ok = length > 1e-12
    normals, a = normals[ok] / length[ok, None], a[ok]
    dist = np.einsum("ij,ij->i", normals, a)
    flip = dist < 0
    normals[flip] *= -1.0
    dist = np.abs(dist)
    ok = (normals[:, 1] >= math.cos(math.radians(max_tilt_deg))) & (dist > 1e-9)
    normals, dist = normals[ok], dist[ok]
    if not len(normals):
        return []
    # Scored in float32 with the normals divided by the distance, so that a point on a plane
    # gives 1. Written as three broadcast multiply-adds, not a matrix product: with an inner
    # size of 3, OpenBLAS's thread start-up costs 100x the arithmetic on a busy machine (the
    # node runs this beside XNNPACK's threads).
    p32 = points.astype(np.float32)
    scaled = (normals / dist[:, None]).astype(np.float32)
    score = p32[:, 0:1] * scaled[None, :, 0]
    score += p32[:, 1:2] * scaled[None, :, 1]
    score += p32[:, 2:3] * scaled[None, :, 2]
    score -= 1.0
    np.abs(score, out=score)
    on = score <= tolerance
    # MSAC: an inlier weighs 1 - (offset / tolerance)^2, so of candidates holding about as many
    # points the one fitting them closest wins. Counted alone, a plane tilted across the floor
    # and a strip beyond it can hold a point more than the floor, and refined from there it
    # stays between the two (6 % off for a frame stretched onto the model's grid).
    score *= 1.0 / tolerance
    np.square(score, out=score)
    np.subtract(1.0, score, out=score)
    score[~on] = 0.0
    need = max(min_points, math.ceil(min_share * n_points))
    counts = np.count_nonzero(on, axis=0)
    fits = score.sum(axis=0)
    local = None if cells is None else _local_normals(points, cells)
    held = np.zeros(n_points, bool)
    planes: list[Plane] = []
    for _ in range(2 * GROUND_LEVELS):  # a candidate that is not level costs a round
        best = int(np.argmax(np.where(counts >= (need if planes else 3), fits, -1.0)))
        if counts[best] < (need if planes else 3):
            break
        # A point on a surface across the candidate (a wall's foot within its band) is not one
        # of its points: left in, a row of them far away tilts the floor's fit (3 %).
        facing = None if local is None else \
            ~(np.abs(np.einsum("ij,j->i", local, normals[best])) < LOCAL_ACROSS)
        plane = refine_plane(points, on[:, best], tolerance, max_tilt_deg, facing)
        if plane is None:
            counts[best] = 0
            continue
        normal, d = plane
        inliers = np.abs(plane_offset(points, normal, d)) <= tolerance
        problem = None if local is None else _surface_problem(local[inliers], normal, max_tilt_deg)
        if problem is not None:
            # Not a surface but a plane across surfaces (a step, a drop): neither it nor the
            # candidates like it are floors.
            same_tilt = math.cos(math.radians(SAME_TILT_DEG))
            like = (np.einsum("ij,j->i", normals, normal) >= same_tilt) & \
                (np.abs(dist / d - 1.0) <= tolerance)
            counts[like | (np.arange(len(counts)) == best)] = 0
            if rejected is not None and problem:
                rejected.append(problem)
            continue
        planes.append(Plane(normal, d, float(inliers.mean())))
        if len(planes) == GROUND_LEVELS:
            break
        held |= inliers
        counts = np.count_nonzero(on[~held], axis=0)
        fits = score[~held].sum(axis=0)
    return planes


def _local_normals(points: np.ndarray, cells: np.ndarray) -> np.ndarray:
    """N x 3 unit normals of the surface at each point, from its right and upper grid
    neighbours (NaN where one is missing)."""
    table = np.full(tuple(cells.max(axis=0) + 2), -1, np.int64)
    table[cells[:, 0], cells[:, 1]] = np.arange(len(points))
    up = table[np.maximum(cells[:, 0] - 1, 0), cells[:, 1]]
    right = table[cells[:, 0], cells[:, 1] + 1]
    ok = (up >= 0) & (right >= 0) & (cells[:, 0] > 0)
    normals = np.full(points.shape, np.nan)
    n = np.cross(points[right[ok]] - points[ok], points[up[ok]] - points[ok])
    length = np.linalg.norm(n, axis=1)
    normals[ok] = n / np.where(length > 0, length, np.nan)[:, None]
    return normals


def _surface_problem(local: np.ndarray, normal: np.ndarray, max_tilt_deg: float) -> str | None:
    """Why a plane's inliers do not lie on one surface facing the way it does: None when they
    do, "" for a wedge across a riser (no note), else a note for the frame's reason.

    * A candidate within the band of a vertical face and a strip of floor (a step's riser and
      the floor before it) holds many points whose own surface is across it (more than 60 deg
      off; noise in the depth tilts a floor's local normals, but seldom that far).
    * A plane slanted across a step or a drop holds two parallel floors at different heights:
      every point's own surface faces another way than the plane. Their median normal (noise
      cancels in it: within 3 deg on measured Kinect floors) more than :data:`SURFACE_TILT_DEG`
      from the plane's, or more than ``max_tilt_deg`` from level, is not a level floor.
    """
    valid = np.isfinite(local).all(axis=1)
    if not valid.any():
        return None
    local = local[valid]
    cosine = np.einsum("ij,j->i", local, normal)
    if np.mean(np.abs(cosine) < LOCAL_ACROSS) > LOCAL_ACROSS_SHARE:
        return ""
    surface = np.median(local * np.sign(cosine)[:, None], axis=0)
    surface /= max(float(np.linalg.norm(surface)), 1e-12)
    off = math.degrees(math.acos(min(1.0, abs(float(np.dot(surface, normal))))))
    level = math.degrees(math.acos(min(1.0, abs(float(surface[1])))))
    if off > SURFACE_TILT_DEG or level > max_tilt_deg:
        tilt = math.degrees(math.acos(min(1.0, float(normal[1]))))
        return (f"a plane {tilt:.0f} deg from level lies across surfaces {level:.0f} deg from "
                f"level (a step or a drop spanned by a slanted plane), not a floor")
    return None


def refine_plane(points: np.ndarray, inliers: np.ndarray, tolerance: float, max_tilt_deg: float,
                 allowed: np.ndarray | None = None) -> tuple[np.ndarray, float] | None:
    """Least-squares (SVD) refits of a candidate's inliers in narrowing bands (see
    :func:`level_planes`), of the ``allowed`` points only (all when None): (unit normal,
    distance), or None when it is not a level plane."""
    band = tolerance
    if allowed is not None:
        inliers = inliers & allowed
    for _ in range(GROUND_REFINE_ROUNDS):
        if inliers.sum() < 3:
            return None
        chosen = points[inliers]
        centre = chosen.mean(axis=0)
        normal = np.linalg.svd(chosen - centre, full_matrices=False)[2][2]
        if normal[1] < 0:
            normal = -normal
        d = float(np.dot(normal, centre))  # 3-vectors: no BLAS
        if d <= 0:
            return None
        residual = np.abs(plane_offset(points, normal, d))
        # Narrow the band to the scatter of this round's inliers (see level_planes).
        scatter = 3.0 * 1.4826 * float(np.median(residual[inliers]))
        band = min(band, max(scatter, GROUND_MIN_BAND))
        inliers = residual <= band
        if allowed is not None:
            inliers &= allowed
    if normal[1] < math.cos(math.radians(max_tilt_deg)):
        return None
    return normal, d
