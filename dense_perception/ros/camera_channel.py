# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""One camera of the node (``cameras``): its input subscriptions, its outputs under its prefix,
its CameraInfo history, its track (``core.camera_track``: its metric-scale filter, its motion
state and its reference depth window), its pose from the node's odometry and its counters.
The model and the two worker stages are the node's and shared by every camera
(``perception.Perception``).
"""

from __future__ import annotations

import math
import re
import time
from typing import Any, Callable

from rclpy.node import Node
from sensor_msgs.msg import CameraInfo, Image

from ..core.geometry.camera_info_choice import CameraInfoHistory, stamp_ns
from ..core.camera_track import CameraTrack
from ..core.motion.camera_motion import motion_diagnostics
from ..core.scale.metric_scale import fixed_scale_report, scale_diagnostics
from ..core.scale.scale_tally import ScaleTally
from ..core.wiring.derived import CameraSetup
from ..core.timing import RateMeter
from .camera_input import CameraInput
from .compat import GraphWatch
from .diagnostics import FrameStats
from .odometry_input import OdometryInput
from .outputs import Outputs

CAMERA_INFO_HISTORY = 30
# A frame without a pose: these reasons hold as long as the robot's set-up does, so they are said
# once; the others (a gap, a stamp out of range, a refused message) every 10 s while they last.
SAID_ONCE = ("no odometry", "no mounting")
# The motion scale's reasons that a wrong mounting gives (core/motion/motion_scale.py).
SUSPECT_MOUNTING = ("off the epipolar lines", "moves against the camera motion")


class CameraChannel:
    """Everything that is per camera. ``name`` "" is the single default camera (topics
    ``image``, ``camera_info``, outputs at the node's namespace, as before ``cameras``)."""

    def __init__(self, node: Node, setup: CameraSetup, spec: Any, watch: GraphWatch, *,
                 on_image: Callable[["CameraChannel", Any], None],
                 odometry: tuple[OdometryInput, int] | None = None) -> None:
        """``setup``: this camera's configuration, derived once from the settings by the node
        (``core.wiring.derived.node_setup``); ``spec``: the model's; ``on_image(channel, msg)``:
        a frame arrived (the executor thread); ``odometry``: the node's odometry input and this
        camera's index among the cameras."""
        name = setup.name
        self.name = name
        self.odometry = odometry
        # Its scale filter, motion state and reference depth window, kept across its frames.
        self.track = CameraTrack(setup.track)
        self.pose_note = "-"  # why the last frame had no pose ("" when it had one)
        self.posed, self.unposed = 0, {}  # frames with a pose; without one, by kind of reason
        self.scales = ScaleTally()  # frames in metres, and the withheld by kind of reason
        self.scales.keep = False    # counts only: a node runs for days
        self.setup = setup  # the configuration in force (runtime changes: :meth:`configure`)
        self.camera_infos: CameraInfoHistory[CameraInfo] = CameraInfoHistory(CAMERA_INFO_HISTORY)
        self.in_rate, self.out_rate = RateMeter(), RateMeter()
        self.stats = FrameStats()
        self.model_s = 0.0  # seconds of inference spent on this camera's frames (its share)
        self.outputs = Outputs(node, spec, setup.outputs, watch, prefix=name)
        subscribe = setup.input
        self.camera = CameraInput(
            node, compressed=subscribe.compressed, mode=subscribe.qos,
            on_image=lambda msg: on_image(self, msg), on_info=self._on_camera_info,
            watch=watch, on_reference=self._on_reference if subscribe.reference else None,
            info_mode=subscribe.info_qos, prefix=name)

    @property
    def log_prefix(self) -> str:
        """What leads this camera's log lines ("front: "; "" for the single default camera)."""
        return f"{self.name}: " if self.name else ""

    def update(self, active: bool) -> None:
        """Subscribe to the camera while active and one of its outputs has a subscriber
        (lazy per camera: one nobody reads is not even received)."""
        self.camera.update(active and bool(self.outputs.listened()))

    def configure(self, setup: CameraSetup) -> None:
        """Runtime parameter changes (``setup``: this camera's configuration from them)."""
        self.setup = setup
        self.track.configure(setup.track)  # read from the next frame on

    def close(self) -> None:
        self.camera.close()
        self.outputs.close()
        self.track.close()

    def _on_camera_info(self, msg: CameraInfo) -> None:
        self.camera_infos.add(stamp_ns(msg.header.stamp), msg)

    def _on_reference(self, msg: Image) -> None:
        self.track.references.add(stamp_ns(msg.header.stamp), msg, len(msg.data))

    def reference_near(self, stamp: int) -> tuple[Image | None, int]:
        """(the reference depth message nearest ``stamp`` (ns) within reference_depth_slop, or
        None; its distance in ns)."""
        return self.track.references.nearest(stamp, int(self.setup.reference_slop * 1e9))

    def motion_inputs(self, header: Any, warn: Callable[..., None],
                      received: float | None = None,
                      generation: int | None = None) -> dict[str, Any]:
        """``pose`` for the track's finish
        (:meth:`~dense_perception.core.camera_track.CameraTrack.finish`): this camera's pose
        at the image ``header``'s stamp (None without one: the frame is processed as it is,
        and ``warn(key, text, period)`` says why, throttled per kind of reason).
        ``received`` (monotonic s) and ``generation``: when the frame came and the odometry's
        generation then (:meth:`.odometry_input.OdometryInput.pose_at`: a frame past the
        newest odometry waits for the next message until ``odometry_wait`` after it came).
        Called on the worker that finishes frames, never the executor."""
        found = self.odometry[0].pose_at(self.odometry[1], header, received, generation) \
            if self.odometry is not None else None
        if found is not None and found.pose is None:
            self.unposed[found.kind] = self.unposed.get(found.kind, 0) + 1
            warn(f"motion:{self.name}:{found.kind}", f"{self.log_prefix}no camera motion for "
                 f"this frame (processed without it): {found.reason}",
                 math.inf if found.kind in SAID_ONCE else 10.0)
        self.posed += found is not None and found.pose is not None
        self.pose_note = "no odometry input" if found is None else found.reason
        return {"pose": None if found is None else found.pose}

    def scale_warning(self, reason: str, frame_id: str) -> tuple[str, str]:
        """(a throttle key for the kind of ``reason``, the text) of a frame's depth scale
        note: each kind is said on its own (one throttle for all showed only the first), and
        where the motion scale finds the image motion off the epipolar lines (or against the
        camera motion) while the pose comes from odometry, the mounting is named: the usual
        cause there is ``camera_in_base``, not the scene."""
        kind = re.sub(r"[-+]?\d+(?:\.\d+)?", "#", reason)
        text = f"{self.log_prefix}no depth scale from this frame: {reason}"
        if self.odometry is not None and self.pose_note == "" and any(
                sign in reason for sign in SUSPECT_MOUNTING):
            text += "; " + self.odometry[0].mounting_suspect(self.odometry[1], frame_id)
        return f"scale:{self.name}:{kind}", text

    def status_values(self, metric_depth: bool) -> tuple[dict[str, str], str]:
        """Diagnostics values on the depth's unit and scale and on the camera's motion, and a
        warning ("" when none)."""
        scaler = self.track.scaler
        if scaler is None:
            values, warning = scale_diagnostics(fixed_scale_report(
                metric_depth, self.setup.scale_source, self.setup.fixed_scale))
        else:
            values, warning = scale_diagnostics(scaler.last)
            config = scaler.config  # the settings in force: the next frame's
            values["depth scale filter"] = (f"time constant {config.time_constant:g} s, max "
                                            f"age {config.max_age:g} s")
            tally = self.scales
            values["frames in metres"] = f"{tally.metric} of {tally.frames}"
            values["frames withheld, by reason"] = "; ".join(
                f"{n} x {kind}" for kind, n in sorted(tally.withheld.items(),
                                                     key=lambda kv: -kv[1])[:5]) or "0"
        values.update(motion_diagnostics(self.track.motion.last, self.track.motion))
        values["camera pose note"] = self.pose_note or "-"
        if self.odometry is not None:
            values["frames with camera pose"] = str(self.posed)
            values["frames without camera pose"] = ", ".join(
                f"{kind}: {n}" for kind, n in self.unposed.items()) or "0"
            values.update(self.odometry[0].values())
        return values, warning

    def arrived(self, active: bool) -> float:
        """Count a frame's arrival; its monotonic receive time."""
        now = time.monotonic()
        self.in_rate.tick(now)
        if active:
            self.stats.frame_arrived(now)  # an output is due: the stall clock runs
        return now
