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


def lower_view_samples(depth: np.ndarray, k: Intrinsics, lower_fraction: float = 0.5,
                       max_points: int = GROUND_SAMPLE_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """(N x 3 back-projected points, N x 2 grid cells (row, column)) of the lower
    ``lower_fraction`` of the view, valid depth only, in row-major order.

    Sampled on a regular grid so that about ``max_points`` come back whatever the image size.
    """
    h, w = depth.shape
    top = int(h * (1.0 - lower_fraction))
    stride = max(1, int(math.sqrt((h - top) * w / max_points)))
    v, u = np.mgrid[top:h:stride, 0:w:stride]
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
                 min_points: int = 30) -> list[Plane]:
    """RANSAC for the level planes of the lower view, largest first (at most
    :data:`GROUND_LEVELS`).

    Points p on a plane satisfy n . p = d, with n pointing from the camera to the plane
    (optical frame: +y is down). Candidates whose normal is more than ``max_tilt_deg`` from +y
    (walls, the ceiling) are rejected before scoring. Inliers lie within ``tolerance`` x d of
    the plane (a scale-free band). Every candidate is scored at once (one N x iterations
    matrix). ``cells`` (the points' grid cells, :func:`lower_view_samples`) lets half the
    candidates be drawn locally (module doc).

    The first plane is the candidate with the most inliers; each next one the candidate holding
    most of the points no plane found so far holds, while it holds at least ``min_share`` of all
    points (and ``min_points``). Each takes the largest plane of what is left, so a candidate that
    merely cuts across a desk's edge (a wedge of its top and its front face) never wins.

    Each chosen candidate is refined by least squares (SVD), each round on the points within a
    band narrowed to the floor's own scatter: 3 robust standard deviations (1.4826 x the
    median absolute residual) of the previous round's inliers, between :data:`GROUND_MIN_BAND`
    and ``tolerance``. A fixed ``tolerance`` band also holds the foot of every wall or box
    standing on the floor (their points within ``tolerance`` x d of it); all on one side of
    the plane, they tilt the least-squares fit and bias the distance (about 1 % for a level
    camera facing a wall). The narrowed band keeps them out and keeps a noisy floor's points
    in. A candidate whose refit is not level (a strip of a vertical face) is dropped.
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
    need = max(min_points, math.ceil(min_share * n_points))
    counts = np.count_nonzero(on, axis=0)
    local = None if cells is None else _local_normals(points, cells)
    held = np.zeros(n_points, bool)
    planes: list[Plane] = []
    for _ in range(2 * GROUND_LEVELS):  # a candidate that is not level costs a round
        best = int(np.argmax(counts))
        if counts[best] < (need if planes else 3):
            break
        plane = refine_plane(points, on[:, best], tolerance, max_tilt_deg)
        if plane is None:
            counts[best] = 0
            continue
        normal, d = plane
        inliers = np.abs(plane_offset(points, normal, d)) <= tolerance
        if local is not None and not _surface_agrees(local[inliers], normal):
            counts[best] = 0  # a wedge across a step's riser and the floor before it
            continue
        planes.append(Plane(normal, d, float(inliers.mean())))
        if len(planes) == GROUND_LEVELS:
            break
        held |= inliers
        counts = np.count_nonzero(on[~held], axis=0)
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


def _surface_agrees(local: np.ndarray, normal: np.ndarray) -> bool:
    """Whether a plane's inliers lie on surfaces facing about the way it does: a candidate
    within the band of a vertical face and a strip of floor (a step's riser and the floor before
    it) holds many points whose own surface is across it (more than 60 deg off; noise in the
    depth tilts a floor's local normals, but seldom that far)."""
    cosine = np.abs(np.einsum("ij,j->i", local, normal))
    valid = np.isfinite(cosine)
    return not valid.any() or np.mean(cosine[valid] < LOCAL_ACROSS) <= LOCAL_ACROSS_SHARE


def refine_plane(points: np.ndarray, inliers: np.ndarray, tolerance: float, max_tilt_deg: float
                 ) -> tuple[np.ndarray, float] | None:
    """Least-squares (SVD) refits of a candidate's inliers in narrowing bands (see
    :func:`level_planes`): (unit normal, distance), or None when it is not a level plane."""
    band = tolerance
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
    if normal[1] < math.cos(math.radians(max_tilt_deg)):
        return None
    return normal, d
