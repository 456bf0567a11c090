# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""A scale estimate whose unit is wrong: an estimated source that puts almost the whole view
beyond ``max_depth`` (poses in centimetres, a camera height in millimetres) is refused with
the question that finds the cause, instead of being published 100x too far."""

from __future__ import annotations

import numpy as np

from .estimators import Estimate

# An estimate that puts this share of the view beyond max_depth is a unit error, not a scene.
MAX_SHARE_BEYOND = 0.9
# What a scale's unit comes from, per source: where a wrong unit would enter.
UNIT_OF = {"motion": "are the poses in metres?",
           "ground_plane": "is camera_height in metres?",
           "reference_depth": "is the reference depth in metres?"}


def beyond_max_depth(est: Estimate, depth: np.ndarray, source: str, max_depth: float
                     ) -> Estimate:
    """``est``, or none with the reason when its scale puts almost the whole view (more than
    :data:`MAX_SHARE_BEYOND`) beyond ``max_depth``: a robot that sets ``max_depth`` sees
    most of its view within it, and a scale 100x or 1000x off (poses in centimetres or
    millimetres) is the likelier cause."""
    if est.scale is None or not max_depth > 0:
        return est
    valid = depth[np.isfinite(depth) & (depth > 0)]
    if valid.size == 0:
        return est
    share = float(np.mean(valid * est.scale > max_depth))
    if share <= MAX_SHARE_BEYOND:
        return est
    return Estimate(None, reason=(
        f"{source}'s scale {est.scale:.4g} puts {100 * share:.0f} % of the view beyond "
        f"max_depth ({max_depth:g} m): {UNIT_OF.get(source, 'is its unit metres?')}"),
        clock_offset=est.clock_offset)
