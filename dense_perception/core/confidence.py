# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Which pixels are confident enough to become points (``points_min_confidence``).

One parameter, two meanings, because the two models give two kinds of confidence:

* DA3 (a file with its confidence output): DA3's confidence has no fixed scale (>= 1, larger is
  surer, its range changes from frame to frame), so the threshold is a *quantile of the frame's
  confidence*: 0.4 drops the 40 % least confident points, as the official DA3 export drops
  those under the 40th percentile. Pixels as confident as the threshold stay, so a frame whose
  confidence is all alike loses nothing.
* TIPSv2: a probability in [0, 1] (the top class's softmax probability), so the threshold is
  that probability itself.

0 keeps every point.
"""

from __future__ import annotations

import numpy as np

QUANTILE = "quantile"        # DA3: points_min_confidence is a quantile of the frame's values
PROBABILITY = "probability"  # TIPSv2: points_min_confidence is a probability
CONFIDENCE_MEANINGS = (QUANTILE, PROBABILITY)


def confident_pixels(confidence: np.ndarray, min_confidence: float, meaning: str,
                     stride: int = 1, depth: np.ndarray | None = None,
                     max_depth: float = np.inf) -> np.ndarray | None:
    """H x W bool: the pixels whose ``confidence`` passes ``min_confidence`` (NaN never does),
    or None when every pixel passes (``min_confidence`` 0).

    ``meaning`` QUANTILE: keep pixels at or above the ``min_confidence`` quantile of the finite
    values among those the cloud samples (every ``stride``-th pixel each way) and, given
    ``depth`` (H x W, the cloud's), keeps (a depth > 0 and <= ``max_depth``, as
    ``pointcloud.depth_to_points``), so the share dropped is about ``min_confidence`` of the
    cloud's own points; PROBABILITY: keep pixels with ``confidence >= min_confidence``.
    """
    if meaning not in CONFIDENCE_MEANINGS:
        raise ValueError(f"confidence meaning '{meaning}' is unknown; use one of: "
                         f"{', '.join(CONFIDENCE_MEANINGS)}")
    if not 0.0 <= min_confidence <= 1.0:
        raise ValueError(f"min_confidence must be in [0, 1], got {min_confidence}")
    if min_confidence == 0.0:
        return None
    threshold = min_confidence
    if meaning == QUANTILE:
        sampled = confidence[::stride, ::stride]
        counted = np.isfinite(sampled)
        if depth is not None:  # the cloud's points only: not those max_depth already dropped
            z = depth[::stride, ::stride]
            with np.errstate(invalid="ignore"):
                counted &= (z > 0) & (z <= max_depth)  # NaN compares False
        finite = sampled[counted]
        if finite.size == 0:
            return np.zeros(confidence.shape, bool)
        # 'lower': the threshold is one of the frame's own values, so ties at it stay.
        threshold = float(np.quantile(finite, min_confidence, method="lower"))
    with np.errstate(invalid="ignore"):
        return confidence >= np.float32(threshold)
