# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Which level plane is the floor the robot stands on: the one at the foot of the view.

``camera_height`` refers to the floor under the robot, so that is the plane to measure: neither
the largest (a desk in front of the robot can cover more of the lower view than the floor beside
it) nor the lowest (at the top of stairs, a dock or a kerb the camera sees a lower floor beyond
the edge). Of the level planes (:func:`.ground_plane.level_planes`), :func:`choose_floor` looks
at the foot of each image column, the lowest rows of the lower view, nearest the robot: the
column votes for the level plane its lowest level point lies on, when nothing else is seen below
it in the image. A desk's top has its front face below it in the image and beneath it in space:
those columns vote for no plane; a lower floor beyond an edge is seen above the robot's own
floor in every column, which takes the vote. :func:`floor_at_feet` applies the rule and says
why when it cannot tell.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .ground_plane import (GROUND_INLIER_TOLERANCE, GROUND_MIN_BAND, Plane, plane_offset,
                           refine_plane)

FOOT_CONTEST = 0.25   # a second plane, or columns cut off, with this share of the votes: withhold
FOOT_SHARE = 0.25     # the floor is refitted from this share of it nearest the robot
FOOT_BAND = 0.01      # the closeness of the refit and the plane is compared within this band


@dataclass(frozen=True)
class FloorChoice:
    """Which level plane lies at the robot's feet (:func:`choose_floor`)."""

    planes: list[Plane]
    votes: list[int]     # columns whose foot is on each plane
    raised: list[int]    # columns where each plane is the lowest level surface but has
    #                      something beneath it in front of it (a desk's front face)
    cut: list[int]       # ... and something above it in front of it (the robot's own floor
    #                      before an edge, too little of it to be a plane; the robot's body)
    columns: int         # columns with valid points


def choose_floor(points: np.ndarray, cells: np.ndarray, planes: list[Plane],
                 tolerance: float = GROUND_INLIER_TOLERANCE) -> FloorChoice:
    """The votes of the image columns' feet for the robot's floor (module doc).

    In each column of the sample grid (``cells``), the lowest point (largest row) within
    ``tolerance`` of a plane (the nearest one) is the column's lowest level point. The column
    votes for that plane when no surface is seen below it in the image: points there lie off
    every plane, and two of them, or one more than twice ``tolerance`` off (a single point a
    little off is noise), beneath the plane (farther along its normal) make the column
    ``raised`` for the plane, above it ``cut``.
    """
    rows, cols = cells[:, 0], cells[:, 1]
    n_cols = int(cols.max()) + 1 if len(cols) else 0
    votes, raised, cut = [0] * len(planes), [0] * len(planes), [0] * len(planes)
    if not planes or not n_cols:
        return FloorChoice(planes, votes, raised, cut, 0)
    everyone = np.arange(len(points))
    residual = np.stack([plane_offset(points, p.normal, p.d) for p in planes],
                        axis=1)                      # N x planes, fraction of each d
    nearest = np.argmin(np.abs(residual), axis=1)
    label = np.where(np.abs(residual[everyone, nearest]) <= tolerance, nearest, -1)
    # The lowest level point per column: the largest row among labelled points.
    foot_row = np.full(n_cols, -1)
    np.maximum.at(foot_row, cols[label >= 0], rows[label >= 0])
    foot_label = np.full(n_cols, -1)
    at_foot = (label >= 0) & (rows == foot_row[cols])
    foot_label[cols[at_foot]] = label[at_foot]
    # Seen below the column's lowest level point: off every plane, so beneath or above its own.
    below = (rows > foot_row[cols]) & (foot_label[cols] >= 0)
    off = residual[everyone, np.maximum(foot_label[cols], 0)]
    # One point a little off the plane is noise; two, or one far off, are a surface.
    beneath = _surface_below(cols, below & (off > 0), np.abs(off), tolerance, n_cols)
    above = _surface_below(cols, below & (off < 0), np.abs(off), tolerance, n_cols)
    for c in np.flatnonzero(foot_label >= 0):
        j = int(foot_label[c])
        if beneath[c]:
            raised[j] += 1
        elif above[c]:
            cut[j] += 1
        else:
            votes[j] += 1
    return FloorChoice(planes, votes, raised, cut, int(np.count_nonzero(
        np.bincount(cols, minlength=n_cols))))


def _surface_below(cols: np.ndarray, chosen: np.ndarray, off: np.ndarray, tolerance: float,
                   n_cols: int) -> np.ndarray:
    """Per column: at least two ``chosen`` points, or one more than twice ``tolerance`` off."""
    count = np.bincount(cols[chosen], minlength=n_cols)
    far = np.bincount(cols[chosen & (off > 2.0 * tolerance)], minlength=n_cols)
    return (count >= 2) | (far >= 1)


def refine_at_foot(points: np.ndarray, cells: np.ndarray, plane: Plane,
                   tolerance: float = GROUND_INLIER_TOLERANCE,
                   max_tilt_deg: float = 30.0) -> Plane:
    """``plane`` refitted from its inliers in the lowest rows (the nearest :data:`FOOT_SHARE` of
    them), then refined over all points (:func:`.ground_plane.refine_plane`).

    A surface that meets the floor at a shallow angle (a 5 deg ramp ahead) lies within the
    inlier band of a plane between the two, which can hold more points than either; the
    narrowing refinement keeps such a compromise when it starts from it. Started from the part
    of the plane nearest the robot, it converges on the floor the robot stands on. So does a
    plane slanted across a small step or drop (both floors within its band).

    The refit is kept when the plane does not lie on its foot (their median offset beyond
    :data:`.ground_plane.GROUND_MIN_BAND`) or when it fits the whole view closer
    (:func:`_closeness`); otherwise the plane is: the tilt from a few rows over a short reach
    follows their depth's noise (6 % off from the rounding of a stretched frame alone).
    """
    offset = plane_offset(points, plane.normal, plane.d)
    inliers = np.abs(offset) <= tolerance
    rows = cells[:, 0]
    seed = inliers & (rows >= np.quantile(rows[inliers], 1.0 - FOOT_SHARE))
    found = refine_plane(points, seed, tolerance, max_tilt_deg) if seed.sum() >= 3 else None
    if found is None:
        return plane
    normal, d = found
    if abs(float(np.median(offset[seed]))) <= GROUND_MIN_BAND and \
            _closeness(points, normal, d) <= _closeness(points, plane.normal, plane.d):
        return plane  # it lies on its foot and fits the view closer than the refit
    share = float(np.mean(np.abs(plane_offset(points, normal, d)) <= tolerance))
    return Plane(normal, d, share)


def _closeness(points: np.ndarray, normal: np.ndarray, d: float) -> float:
    """How closely a plane fits the points: each within :data:`FOOT_BAND` of it weighs
    1 - (offset / band)^2 (MSAC, as the candidates in :func:`.ground_plane.level_planes`)."""
    r = plane_offset(points, normal, d) / FOOT_BAND
    return float(np.sum(np.maximum(1.0 - r * r, 0.0)))


def floor_at_feet(points: np.ndarray, cells: np.ndarray, planes: list[Plane],
                  max_tilt_deg: float = 30.0) -> tuple[Plane | None, str]:
    """The floor the robot stands on among ``planes`` (refined at its foot), or None and why.

    None when no column's foot is on a level plane; when the plane at the feet has something
    beneath it in front of it in more columns than it has votes (a raised surface), or something
    above it in :data:`FOOT_CONTEST` as many (a strip of the robot's floor before a drop, the
    robot's body); when a second plane at another height has :data:`FOOT_CONTEST` as many votes.
    """
    choice = choose_floor(points, cells, planes)
    votes, raised, cut = (np.array(x) for x in (choice.votes, choice.raised, choice.cut))
    if not votes.any() and cut.any():
        j = int(np.argmax(cut))
        return None, _cut_reason(planes[j], cut[j], choice.columns)
    if not votes.any() and raised.any():
        j = int(np.argmax(raised))
        return None, (f"the lowest level plane in view holds {planes[j].share:.0%} of the lower "
                      f"view and, in {raised[j]} of {choice.columns} columns, something lies "
                      "beneath it in front of it: a raised surface (desk, table, step), not the "
                      "floor; the floor is out of view")
    if not votes.any():
        return None, (f"no level plane at the foot of the view (the lowest rows, nearest the "
                      f"robot): {len(planes)} level plane(s) seen, none continuous with what is "
                      "under the robot")
    order = np.argsort(-votes, kind="stable")
    best = planes[int(order[0])]
    if cut[order[0]] > FOOT_CONTEST * votes[order[0]]:
        return None, _cut_reason(best, cut[order[0]], choice.columns)
    if raised[order[0]] > votes[order[0]]:  # the same plane, a floor in few columns only
        return None, (f"the level plane at the robot's feet ({votes.max()} of {choice.columns} "
                      f"columns) has something beneath it in front of it in {raised[order[0]]} "
                      "columns: a raised surface (desk, table, step), not the floor")
    for j in order[1:]:
        other = planes[int(j)]
        if votes[j] >= FOOT_CONTEST * votes[order[0]] and votes[j] > 0 and \
                abs(other.d / best.d - 1.0) > GROUND_INLIER_TOLERANCE:
            upper, lower = sorted(((best, votes[order[0]]), (other, votes[j])),
                                  key=lambda pv: pv[0].d)
            return None, (
                f"two level planes at the robot's feet, one {lower[0].d / upper[0].d:.2f}x as "
                f"far below the camera as the other (heights ratio): the upper holds "
                f"{upper[0].share:.0%} of the lower view and the feet of {upper[1]} columns, "
                f"the lower {lower[0].share:.0%} and {lower[1]}; cannot tell which the robot "
                "stands on (a step or stage edge beside it)")
    return refine_at_foot(points, cells, best, max_tilt_deg=max_tilt_deg), ""


def _cut_reason(plane: Plane, columns: int, of: int) -> str:
    """Why a plane seen with something above it in front of it is not taken for the floor."""
    return (f"a level plane holding {plane.share:.0%} of the lower view has, in {columns} of "
            f"{of} columns, something above it seen in front of it at the foot of the view: the "
            "robot may stand on that (at the edge of a drop, its own floor too little in view "
            "to measure) or it is the robot's own body; the floor the robot stands on is not "
            "measurable")
