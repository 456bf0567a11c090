# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""One camera's state across frames, in one object: the node and ``dense-perception process``
keep a :class:`CameraTrack` per camera and finish every frame of that camera through it.

A track holds what must follow one camera's stream and never mix with another's:

* its metric-scale filter (:class:`~.scale.metric_scale.DepthScaler`; none when the scale is
  not estimated);
* its motion state (:class:`~.motion.camera_motion.CameraMotion`: the motion scale's past
  frames, the temporal alignment and the last output; none when no poses come);
* its reference depth window (:class:`~.scale.reference_window.ReferenceWindow`, by stamp),
  which the front end fills with whatever reference messages it reads.

Two cameras on one robot each get their own track, so the flow never pairs a frame of one
camera with a frame of the other, and a wide and a narrow lens keep their own scales.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from .frame_data import Products, RawFrame
from .geometry.intrinsics import Intrinsics
from .motion.camera_motion import CameraMotion, MotionConfig
from .scale.metric_scale import DepthScaler, ScaleConfig
from .scale.reference_window import ReferenceWindow


class Finisher(Protocol):
    """What finishes a frame: :class:`~.pipeline.DensePipeline` (named by its method only, as
    the pipeline's wiring sits above the parts a track holds)."""

    def finish(self, raw: RawFrame, intrinsics: Intrinsics | None = None,
               scaler: DepthScaler | None = None, stamp: float = 0.0,
               reference: np.ndarray | None = None, *, pose: np.ndarray | None = None,
               motion: Any = None) -> Products:
        """``DensePipeline.finish``."""


@dataclass(frozen=True)
class TrackSetup:
    """What one camera's track takes from the settings."""

    scale: ScaleConfig | None = None    # the scale filter's configuration; None: not estimated
    motion: MotionConfig | None = None  # temporal alignment and the motion scale; None: no poses
    reference_span: float = 0.0         # s of reference depth stamps kept


class CameraTrack:
    """One camera's scale filter, motion state and reference window; :meth:`finish` finishes
    its frames, :meth:`configure` takes runtime changes."""

    def __init__(self, setup: TrackSetup) -> None:
        self.scaler = DepthScaler(setup.scale) if setup.scale is not None else None
        self.motion = CameraMotion(setup.motion) if setup.motion is not None else None
        self.references: ReferenceWindow[Any] = ReferenceWindow(setup.reference_span)

    def configure(self, setup: TrackSetup) -> None:
        """Runtime setting changes: each part keeps its state unless the change makes it
        another calibration (see :meth:`DepthScaler.configure`)."""
        if self.scaler is not None and setup.scale is not None:
            self.scaler.configure(setup.scale)
        if self.motion is not None and setup.motion is not None:
            self.motion.configure(setup.motion)
        self.references.span_s = setup.reference_span

    def close(self) -> None:
        """Stop the motion's keyframe worker (the camera is done)."""
        if self.motion is not None:
            self.motion.close()

    def finish(self, pipeline: Finisher, raw: RawFrame, stamp: float, *,
               pose: np.ndarray | None = None, reference: np.ndarray | None = None
               ) -> Products:
        """``raw`` (``pipeline.infer``'s) finished with this camera's state: its scale (with
        ``reference``, metres registered to the camera, for ``reference_depth``) and, with
        ``pose`` (4x4 world_from_camera of the optical frame at ``stamp`` s; None: unknown),
        the motion scale and the depth aligned over time."""
        return pipeline.finish(raw, None, self.scaler, stamp, reference, pose=pose,
                               motion=self.motion)
