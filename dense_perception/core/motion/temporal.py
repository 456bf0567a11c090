# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Depth aligned over time: the previous output moved into the new view and fused with the new
frame where the two agree.

Per frame, with the camera motion from the previous frame known:

1. The previous output is moved into the new view, looked up from it
   (:func:`.warp.backward_warp`: each new pixel, at the new frame's depth brought to the
   past's scale, is found in the previous view and the previous output sampled there,
   bilinearly): every pixel the previous view saw gets a value, with no holes between moved
   pixels and none rounded to the grid; where the new view sees what the previous did not,
   the value is the previous view's nearer surface, which disagrees (step 3).
2. The new frame's depth is aligned to it by one robust scale (median log ratio over the
   overlap), *anchored*: on frames that measure their own scale (a motion, floor or reference
   estimate; for a scale that is not estimated, the model's own units) the ratio is pulled
   towards that measurement with the time constant :data:`ANCHOR_TIME_S`, so the fused depth
   cannot drift away from the scale source; between measurements the past carries it (a
   relative model's units drift from frame to frame, real geometry does not). While the two
   have agreed to within :data:`WARP_NOISE` (what the warp and the poses drift by), the
   measurement is taken as it is: the past is no better there.
3. Where the moved previous output and the aligned new depth agree within
   :data:`BLEND_SPREADS` times the spread of their disagreement over the overlap (at most
   :data:`BLEND_MAX`), the two are blended (in log depth); elsewhere (occlusion, newly
   seen, a moving thing: a disagreement beyond the frames' own noise) the new frame's depth
   is taken as it is and the pixel's count of held frames starts again. The past's weight is
   a Kalman filter's: the frames' own noise (the spread beyond :data:`WARP_NOISE`) against
   the past's (that noise over the frames it has held, plus the warp's), at most
   :data:`MAX_PREVIOUS_WEIGHT`, tapered to 0 as the disagreement nears the tolerance (Tukey's
   biweight), so the output has no step where pixels pass from blended to not. Depth that
   agrees with the past to within the warp's precision has no noise to remove and is taken
   as it is; a thing that moves by itself (the camera's motion does not explain it) stops
   being blended as soon as it disagrees beyond the frames' noise, however many frames it
   has held.

Hence the lookup and the taper: a forward warp (each previous pixel moved to its nearest new
pixel) with a hard tolerance leaves branching cracks (pixels nothing lands on between the
moved ones take the new frame as it is) and blocks (pixels rounded to the grid, steps at the
tolerance), carried on from frame to frame.

It starts afresh, and says why, when there is no pose or no previous output, when the motion
is large (more than ``max_translation`` or :data:`MAX_ROTATION_DEG`) or the frames far apart
in time, and when the two views overlap or agree too little (a new scene).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ..geometry.intrinsics import Intrinsics
from .pose import motion, rotation_angle_deg
from .warp import backward_warp

class DepthUnit(NamedTuple):
    """What a published depth is in: its scale source and whether it is metric. Depths of two
    units are never fused nor compared (a source switch, metres found at last)."""

    source: str
    metric: bool


AGREE_TOLERANCE = 0.25     # |log ratio| within which the two agree (about 28 %): a new scene
                           # is where less than MIN_AGREEMENT of the overlap does
BLEND_MAX = 0.4            # |log ratio| beyond which the past is never blended (about 50 %;
                           # the taper gives it 37 % of its weight at 28 %)
MAX_PREVIOUS_WEIGHT = 0.9  # the previous output's largest share of a fused pixel
BLEND_SPREADS = 8.0        # the blend's tolerance (the taper's zero): this many times the
                           # disagreement's spread
WARP_NOISE = 0.005         # log: what the warp and the poses leave between views of a still scene
MAD_TO_SIGMA = 1.4826      # a normal distribution's standard deviation per median |deviation|
ANCHOR_TIME_S = 0.3        # s: time constant of the pull towards the frames' own scale
MAX_ANCHOR_STEP = 0.2      # log: one frame's measurement counts at most this far off
MAX_ROTATION_DEG = 30.0    # between two frames: more is a jump
MAX_GAP_S = 2.0            # s between two frames: more is a jump
MIN_OVERLAP = 0.3          # share of the new frame the previous output covers
MIN_AGREEMENT = 0.3        # share of the overlap where the two agree after alignment


def blend_weights(residual: np.ndarray, held: np.ndarray, mad: float
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Where the moved previous output is blended into the aligned new frame, and its weight
    there (float32, 0 elsewhere): ``residual`` is |log ratio - offset| of the two (NaN where
    either is missing), ``held`` how many frames each moved pixel has held, ``mad`` the median
    residual over the overlap."""
    spread = MAD_TO_SIGMA * mad
    tolerance = np.float32(min(BLEND_SPREADS * spread, BLEND_MAX))
    with np.errstate(invalid="ignore"):
        blend = residual < tolerance          # False where either is missing
    # The frames' own noise is the spread beyond what the warp and the poses make; the past
    # (held frames of it, plus the warp's noise) weighted against the new frame by the two.
    noise = max(spread * spread - WARP_NOISE * WARP_NOISE, 0.0)
    h = held.astype(np.float32)
    with np.errstate(invalid="ignore", divide="ignore"):  # tolerance 0: nothing is blended
        weight = h * np.float32(noise) / (
            (h + 1.0) * np.float32(noise) + h * np.float32(WARP_NOISE * WARP_NOISE))
        taper = np.square(1.0 - np.square(residual / tolerance))  # no step at the tolerance
        weight = np.where(blend, np.minimum(np.nan_to_num(weight), MAX_PREVIOUS_WEIGHT) * taper,
                          0.0)
    return blend, weight.astype(np.float32)


@dataclass(frozen=True)
class Alignment:
    """What the temporal alignment did to one frame."""

    aligned: bool
    reason: str = ""           # why not (a reset), "" when aligned
    fused_share: float = 0.0   # share of the valid pixels blended with the past
    scale_ratio: float = 1.0   # the alignment's scale applied to the new frame
    gap: float | None = None   # log: this frame's own scale measurement over the past's
    epoch: int = 0             # restarts so far: an output of another epoch is not carried
    pulled: float = 0.0        # log: the anchor's corrections summed since the last restart


class TemporalAligner:
    """Per camera: the previous output (depth on the published grid, its intrinsics, pose and
    stamp) and how many frames each pixel has held."""

    def __init__(self, max_translation: float = 0.5) -> None:
        self.max_translation = max_translation
        self._depth: np.ndarray | None = None
        self._weight: np.ndarray | None = None
        self._k: Intrinsics | None = None
        self._pose: np.ndarray | None = None
        self._t = 0.0
        self._unit: DepthUnit | None = None
        self._gap2: float | None = None  # mean square log gap of the past's and own scale
        self._anchored_t: float | None = None  # the last frame pulled towards a measurement
        self.epoch = 0      # restarts so far
        self.pulled = 0.0   # log: the anchor's corrections summed since the last restart

    def reset(self) -> None:
        """Forget the previous output."""
        self._depth = self._weight = self._k = self._pose = None
        self._gap2 = self._anchored_t = None
        self.epoch += 1
        self.pulled = 0.0

    def align(self, t: float, pose: np.ndarray | None, depth: np.ndarray, k: Intrinsics,
              unit: DepthUnit | None = None, anchor: float | None = 1.0, *,
              gap: float | None = None) -> tuple[np.ndarray, Alignment]:
        """The fused depth for the frame stamped ``t`` with ``pose`` (4x4 world_from_camera)
        and its own ``depth`` (metres or relative, NaN invalid) on a grid with intrinsics
        ``k``; ``unit`` names the depth's unit (a change starts afresh).

        ``anchor``: the factor this frame's own scale measurement says ``depth`` should be
        multiplied by (this frame's estimate / the filtered scale applied to it; 1.0 for a
        scale that is not estimated), or None when this frame measured none: the alignment
        is pulled towards it, and carried unchanged through frames without one. ``gap``
        (log; with ``anchor`` None): a measurement made on an earlier frame of this epoch,
        given as how far the output is from it now (a keyframe's, measured off the frame
        path: :mod:`.camera_motion` knows what was published on the keyframe and what has
        been pulled since)."""
        why = self._reset_reason(t, pose, depth, k, unit)
        if why:
            return self._restart(t, pose, depth, k, unit, why)
        a_to_b = motion(self._pose, pose)
        # The new frame at the past's scale finds its pixels in the previous view (the scale
        # only moves where they are found by a fraction of the parallax).
        with np.errstate(invalid="ignore", divide="ignore"):
            guess = np.log(self._depth[::4, ::4]) - np.log(depth[::4, ::4])
        guess = guess[np.isfinite(guess)]
        at_past = depth * np.float32(math.exp(float(np.median(guess)))) if len(guess) else depth
        moved, held = backward_warp(self._depth, k, a_to_b, at_past, self._weight)
        with np.errstate(invalid="ignore", divide="ignore"):
            log_ratio = np.log(moved) - np.log(depth)  # NaN where either is missing
        both = np.isfinite(log_ratio)
        valid_count = max(int(np.count_nonzero(depth > 0)), 1)
        overlap = float(np.count_nonzero(both)) / valid_count
        if overlap < MIN_OVERLAP:
            return self._restart(t, pose, depth, k, unit, (
                f"the previous output covers {overlap:.0%} of this view (< {MIN_OVERLAP:.0%})"))
        # The median over every other row and column: as good, a quarter of the work.
        sample = log_ratio[::2, ::2]
        sample = sample[np.isfinite(sample)]
        offset = float(np.median(sample))
        with np.errstate(invalid="ignore"):
            residual = np.abs(log_ratio - np.float32(offset))  # NaN where either is missing
        agreement = float(np.count_nonzero(residual < AGREE_TOLERANCE)) / max(
            int(np.count_nonzero(both)), 1)
        if agreement < MIN_AGREEMENT:
            return self._restart(t, pose, depth, k, unit, (
                f"the previous output agrees with this frame on {agreement:.0%} of the overlap "
                f"(< {MIN_AGREEMENT:.0%}): a new scene"))
        # The new frame aligned to the past, the two blended where they agree ...
        new = depth * np.float32(math.exp(offset))
        blend, w_prev = blend_weights(residual, held, float(np.median(np.abs(sample - offset))))
        with np.errstate(invalid="ignore"):
            pull = np.where(blend, w_prev * (log_ratio - np.float32(offset)), np.float32(0.0))
        fused = new * np.exp(pull.astype(np.float32))
        # ... then the whole output pulled towards this frame's own scale measurement (anchored).
        late = anchor is None and gap is not None
        if anchor is not None:
            gap = math.log(anchor) - offset if anchor > 0 and math.isfinite(anchor) else None
        correction = self._anchor_correction(t, gap, late)
        if correction:
            fused *= np.float32(math.exp(correction))
            self.pulled += correction
        ratio = math.exp(offset + correction)
        self._store(t, pose, fused, k, unit, np.where(blend, held + 1.0, 1.0))
        share = float(np.count_nonzero(w_prev > 0)) / valid_count
        return fused.astype(np.float32), Alignment(True, fused_share=share, scale_ratio=ratio,
                                                    gap=gap, epoch=self.epoch,
                                                    pulled=self.pulled)

    def _anchor_correction(self, t: float, gap: float | None, late: bool = False) -> float:
        """The log correction towards this frame's own scale measurement, ``gap`` (log) from
        the alignment's offset (0 without one): the pull of :data:`ANCHOR_TIME_S`, or all of it
        while the two have agreed to within :data:`WARP_NOISE` (what the warp and the poses
        alone drift by: the past is no better than the frame there). ``late``: the gap is a
        keyframe's measurement landed on a later frame, pulled over the time since the last
        one pulled (the same pull per second whichever frames they land on)."""
        if gap is None or not math.isfinite(gap):
            return 0.0
        since = self._anchored_t if late and self._anchored_t is not None else self._t
        self._anchored_t = t
        pull = 1.0 - math.exp(-max(t - since, 0.0) / ANCHOR_TIME_S)
        gap = min(max(gap, -MAX_ANCHOR_STEP), MAX_ANCHOR_STEP)
        # The mean square disagreement, over the same time constant.
        self._gap2 = gap * gap if self._gap2 is None else self._gap2 + pull * (
            gap * gap - self._gap2)
        trust = 1.0 if self._gap2 <= WARP_NOISE * WARP_NOISE else \
            WARP_NOISE * WARP_NOISE / self._gap2
        return max(pull, trust) * gap

    def _reset_reason(self, t: float, pose: np.ndarray | None, depth: np.ndarray,
                      k: Intrinsics, unit: DepthUnit | None) -> str:
        if pose is None:
            return "no camera pose for this frame (motion unknown)"
        if self._depth is None:
            return "no previous output"
        if unit != self._unit:
            return "the depth's unit changed"
        if self._k != k or self._depth.shape != depth.shape:
            return "the published grid or intrinsics changed"
        dt = t - self._t
        if dt < 0 or dt > MAX_GAP_S:
            return f"{dt:.2f} s since the previous frame (not within 0-{MAX_GAP_S:g} s)"
        step = motion(self._pose, pose)
        moved, turned = float(np.linalg.norm(step[:3, 3])), rotation_angle_deg(step)
        if moved > self.max_translation or turned > MAX_ROTATION_DEG:
            return (f"a jump: the camera moved {moved:.2f} m and turned {turned:.0f} deg since "
                    f"the previous frame (> {self.max_translation:g} m or "
                    f"{MAX_ROTATION_DEG:g} deg)")
        return ""

    def _restart(self, t: float, pose: np.ndarray | None, depth: np.ndarray, k: Intrinsics,
                 unit: DepthUnit | None, reason: str) -> tuple[np.ndarray, Alignment]:
        self.reset()
        if pose is not None:
            self._store(t, pose, depth, k, unit, np.ones(depth.shape, np.float32))
            self._anchored_t = t  # the output starts at this frame's own scale
        return depth, Alignment(False, reason, epoch=self.epoch)

    def _store(self, t: float, pose: np.ndarray, depth: np.ndarray, k: Intrinsics,
               unit: DepthUnit | None, weight: np.ndarray) -> None:
        self._depth, self._k, self._pose, self._t, self._unit = depth, k, pose, t, unit
        self._weight = weight.astype(np.float32)
