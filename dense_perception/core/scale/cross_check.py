# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""``depth_scale_check``: a second scale source beside the first, in the same filter.

A robot with odometry and a camera at a known height above its floor has two measurements of
one scale: the motion's (or a reference depth's) and the floor's. Where both measure, they are
fused by their errors (inverse variance in log scale), so the scale is surer than either. Where
they disagree beyond 3 standard errors of both, one of them is wrong in a way it cannot see
itself (a trajectory twice too long, poses of another frame, a wrong ``camera_height``): the
frame is withheld with both values and the likely causes, never published with either. Where
only one measures, it is the frame's estimate.
"""

from __future__ import annotations

from dataclasses import replace

from .estimators import Estimate, fuse_measurements, fused_systematic, measured

CHECKED_SOURCES = ("motion", "reference_depth")  # the sources a check goes beside
# What each source's scale rests on: what to check when it disagrees with another.
RESTS_ON = {"motion": "are the poses in metres, of this camera's optical frame?",
            "reference_depth": "is the reference depth in metres and registered to the camera?",
            "ground_plane": "is camera_height right, and is the floor in view the robot's?"}


def cross_check(first: Estimate, check: Estimate, source: str, check_source: str
                ) -> tuple[Estimate, bool]:
    """(this frame's estimate, whether the two disagree) from the first source's estimate and
    the check's (both with their relative errors, log scale)."""
    if not measured(first):
        return (replace(check, reason=""), False) if measured(check) else (first, False)
    if not measured(check):
        return first, False
    fused = fuse_measurements(first.scale, first.sigma, check.scale, check.sigma)
    if fused is None:
        return Estimate(None, reason=(
            f"{source}'s scale is {first.scale / check.scale:.2f}x {check_source}'s, beyond "
            f"both errors (2 sigma {200 * first.sigma:.0f} % and {200 * check.sigma:.0f} %): "
            f"withheld; {RESTS_ON.get(source, '')} {RESTS_ON.get(check_source, '')}").rstrip(),
            clock_offset=first.clock_offset), True
    return replace(first, scale=fused[0], sigma=fused[1], systematic=fused_systematic(
        first.sigma, first.systematic, check.sigma, check.systematic)), False
