"""Depth aligned over time: the previous output moved into the new view and fused with the new
frame where the two agree.

Per frame, with the camera motion from the previous frame known:

1. The previous output is moved into the new view (:func:`.warp.forward_warp`, z-buffer:
   occluded surfaces lose; pixels nothing lands on are newly seen).
2. The new frame's depth is aligned to it by one robust scale (median log ratio over the
   overlap), *anchored*: on frames that measure their own scale (a motion, floor or reference
   estimate; for a scale that is not estimated, the model's own units) the ratio is pulled
   towards that measurement with the time constant :data:`ANCHOR_TIME_S`, so the fused depth
   cannot drift away from the scale source; between measurements the past carries it (a
   relative model's units drift from frame to frame, real geometry does not).
3. Where the moved previous output and the aligned new depth agree within
   :data:`AGREE_TOLERANCE`, the two are blended, the previous weighted by how many frames it
   has held (up to :data:`MAX_PREVIOUS_WEIGHT`); elsewhere (occlusion, newly seen, moving
   things) the new frame's depth is taken as it is.

It starts afresh, and says why, when there is no pose or no previous output, when the motion
is large (more than ``max_translation`` or :data:`MAX_ROTATION_DEG`) or the frames far apart
in time, and when the two views overlap or agree too little (a new scene).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..geometry.intrinsics import Intrinsics
from .pose import motion, rotation_angle_deg
from .warp import forward_warp

AGREE_TOLERANCE = 0.25     # |log ratio| within which the two depths are blended (about 28 %)
MAX_PREVIOUS_WEIGHT = 0.9  # the previous output's largest share of a fused pixel
ANCHOR_TIME_S = 0.3        # s: time constant of the pull towards the frames' own scale
MAX_ANCHOR_STEP = 0.2      # log: one frame's measurement counts at most this far off
MAX_ROTATION_DEG = 30.0    # between two frames: more is a jump
MAX_GAP_S = 2.0            # s between two frames: more is a jump
MIN_OVERLAP = 0.3          # share of the new frame the previous output covers
MIN_AGREEMENT = 0.3        # share of the overlap where the two agree after alignment


@dataclass(frozen=True)
class Alignment:
    """What the temporal alignment did to one frame."""

    aligned: bool
    reason: str = ""           # why not (a reset), "" when aligned
    fused_share: float = 0.0   # share of the valid pixels blended with the past
    scale_ratio: float = 1.0   # the alignment's scale applied to the new frame


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
        self._unit: object = None

    def reset(self) -> None:
        """Forget the previous output."""
        self._depth = self._weight = self._k = self._pose = None

    def align(self, t: float, pose: np.ndarray | None, depth: np.ndarray, k: Intrinsics,
              unit: object = None, anchor: float | None = 1.0) -> tuple[np.ndarray, Alignment]:
        """The fused depth for the frame stamped ``t`` with ``pose`` (4x4 world_from_camera)
        and its own ``depth`` (metres or relative, NaN invalid) on a grid with intrinsics
        ``k``; ``unit`` names the depth's unit (a change starts afresh).

        ``anchor``: the factor this frame's own scale measurement says ``depth`` should be
        multiplied by (this frame's estimate / the filtered scale applied to it; 1.0 for a
        scale that is not estimated), or None when this frame measured none: the alignment
        is pulled towards it, and carried unchanged through frames without one."""
        why = self._reset_reason(t, pose, depth, k, unit)
        if why:
            return self._restart(t, pose, depth, k, unit, why)
        a_to_b = motion(self._pose, pose)
        moved, held = forward_warp(self._depth, k, a_to_b, self._weight)
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
        offset = float(np.median(sample[np.isfinite(sample)]))
        with np.errstate(invalid="ignore"):
            agree_px = np.abs(log_ratio - np.float32(offset)) < AGREE_TOLERANCE
        agreement = float(np.count_nonzero(agree_px)) / max(int(np.count_nonzero(both)), 1)
        if agreement < MIN_AGREEMENT:
            return self._restart(t, pose, depth, k, unit, (
                f"the previous output agrees with this frame on {agreement:.0%} of the overlap "
                f"(< {MIN_AGREEMENT:.0%}): a new scene"))
        # The new frame aligned to the past, the two blended where they agree ...
        new = depth * np.float32(math.exp(offset))
        w_prev = np.where(agree_px, np.minimum(held / (held + 1.0), MAX_PREVIOUS_WEIGHT), 0.0)
        w_prev = w_prev.astype(np.float32)
        fused = np.where(agree_px, w_prev * moved + (1.0 - w_prev) * new, new)
        # ... then the whole output pulled towards this frame's own scale measurement (anchored).
        correction = 0.0
        if anchor is not None and anchor > 0 and math.isfinite(anchor):
            pull = 1.0 - math.exp(-max(t - self._t, 0.0) / ANCHOR_TIME_S)
            correction = pull * min(max(math.log(anchor) - offset, -MAX_ANCHOR_STEP),
                                    MAX_ANCHOR_STEP)
            fused *= np.float32(math.exp(correction))
        ratio = math.exp(offset + correction)
        self._store(t, pose, fused, k, unit, np.where(agree_px, held + 1.0, 1.0))
        share = float(np.count_nonzero(agree_px)) / valid_count
        return fused.astype(np.float32), Alignment(True, fused_share=share, scale_ratio=ratio)

    def _reset_reason(self, t: float, pose: np.ndarray | None, depth: np.ndarray,
                      k: Intrinsics, unit: object) -> str:
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
                 unit: object, reason: str) -> tuple[np.ndarray, Alignment]:
        if pose is None:
            self.reset()
        else:
            self._store(t, pose, depth, k, unit, np.ones(depth.shape, np.float32))
        return depth, Alignment(False, reason)

    def _store(self, t: float, pose: np.ndarray, depth: np.ndarray, k: Intrinsics,
               unit: object, weight: np.ndarray) -> None:
        self._depth, self._k, self._pose, self._t, self._unit = depth, k, pose, t, unit
        self._weight = weight.astype(np.float32)
