# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""One camera's motion state, kept across frames by its caller like its ``DepthScaler``: the
motion scale (``depth_scale_source: motion``), the temporal alignment, and the TAE of its last
two outputs. The pipeline calls it from ``finish`` (see the package docstring for the API).

The motion scale is measured on keyframes off the frame path (:mod:`.keyframes`); a frame
only applies the latest measurement. A keyframe's measurement is of the keyframe's depth, so
it lands as the gap between what was published on the keyframe and what it measured, less
what the anchor has pulled since: the output carried by the warp since the keyframe is off by
that much now (:meth:`.temporal.TemporalAligner.align`'s ``gap``). Its scale map is read on
each later frame's own depth: the measurement's metric points moved there by the poses
(:func:`.scale_map.carried_correction`). The poses the frame path moves things by (the
alignment, the map) are taken on the pose clock, at the offset the measurements compensate."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

import cv2
import numpy as np

from ..geometry.fit import FitPlan, Interp
from ..geometry.intrinsics import Intrinsics
from ..preprocess import to_rgb8
from ..scale.estimators import Estimate
from ..scale.metric_scale import ESTIMATED_SOURCES, with_output_error, withholds_depth
from .keyframes import KeyframeWorker, Measured
from .motion_scale import MotionScale
from .output_error import OutputError
from .pose import motion
from .scale_map import carried_correction
from .temporal import Alignment, DepthUnit, TemporalAligner
from .warp import tae


@dataclass(frozen=True)
class MotionConfig:
    """The motion settings of the same names."""

    temporal_alignment: bool = True
    min_baseline: float = 0.1           # motion_scale_min_baseline (m)
    scale_map: bool = True              # motion_scale_map
    max_translation: float = 0.5        # temporal_max_translation (m): more is a jump
    clock_offset: float = 0.0           # pose_clock_offset (s); 0 = measured from the flow
    # offline: each keyframe's measurement lands on the next keyframe, waited for there (the
    # same run on any machine); the node: a frame never waits (newest keyframe wins)
    wait_for_keyframes: bool = True


@dataclass(frozen=True)
class MotionReport:
    """What the camera's motion did to one frame, for diagnostics and summaries."""

    has_pose: bool
    aligned: bool = False
    reason: str = ""            # why the frame was not aligned (a reset), "" when it was
    fused_share: float = 0.0
    # (previous output, this output, intrinsics, previous-to-this motion): what :attr:`tae`
    # reads; None when the two cannot be compared
    pair: tuple | None = field(default=None, repr=False, compare=False)
    gap: float | None = None    # log: the frame's own scale measurement over the past's
    # the published scale's relative error (log) with the motion scale and the alignment
    # together (.output_error); None where the scale's own error stands
    output_sigma: float | None = None

    @cached_property
    def tae(self) -> float | None:
        """The self-consistency of this output and the previous one (TAE), computed when first
        read: /diagnostics reads it once a period, not on every frame's hot path."""
        return None if self.pair is None else tae(*self.pair)


def motion_diagnostics(report: MotionReport | None, motion: Any = None) -> dict[str, str]:
    """Key/value strings for /diagnostics (empty without a report); with the camera's
    ``motion`` (:class:`CameraMotion`), its keyframe worker's figures too."""
    if report is None:
        return {}
    worker = {} if motion is None or not motion.keyframes.measured else {
        "motion scale measurement (ms)": f"{motion.keyframes.last_ms:.1f}",
        "motion scale frames measured": str(motion.keyframes.measured),
        "motion scale frames skipped (worker busy)": str(motion.keyframes.dropped)}
    return {**worker, "camera pose": "yes" if report.has_pose else "no",
            "temporal alignment": "aligned" if report.aligned else (report.reason or "off"),
            "temporal fused share": f"{report.fused_share:.2f}",
            "temporal TAE": "-" if report.tae is None else f"{report.tae:.4f}"}


def grey_on_grid(raw: Any, plan: FitPlan, output_resolution: str,
                 size: tuple[int, int]) -> np.ndarray:
    """A RawFrame's image as uint8 grey on the published grid (``size`` = width, height): the
    frame itself when it is that grid (and not rectified), else the model's view un-fitted."""
    def grey(image: np.ndarray) -> np.ndarray:
        return cv2.cvtColor(to_rgb8(image, raw.fmt), cv2.COLOR_RGB2GRAY)
    frame = raw.frame
    if (frame.shape[1], frame.shape[0]) == size and not raw.rectified:
        return grey(frame)
    return plan.unfit(grey(raw.fitted), output_resolution, Interp.LINEAR)


@dataclass(frozen=True)
class _Published:
    """What a keyframe was published at, to place its late measurement."""

    epoch: int      # the alignment's epoch
    level: float    # log metres per unit of the keyframe's relative depth, as published
    pulled: float   # the alignment's corrections summed by then (log)


LEDGER_SIZE = 64  # keyframes remembered (a measurement older than this does not land)
# frames a measurement may take to land in the node (the worker's own pace) before the output
# counts as carried without one: the landed gaps hold the drift over that lag already
LANDING_FRAMES = 3


@dataclass(frozen=True)
class _Carrier:
    """The measurement whose scale map the frames after it read: its metric points (the
    keyframe's optical frame), the keyframe's stamp and pose, and the pose clock's offset it
    compensated (None: none)."""

    points: np.ndarray
    t: float
    pose: np.ndarray
    offset: float | None


@dataclass(frozen=True)
class _Output:
    """The camera's last published depth, what the next frame's TAE compares with."""

    depth: np.ndarray
    pose: np.ndarray
    k: Intrinsics
    unit: DepthUnit | None


class CameraMotion:
    """Per camera: the motion scale's past frames, the temporal state and the last output."""

    def __init__(self, config: MotionConfig = MotionConfig()) -> None:
        self.config = config
        self.scale = MotionScale(config.min_baseline, config.scale_map, config.clock_offset)
        self.scale.own_correction = False  # measurements land on later frames: carried there
        self.keyframes = KeyframeWorker(self.scale, config.wait_for_keyframes)
        self.temporal = TemporalAligner(config.max_translation)
        self.output_error = OutputError()
        self._last: _Output | None = None
        self.last: MotionReport | None = None
        self._ledger: dict[int, _Published] = {}  # keyframe serial -> what was published
        self._key_poses: dict[int, np.ndarray] = {}  # keyframe serial -> its pose
        # the last measurement with its metric points: its map on later frames
        self._carrier: _Carrier | None = None
        self._keyframe: int | None = None     # this frame's serial when it is a keyframe
        self._landed: Measured | None = None  # the measurement that landed on this frame
        self._due = False  # a measurement was due on this frame (else: between two)
        self._waiting = 0  # frames since a measurement last landed (the node's)
        # what frames without a measurement of their own get: the last one's reason (when it
        # found none) and its scale map
        self._between = Estimate(None)
        self._ratio = 1.0  # the last alignment's scale on its frame

    def configure(self, config: MotionConfig) -> None:
        """Runtime changes (temporal_alignment, motion_scale_min_baseline, the jump limit),
        read from the next frame on; the past is kept."""
        self.config = config
        self.scale.min_baseline = config.min_baseline
        self.temporal.max_translation = config.max_translation
        self.keyframes.measure_next()  # the change is measured on the next frame

    def reset(self) -> None:
        """Forget the past (a new sequence)."""
        self.keyframes.reset()
        self.scale.forget()
        self.temporal.reset()
        self.output_error.reset()
        self._last = None
        self._ledger.clear()
        self._key_poses.clear()
        self._carrier = None
        self._landed = None
        self._between = Estimate(None)

    def close(self) -> None:
        """Stop the keyframe worker (at shutdown)."""
        self.keyframes.close()

    def frame_estimate(self, source: str, t: float, pose: np.ndarray | None, raw: Any,
                       products: Any, output_resolution: str) -> Estimate | None:
        """The pipeline's hook before the scale: the motion estimate for ``source`` motion
        (None for other sources): the keyframe measurement that lands on this frame, else
        none (with the last measurement's reason and scale map). A keyframe is handed to
        the worker here."""
        self._keyframe = self._landed = None
        self._due = False
        if source != "motion":
            return None
        if pose is None:
            return Estimate(None, reason="no camera pose for this frame (motion unknown)")
        self.scale.observe(t, pose)
        keyframe = self._due = self.keyframes.keyframe(t)
        if self.keyframes.wait and keyframe:  # offline: the last keyframe's, waited for here
            self._landed = self.keyframes.collect()
        if not self.keyframes.wait:
            self._landed = self.keyframes.collect()  # the latest finished, never waited for
            self._waiting = 0 if self._landed is not None else self._waiting + 1
            self._due = self._landed is not None or self._waiting > LANDING_FRAMES
        said = None  # a keyframe without a pair says why at once (no baseline, too fast)
        if keyframe:
            grey = grey_on_grid(raw, products.plan, output_resolution,
                                (products.width, products.height))
            pair = self.scale.pair(t, pose, grey, observed=True)
            if isinstance(pair, Estimate):
                said = pair
            else:
                self._keyframe = self.keyframes.submit(pair, products.depth,
                                                       products.intrinsics)
                self._key_poses[self._keyframe] = pose
                self._key_poses.pop(self._keyframe - LEDGER_SIZE, None)
        landed = self._landed
        if landed is not None and (landed.estimate.scale is not None or said is None):
            est = landed.estimate
            key_pose = self._key_poses.get(landed.serial)
            self._carrier = None if est.scale is None or est.points is None or \
                key_pose is None else _Carrier(est.points, landed.t, key_pose, est.clock_offset)
            self._between = Estimate(None, reason=est.reason) if est.scale is None else \
                Estimate(None, scale_map=est.scale_map)
            # Collected before this frame's own submit: always an earlier frame's measurement,
            # so its map is carried here.
            return replace(est, correction=self._carried(t, pose, products))
        self._landed = None
        if said is not None:
            self._between = Estimate(None, reason=said.reason,
                                     scale_map=self._between.scale_map)
        between = self._between
        if between.scale_map is None:
            return between
        return replace(between, correction=self._carried(t, pose, products))

    def _carried(self, t: float, pose: np.ndarray, products: Any) -> np.ndarray | None:
        """The last measurement's scale map on this frame: its metric points moved here by
        the poses and fitted on this frame's depth (:func:`.scale_map.carried_correction`);
        None (the keyframe's map is read instead) where too few of them land in this view."""
        carrier = self._carrier
        if carrier is None:
            return None
        moved = self.scale.carried_motion((carrier.t, carrier.pose), (t, pose), carrier.offset)
        return carried_correction(carrier.points, moved, products.intrinsics, products.depth)

    def _landed_gap(self, estimate: float | None) -> float | None:
        """How far the output carried to this frame is from the measurement that landed on
        it (log; None without one, or when the output restarted since its keyframe)."""
        landed = self._landed
        published = None if landed is None else self._ledger.get(landed.serial)
        if published is None or not estimate or estimate <= 0 or \
                published.epoch != self.temporal.epoch:
            return None
        return math.log(estimate) - published.level - (self.temporal.pulled - published.pulled)

    def _remember(self, scale: float | None, ratio: float) -> None:
        """This frame's published level, when it is a keyframe (its measurement lands later)."""
        if self._keyframe is None or not scale or scale <= 0:
            return
        self._ledger[self._keyframe] = _Published(
            self.temporal.epoch, math.log(scale) + math.log(ratio), self.temporal.pulled)
        while len(self._ledger) > LEDGER_SIZE:
            del self._ledger[min(self._ledger)]

    def _clock_offset(self) -> float | None:
        """The pose clock's offset the frame path compensates: the one set by hand, else
        the one the last measurement that landed found (never the worker's latest: offline
        the same run on any machine)."""
        if self.config.clock_offset:
            return self.config.clock_offset
        return None if self._carrier is None else self._carrier.offset

    def judges_error(self, scaler: Any, metric_model: bool = False) -> bool:
        """Whether the error of ``scaler``'s scale is judged on the aligned output (the motion
        scale carried by the temporal alignment, :mod:`.output_error`) instead of the
        filter's: then the scaler must not withhold by its own error (the pipeline passes
        ``bound=False``) and :meth:`align_products` does. Not for a metric model's own metres
        (``metric_model``): there the scale is the model's, checked by motion, and the
        filter's error stands."""
        return (scaler is not None and not metric_model and self.config.temporal_alignment
                and scaler.config.source == "motion" and not scaler.config.per_frame)

    def align_products(self, t: float, pose: np.ndarray | None, products: Any,
                       scaler: Any = None) -> None:
        """The pipeline's hook after the scale: ``products.depth`` aligned over time, and
        ``products.motion`` its report. Depth withheld for want of a scale is left alone.
        ``scaler``: the scale's error is judged here (:meth:`judges_error`); the report in
        ``products.scale`` (and ``scaler.last``) then carries the aligned output's error."""
        report = products.scale
        if pose is not None:  # at the image's time, as the measurements take it
            pose = self.scale.on_clock(t, pose, self._clock_offset())
        if withholds_depth(report):
            self.last = products.motion = MotionReport(
                pose is not None, reason="depth withheld (no metric scale yet)")
            return
        anchor: float | None = 1.0
        gap = None
        keyframed = report is not None and report.source == "motion"
        if keyframed:  # a keyframe's measurement lands on a later frame: by the ledger
            anchor, gap = None, self._landed_gap(report.estimate)
        elif report is not None and report.source in ESTIMATED_SOURCES:
            anchor = None if report.estimate is None or not report.scale else \
                report.estimate / report.scale
        unit = None if report is None else DepthUnit(report.source, report.metric)
        products.depth, products.motion = self.align(t, pose, products.depth,
                                                     products.intrinsics, unit, anchor, gap)
        if keyframed:
            self._remember(report.scale, self._ratio)
        if scaler is not None and report is not None:
            done = products.motion
            # between two measurements due the output is not carried further: their gaps
            # hold what it drifts by between them
            due = not keyframed or self._due
            sigma = self.output_error.update(done.aligned, done.gap, report.estimate_sigma, due)
            self.last = products.motion = replace(products.motion, output_sigma=sigma)
            products.scale = scaler.last = with_output_error(report, sigma, scaler.config,
                                                             self.output_error.why)

    def align(self, t: float, pose: np.ndarray | None, depth: np.ndarray, k: Intrinsics,
              unit: DepthUnit | None, anchor: float | None, gap: float | None = None
              ) -> tuple[np.ndarray, MotionReport]:
        """The published depth (fused with the past when ``temporal_alignment``) and the
        frame's report; see :meth:`.temporal.TemporalAligner.align` for ``unit``, ``anchor``
        and ``gap``."""
        if self.config.temporal_alignment:
            depth, done = self.temporal.align(t, pose, depth, k, unit, anchor, gap=gap)
        else:
            done = Alignment(False, "temporal_alignment is off")
        self._ratio = done.scale_ratio
        last, pair = self._last, None
        if pose is not None and last is not None and last.k == k and last.unit == unit \
                and last.depth.shape == depth.shape:
            pair = (last.depth, depth, k, motion(last.pose, pose))
        self._last = None if pose is None else _Output(depth, pose, k, unit)
        self.last = MotionReport(pose is not None, done.aligned, done.reason, done.fused_share,
                                 pair, done.gap)
        return depth, self.last
