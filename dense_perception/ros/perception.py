# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""What the node holds while it is configured: the loaded model, the two worker stages, the
camera input, the output publishers and the diagnostics. Shared by the plain node and the
lifecycle node (``node.py``, ``lifecycle.py``), which only decide when to make, activate,
deactivate and close it.

Frames: the camera callback drops each message into a one-slot buffer (newest wins); stage
one converts and runs the model, stage two post-processes and publishes (``core.two_stage``),
so a 1-4 s model never builds a backlog behind a 30 fps camera.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from diagnostic_msgs.msg import DiagnosticArray
from rclpy.node import Node
from sensor_msgs.msg import CompressedImage, Image

from ..core.geometry.camera_info_choice import stamp_ns
from ..core.conversions import (BadImageError, compressed_to_array, image_msg_to_array,
                                image_to_array)
from ..core.scheduling.newest_slots import NewestSlots
from ..core.scale.metric_scale import RESTARTED
from ..core.scale.estimators import reference_to_metres
from ..core.model.specs import ModelSignatureError
from ..core.settings.table import MODEL_STATUS, Settings
from ..core.pipeline import DensePipeline, load_pipeline
from ..core.frame_data import RawFrame
from ..core.products import request_for
from ..core.backends.native_log import capture_native_stderr, with_gpu_reason
from ..core.backends.runner import ModelLoadError, resolve_model_path
from ..core.backends.runner_base import RunnerLostError
from ..core.wiring.derived import compression_config, node_setup, pipeline_config
from ..core.scheduling.two_stage import LiveTwoStage
from .camera_channel import CameraChannel
from .compat import GraphWatch
from .diagnostics import build_diagnostics, model_status
from .odometry_input import OdometryInput
from .outputs import SKIP_LOG_PERIOD
from .parameters import StartupError, ignored_at_start

NODE_NAME = "dense_perception"
FINISH_NICE = 10  # the post-processing thread's nice value, relative to the node's


@dataclass
class _Frame:
    msg: Image | CompressedImage
    received: float
    channel: CameraChannel
    reference: Image | None = None  # reference_depth: the nearest one when the frame came
    reference_dt: int = 0           # its stamp's distance from the image's (ns)
    odometry_generation: int = 0    # the odometry's generation when it came (restarts)

    @property
    def key(self) -> str:  # the camera, for the round-robin hand-over
        return self.channel.name


@dataclass
class _Inferred:
    frame: _Frame
    raw: RawFrame
    pipeline: DensePipeline
    settings: Settings
    camera_info_source: str  # which CameraInfo was used (for diagnostics)

    @property
    def key(self) -> str:
        return self.frame.channel.name


def load_quietly(model_path: str, settings: Settings, logger: Any) -> DensePipeline:
    """The model loaded with LiteRT's own start-up lines (native, on stderr) held back for the
    DEBUG log; a failed load is one StartupError line, with the GPU's reason from that log
    where there is one. The node's own lines follow in their order once the load is over."""
    said: list[tuple[bool, str]] = []  # (a warning?, text)
    failure: Exception | None = None
    with capture_native_stderr() as native:
        try:
            pipeline = load_pipeline(model_path, settings,
                                     log=lambda text: said.append((False, text)),
                                     warn=lambda text: said.append((True, text)))
        except (ModelLoadError, ModelSignatureError, ValueError) as exc:
            failure = exc
    for warning, text in said:  # one call site per severity: rclpy's logger insists
        if warning:
            logger.warning(text)
        else:
            logger.info(text)
    if native.text.strip():
        logger.debug("LiteRT's own start-up log:\n" + native.text.rstrip())
    if failure is not None:
        raise StartupError(with_gpu_reason(str(failure), native)) from None
    return pipeline


class Perception:
    """The configured node's working parts (see the module docstring). Made inactive."""

    def __init__(self, node: Node, settings: Settings,
                 runner_hook: Callable[[Any], Any] | None = None) -> None:
        self._node = node
        model_path = resolve_model_path(settings.model_path)
        self.pipeline: DensePipeline = load_quietly(model_path, settings, node.get_logger())
        if runner_hook is not None:
            self.pipeline.runner = runner_hook(self.pipeline.runner)
        self.settings = settings
        self.spec = self.pipeline.spec
        # the node's one entry into what the settings mean here: each part takes its own record
        setup = node_setup(settings, self.spec, self.pipeline.confidence_note())
        if setup.problem:
            raise StartupError(setup.problem)
        several = len(setup.cameras) > 1 or setup.cameras[0].name != ""
        self.model_name = Path(model_path).name
        self.state = ""  # the lifecycle state, for diagnostics ("" for the plain node)
        self.fatal = ""  # why the node must exit (the GPU worker is lost); "" while all is well
        self.active = False
        self._lock = threading.Lock()
        self._graph_lock = threading.Lock()
        self._warned: dict[str, float] = {}
        self.watch = GraphWatch(node, self.on_graph_change)
        self.channels: list[CameraChannel] = []
        # the robot's motion: one odometry input, each camera's pose from it (StartupError first)
        self.odometry = OdometryInput(node, setup.odometry, self._warn_once_per)
        try:
            for index, camera in enumerate(setup.cameras):
                self.channels.append(CameraChannel(
                    node, camera, self.spec, self.watch, on_image=self._on_image,
                    odometry=(self.odometry, index)))
        except StartupError:
            self.odometry.close()
            for channel in self.channels:
                channel.close()
            self.watch.close()  # a lifecycle node stays up, unconfigured: leave nothing behind
            raise
        self._diag_pub = node.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self._diag_timer = node.create_timer(settings.diagnostics_period,
                                             self.publish_diagnostics)
        # Several cameras: one slot per camera at each stage, taken in turn (fair sharing).
        slots = (lambda: NewestSlots(lambda item: item.key)) if several else NewestSlots
        self.stages = LiveTwoStage(self._infer, self._finish, on_error=self._on_failure,
                                   name=NODE_NAME, second_nice=FINISH_NICE, slots=slots)
        relative = "" if self.spec.metric_depth \
            else f"; depth_scale_source: {settings.depth_scale_source}"
        node.get_logger().info(
            f"{self.spec.display_name} ({'metric' if self.spec.metric_depth else 'relative'} "
            f"depth{relative}) on {self.pipeline.runner.description}; fit={settings.fit}, "
            f"output_resolution={settings.output_resolution}, input_qos={settings.input_qos}"
            + (f"; cameras: {', '.join(c.name for c in setup.cameras)}" if several else ""))
        # a setting given that does nothing here: one WARN each, and in every camera's status
        ignored = ignored_at_start(node.get_logger(), setup.notes)
        for channel in self.channels:
            channel.stats.ignored_settings = ignored

    # ---- state ---------------------------------------------------------------------------------
    def activate(self) -> None:
        """Publish: subscribe to the camera whenever an output has a subscriber."""
        self.active = True
        self.on_graph_change()

    def deactivate(self) -> None:
        """Stop receiving frames and publishing; the model stays loaded."""
        self.active = False
        for channel in self.channels:
            channel.stats.end_wait()  # no output is due while inactive
        self.on_graph_change()

    def stop(self) -> None:
        """Stop the workers and the GPU worker process, if any (an inference in progress is
        not waited for)."""
        self.stages.stop()
        if self.pipeline is not None:
            self.pipeline.runner.close()

    def close(self) -> None:
        """Stop the workers and free everything, the model included."""
        self.deactivate()
        self.stop()
        self.watch.close()
        self.odometry.close()
        for channel in self.channels:
            channel.close()
        self._node.destroy_timer(self._diag_timer)
        self._node.destroy_publisher(self._diag_pub)
        if self.pipeline is not None:
            self.pipeline.host_threads.close()
        self.pipeline = None

    def on_graph_change(self) -> None:
        """An output gained or lost a subscriber, or a camera publisher came or went."""
        with self._graph_lock:
            for channel in self.channels:
                channel.update(self.active)
            if hasattr(self, "odometry"):  # its QoS follows the publishers (backstop)
                self.odometry.update()

    def apply(self, changes: dict[str, Any]) -> None:
        """Use changed runtime parameters from the next frame on (already validated)."""
        settings = self.settings.changed(changes)
        setup = node_setup(settings, self.spec)  # checked when set
        for channel, camera in zip(self.channels, setup.cameras):
            channel.configure(camera)
        self.odometry.configure(setup.odometry)
        with self._lock:
            self.settings = settings
            old = self.pipeline
            self.pipeline = DensePipeline(old.runner, old.spec, pipeline_config(settings),
                                          old.timer, old.host_threads)
        self._node.get_logger().info("parameters changed: " + ", ".join(
            f"{k}={v}" for k, v in changes.items()))

    @property
    def frames_dropped(self) -> int:
        """Frames replaced by newer ones before inference or before publishing."""
        return self.stages.dropped

    # ---- callbacks (executor thread) -------------------------------------------------------
    def _on_image(self, channel: CameraChannel, msg: Image | CompressedImage) -> None:
        frame = _Frame(msg, channel.arrived(self.active), channel,
                       odometry_generation=self.odometry.generation)
        if channel.track.scaler is not None and len(channel.track.references):
            # Taken now, by stamp: a slow model's frame must not outlive its reference.
            frame.reference, frame.reference_dt = channel.reference_near(
                stamp_ns(msg.header.stamp))
        self.stages.put(frame)

    # ---- the two stages (worker threads) ---------------------------------------------------------
    def _on_failure(self, exc: Exception) -> None:
        if isinstance(exc, RunnerLostError) and not self.fatal:
            self.fatal = str(exc)  # node.main exits non-zero with it
        # which camera's frame failed is not known here: count it on each camera that waits
        for channel in self.channels:
            if channel.stats.waiting_since is not None or len(self.channels) == 1:
                channel.stats.record_failure(f"{type(exc).__name__}: {exc}")
        self._warn_once_per("failure", f"frame failed, skipped: {type(exc).__name__}: {exc}")

    def _infer(self, frame: _Frame) -> _Inferred | None:
        with self._lock:
            pipeline, settings = self.pipeline, self.settings
        channel = frame.channel
        listened = channel.outputs.listened()
        if not listened or not self.active:
            channel.stats.idle += 1
            channel.stats.end_wait()  # nobody wants this frame's output
            return None
        request = request_for(listened, settings.points_rgb)
        msg = frame.msg
        try:
            if isinstance(msg, CompressedImage):
                image, encoding = compressed_to_array(msg)
            else:
                image, encoding = image_to_array(msg), msg.encoding
        except BadImageError as exc:
            channel.stats.rejected += 1
            channel.stats.end_wait()  # no output is due for a bad frame (it is counted instead)
            self._warn_once_per(f"bad:{channel.name}:{str(exc)[:40]}",
                                f"{channel.log_prefix}skipping image: {exc}")
            return None
        # The camera is needed before inference: a distorted raw image is rectified first.
        # Until the first CameraInfo arrives, wait for it up to the slop after the frame came.
        slop = settings.camera_info_slop
        info, source = channel.camera_infos.choose(
            stamp_ns(msg.header.stamp), int(slop * 1e9),
            wait_s=frame.received + slop - time.monotonic())
        started = time.monotonic()
        raw = pipeline.infer(image, encoding, request, pipeline.camera_from_info(info))
        channel.model_s += time.monotonic() - started
        return _Inferred(frame, raw, pipeline, settings, source)

    def _finish(self, item: _Inferred) -> None:
        channel = item.frame.channel
        stats, scaler = channel.stats, channel.track.scaler
        where = channel.log_prefix
        header = item.frame.msg.header
        stamp = header.stamp.sec + header.stamp.nanosec * 1e-9
        reference = self._reference_for(item.frame) if scaler is not None else None
        # A frame stamped past the newest odometry waits here (this worker) for the next one.
        motion = channel.motion_inputs(header, self._warn_once_per, item.frame.received,
                                       item.frame.odometry_generation)
        products = channel.track.finish(item.pipeline, item.raw, stamp, reference=reference,
                                        **motion)
        stats.computed = products.computed()
        channel.scales.add(products.scale)
        if products.scale is not None and products.scale.restarted:
            self._node.get_logger().info(f"{where}{RESTARTED}")
        if products.scale is not None and products.scale.reason and scaler is not None:
            # throttled per kind of reason: one throttle for all hid every reason but the first
            self._warn_once_per(*channel.scale_warning(products.scale.reason, header.frame_id),
                                period=10.0)
        stats.camera_info = item.camera_info_source if not products.intrinsics_guessed \
            else products.intrinsics_note
        stats.intrinsics_guessed = products.intrinsics_guessed
        stats.camera_note = products.camera_note
        stats.camera_model = "pinhole guess (fallback_hfov_deg)" \
            if products.intrinsics_guessed else item.raw.camera.describe()
        if products.intrinsics_guessed:
            self._warn_once_per(f"camera_info:{channel.name}",
                                f"{where}{products.intrinsics_note} (camera_info: "
                                f"{item.camera_info_source})", period=10.0)
        if products.camera_note:
            self._warn_once_per(f"camera_note:{channel.name}", where + products.camera_note,
                                period=10.0)
        if not self.active:  # deactivated while this frame was being computed
            return
        for key, text in channel.outputs.skipped_warnings(products):
            self._warn_once_per(key, text, period=SKIP_LOG_PERIOD)
        with item.pipeline.timer.stage("publish"):
            channel.outputs.publish(products, header, item.settings.depth_encoding,
                                    compression_config(item.settings), item.pipeline.timer)
        stats.record_success(time.monotonic() - item.frame.received)
        stats.input_size = (item.raw.frame.shape[1], item.raw.frame.shape[0])
        stats.frame_id = header.frame_id
        channel.out_rate.tick()

    def _reference_for(self, frame: _Frame) -> Any:
        """The frame's reference depth (metres): the one nearest the image's stamp within the
        slop, of the one taken when the frame came and any that arrived since; or None."""
        best, best_dt = frame.reference, frame.reference_dt
        later, later_dt = frame.channel.reference_near(stamp_ns(frame.msg.header.stamp))
        if later is not None and (best is None or later_dt < best_dt):
            best = later
        if best is None:
            return None
        try:
            return reference_to_metres(image_msg_to_array(best), best.encoding)
        except (KeyError, ValueError) as exc:
            self._warn_once_per("reference", f"reference depth ignored: {exc}")
            return None

    # ---- diagnostics -------------------------------------------------------------------------
    def publish_diagnostics(self) -> None:
        with self._lock:
            settings, pipeline = self.settings, self.pipeline
        if pipeline is None:
            return
        # A backstop for the matched events: one can be handled before the middleware's
        # subscription count has caught up, and then no later event corrects the camera
        # subscription. Looking again every diagnostics period bounds that to one period.
        self.on_graph_change()
        # The cameras taking turns on the model now (those with a frame waiting for output):
        # each one's turn comes after all of theirs, so its frame time is that many.
        turns = sum(channel.stats.waiting_since is not None for channel in self.channels)
        arrays = [self._camera_diagnostics(channel, settings, pipeline, turns)
                  for channel in self.channels]
        array = arrays[0]
        array.status = [status for a in arrays for status in a.status]
        if len(self.channels) > 1:
            array.status.append(model_status(
                f"{self._node.get_fully_qualified_name()}: {MODEL_STATUS}",
                backend=pipeline.runner.description, model=self.model_name,
                stages=pipeline.timer.stats(),
                seconds={channel.name: channel.model_s for channel in self.channels}))
        self._diag_pub.publish(array)

    def _camera_diagnostics(self, channel: CameraChannel, settings: Settings,
                            pipeline: DensePipeline, turns: int = 1) -> DiagnosticArray:
        """One camera's status (named ``<node>: <camera>`` when there are several)."""
        name = self._node.get_fully_qualified_name()
        several = len(self.channels) > 1
        return build_diagnostics(
            name=f"{name}: {channel.name}" if several else name,
            stamp=self._node.get_clock().now().to_msg(),
            backend=pipeline.runner.description, model_kind=self.spec.kind,
            model_size=f"{self.spec.input_width}x{self.spec.input_height}", fit=settings.fit,
            stats=channel.stats, stages=pipeline.timer.stats(),
            input_hz=channel.in_rate.rate(), output_hz=channel.out_rate.rate(),
            received=channel.in_rate.total,
            dropped=self.stages.dropped_for(channel.name) if several else self.frames_dropped,
            backend_note=pipeline.runner.fallback_note, state=self.state,
            input_qos=channel.camera.reliability(),
            depth_scale=channel.status_values(self.spec.metric_depth),
            backend_details=pipeline.runner.details(),
            expected_frame_ms=pipeline.runner.warmup_ms,
            host_threads=pipeline.host_threads.threads, turns=turns,
            bandwidth=channel.outputs.bandwidth_rates())

    def _warn_once_per(self, key: str, text: str, period: float = 5.0) -> None:
        """Log ``text`` at most once per ``period`` seconds for each ``key`` (throttled)."""
        now = time.monotonic()
        if now - self._warned.get(key, -math.inf) >= period:
            self._warned[key] = now
            self._node.get_logger().warning(text)
