# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The error of the published depth's scale when the motion scale and the temporal alignment
work together: what ``max_scale_error`` judges there, per frame.

With the alignment on, the published depth's scale is carried from frame to frame by the
camera's motion (the past output moved into the new view) and pulled towards each frame's own
motion estimate. Its error is neither the filter's (a constant scale averaged over time) nor the
estimate's own alone. Per frame (all in log scale, added in quadrature):

* :data:`GAP_WEIGHT` x the robust size of the *gaps* of the last :data:`GAP_FRAMES` aligned
  frames: each frame's own estimate against the scale the past carried into its view. Poses
  that jitter, an estimate the network's shape pulls off, an output lagging its anchor: each
  widens the gaps. Where the two agree, the gaps, and so the error, are small;
* :data:`ESTIMATE_WEIGHT` x the last estimate's own error (:mod:`.motion_scale`'s sigma): what
  the gaps cannot see, a bias the estimates and the carried past share;
* :data:`CARRY_PER_FRAME` for each frame carried since the last estimate where one was due
  (a random walk: the scale carried by the warp alone drifts, about 3 % a frame on the shared
  real stretches);
* a floor, :data:`FLOOR`.

The weights were chosen on the shared 7-Scenes stretches (``make eval-real``): with them, at
least 90 % of the frames of every stretch, kind of poses and network lie within their 2 sigma.
"""

from __future__ import annotations

import math
from collections import deque

import numpy as np

from .temporal import MAD_TO_SIGMA

GAP_FRAMES = 30          # aligned frames whose gaps are kept
MIN_GAPS = 3             # fewer: the last estimate's own error stands for the gaps
GAP_WEIGHT = 1.5         # the gaps' robust standard deviation, times this
ESTIMATE_WEIGHT = 0.3    # the last estimate's own sigma, times this
CARRY_PER_FRAME = 0.03   # log scale per sqrt(frame) carried without an estimate
FLOOR = 0.02             # the smallest error claimed


class OutputError:
    """Per camera: the recent gaps, the last estimate's error and the frames carried since."""

    def __init__(self) -> None:
        self._gaps: deque[float] = deque(maxlen=GAP_FRAMES)
        self._estimate_sigma: float | None = None
        self._carried: int | None = None  # frames since the last estimate (None: none yet)
        self.why = ""  # the largest part of the last error, in words

    def reset(self) -> None:
        """Forget everything (a new sequence)."""
        self._gaps.clear()
        self._estimate_sigma = None
        self._carried = None

    def update(self, aligned: bool, gap: float | None, estimate_sigma: float | None,
               due: bool = True) -> float | None:
        """The published scale's relative standard error (log) after this frame; None while
        nothing measured it. ``aligned``: the frame was fused with the past (False: the output
        started afresh from this frame); ``gap``: the log of this frame's own estimate over the
        scale the past carried (None: no estimate, or not aligned); ``estimate_sigma``: this
        frame's estimate's own error (None: no estimate); ``due``: a measurement was due on
        this frame (False between keyframes: the gaps of the keyframes hold what the output
        drifts by between them, so a frame there is not carried further)."""
        if not aligned:
            self._gaps.clear()  # a fresh start: the past no longer carries the scale
            self._carried = None
        if estimate_sigma is not None:
            self._estimate_sigma, self._carried = estimate_sigma, 0
            if aligned and gap is not None and math.isfinite(gap):
                self._gaps.append(gap)
        elif self._carried is not None and due:
            self._carried += 1
        self.why = ""
        if self._carried is None or self._estimate_sigma is None:
            return None
        gapped = len(self._gaps) >= MIN_GAPS
        spread = MAD_TO_SIGMA * float(np.median(np.abs(np.asarray(self._gaps)))) if gapped \
            else self._estimate_sigma
        parts = {"gaps": GAP_WEIGHT * spread, "estimate": ESTIMATE_WEIGHT * self._estimate_sigma,
                 "carried": CARRY_PER_FRAME * math.sqrt(self._carried)}
        self.why = self._words(max(parts, key=parts.get), gapped, spread)
        return math.sqrt(sum(v * v for v in parts.values()) + FLOOR ** 2)

    def _words(self, part: str, gapped: bool, spread: float) -> str:
        """The largest part of the error, as a robot engineer can act on it."""
        if part == "carried":
            return (f"the scale was carried {self._carried} frames without a motion estimate "
                    "of its own")
        if part == "gaps" and gapped:
            return (f"each frame's motion estimate and the scale the poses carried into its "
                    f"view differ by {spread:.0%} (robust spread, last {len(self._gaps)} "
                    "frames): the images contradict the poses (poses that jitter, lag or "
                    "describe another frame than this camera's optical frame) or the scene "
                    "moves")
        return (f"this frame's motion estimate is unsure by itself ({self._estimate_sigma:.0%}, "
                "1 sigma): the network's depth fits the flow differently over the view, or "
                "too few frames since the output started afresh")
