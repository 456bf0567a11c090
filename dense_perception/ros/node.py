"""The ROS 2 node: camera topics in; depth, normals, segmentation, points and diagnostics out.

A thin layer over :class:`~dense_perception.core.pipeline.DensePipeline`. The subscription callback
only drops the message into a one-slot buffer (newest wins); a worker thread converts, runs the
model and publishes, so a 1-4 s model never builds a backlog behind a 30 fps camera.
"""

from __future__ import annotations

import json
import math
import os
import signal
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import rclpy
from rcl_interfaces.msg import (FloatingPointRange, IntegerRange, ParameterDescriptor,
                                SetParametersResult)
from rclpy.exceptions import ParameterException
from rclpy.node import Node
from rclpy.qos import (DurabilityPolicy, QoSProfile,
                       qos_profile_sensor_data)
from rclpy.qos_overriding_options import QoSOverridingOptions
from diagnostic_msgs.msg import DiagnosticArray
from sensor_msgs.msg import CameraInfo, CompressedImage, Image
from std_msgs.msg import String

from ..core import postprocess as post
from .diagnostics import FrameStats, build_diagnostics
from ..core.frame_slot import FrameSlot
from ..core.conversions import (IMAGE_OUTPUTS, OUTPUTS, PRODUCTS_BY_MODEL_OUTPUT, BadImageError,
                          camera_info_to_intrinsics, compressed_to_array, image_to_array)
from .messages import MESSAGE_CLASSES, array_to_image, intrinsics_to_camera_info, points_to_cloud
from ..core.models import ModelSignatureError
from ..core.parameters import PARAMS, PARAMS_BY_NAME
from ..core.pipeline import DensePipeline, PipelineConfig, RawFrame, Request, load_pipeline
from ..core.runner import ModelLoadError, resolve_model_path
from ..core.timing import RateMeter

NODE_NAME = "dense_perception"
PUBLISHER_QOS = QoSProfile(depth=5)  # system default: reliable, volatile (REP 2003)
CAMERA_INFO_HISTORY = 30
# The parameter that switches each product on or off.
PUBLISH_SWITCH = {"depth": "publish_depth", "depth_info": "publish_depth",
                  "depth_colored": "publish_depth", "points": "publish_points",
                  "normals": "publish_normals", "normals_colored": "publish_normals",
                  "labels": "publish_segmentation", "labels_colored": "publish_segmentation",
                  "classes": "publish_segmentation"}
FINISH_NICE = 10  # the post-processing thread's nice value, relative to the node's


class StartupError(RuntimeError):
    """The node cannot start; the message says what is wrong and how to fix it."""


@dataclass
class _Frame:
    msg: Image | CompressedImage
    received: float


@dataclass
class _Inferred:
    frame: _Frame
    raw: RawFrame
    pipeline: DensePipeline
    values: dict[str, Any]


class DensePerceptionNode(Node):
    """Subscribes to ``image`` (+ ``camera_info``) and publishes dense perception products.

    ``runner_hook`` (tests only) wraps the loaded runner, e.g. to inject faults or delays.
    """

    def __init__(self, *, runner_hook: Callable[[Any], Any] | None = None, **kwargs: Any) -> None:
        super().__init__(NODE_NAME, **kwargs)
        try:
            self._declare_parameters()
        except ParameterException as exc:
            raise StartupError(f"bad parameter: {' '.join(str(exc).split())}. Allowed values "
                               "are listed in config/depth.yaml.") from None
        values = {p.name: self.get_parameter(p.name).value for p in PARAMS}
        for spec in PARAMS:
            problem = spec.problem(values[spec.name])
            if problem:
                raise StartupError(f"{problem}. Fix it in the config YAML or with "
                                   f"-p {spec.name}:=<value>.")
        self._values = values
        model_path = resolve_model_path(values["model_path"])
        try:
            self._pipeline: DensePipeline = load_pipeline(
                model_path, values["model_type"], values["backend"], values["num_threads"],
                self._pipeline_config(values), log=self.get_logger().info,
                cpu_precision=values["cpu_precision"])
        except (ModelLoadError, ModelSignatureError, ValueError) as exc:
            raise StartupError(str(exc)) from None
        if runner_hook is not None:
            self._pipeline.runner = runner_hook(self._pipeline.runner)
        self._spec = self._pipeline.spec
        self._model_name = Path(model_path).name
        self._timer = self._pipeline.timer
        self._lock = threading.Lock()
        self._slot: FrameSlot[_Frame] = FrameSlot()
        self._in_rate, self._out_rate = RateMeter(), RateMeter()
        self._stats = FrameStats()
        self._camera_infos: deque[CameraInfo] = deque(maxlen=CAMERA_INFO_HISTORY)
        self._warned: dict[str, float] = {}
        self._create_publishers(values)
        self._create_subscriptions(values)
        self.add_on_set_parameters_callback(self._on_set_parameters)
        self._diag_pub = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self._diag_timer = self.create_timer(values["diagnostics_period"], self._publish_diagnostics)
        self._stop = threading.Event()
        self._finish_slot: FrameSlot[_Inferred] = FrameSlot()
        self._workers = [
            threading.Thread(target=self._run_stage, args=(self._slot, self._infer),
                             name="dense_perception_infer", daemon=True),
            # Post-processing yields the CPU to inference: on a machine whose cores are all busy
            # with XNNPACK threads, it must not slow the model down (it only delays its own
            # frame a little).
            threading.Thread(target=self._run_stage,
                             args=(self._finish_slot, self._finish, FINISH_NICE),
                             name="dense_perception_finish", daemon=True)]
        for worker in self._workers:
            worker.start()
        self.get_logger().info(
            f"{self._spec.display_name} ({'metric' if self._spec.metric_depth else 'relative'} "
            f"depth) on {self._pipeline.runner.description}; fit={values['fit']}, "
            f"output_resolution={values['output_resolution']}")

    # ---- set-up ----------------------------------------------------------------------------
    def _declare_parameters(self) -> None:
        for spec in PARAMS:
            descriptor = ParameterDescriptor(description=spec.description)
            if spec.choices:
                descriptor.additional_constraints = "one of: " + ", ".join(spec.choices)
            if spec.low is not None and isinstance(spec.default, float):
                descriptor.floating_point_range = [FloatingPointRange(
                    from_value=float(spec.low), to_value=float(spec.high), step=0.0)]
            elif spec.low is not None and isinstance(spec.default, int) \
                    and not isinstance(spec.default, bool):
                descriptor.integer_range = [IntegerRange(
                    from_value=int(spec.low), to_value=int(spec.high), step=1)]
            descriptor.read_only = False
            self.declare_parameter(spec.name, spec.default, descriptor)

    @staticmethod
    def _pipeline_config(values: dict[str, Any]) -> PipelineConfig:
        return PipelineConfig(
            fit=values["fit"], output_resolution=values["output_resolution"],
            relative_depth_scale=values["relative_depth_scale"], max_depth=values["max_depth"],
            points_stride=values["points_stride"], points_organized=values["points_organized"],
            fallback_hfov_deg=values["fallback_hfov_deg"])

    def _create_publishers(self, values: dict[str, Any]) -> None:
        spec = self._spec
        products = [key for kind, keys in PRODUCTS_BY_MODEL_OUTPUT.items()
                    if spec.output_index(kind) is not None for key in keys
                    if values[PUBLISH_SWITCH[key]]]
        qos = {"qos_overriding_options": QoSOverridingOptions.with_default_policies()}
        self._pubs: dict[str, Any] = {
            key: self.create_publisher(MESSAGE_CLASSES[OUTPUTS[key][1]], OUTPUTS[key][0],
                                       PUBLISHER_QOS, **qos)
            for key in products if key != "classes"}
        if "classes" in products:
            latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
            self._classes_pub = self.create_publisher(String, OUTPUTS["classes"][0], latched)
            self._classes_pub.publish(String(data=json.dumps(list(post.ade20k_class_names()))))
        if not self._pubs:
            raise StartupError("every output is switched off (publish_* parameters) or not "
                               "provided by this model; enable at least one")

    def _create_subscriptions(self, values: dict[str, Any]) -> None:
        qos = {"qos_overriding_options": QoSOverridingOptions.with_default_policies()}
        if values["input_compressed"]:
            self.create_subscription(CompressedImage, "image/compressed", self._on_image,
                                     qos_profile_sensor_data, **qos)
        else:
            self.create_subscription(Image, "image", self._on_image, qos_profile_sensor_data,
                                     **qos)
        self.create_subscription(CameraInfo, "camera_info", self._on_camera_info,
                                 qos_profile_sensor_data, **qos)

    # ---- callbacks (executor thread) -----------------------------------------------------------
    def _on_image(self, msg: Image | CompressedImage) -> None:
        self._in_rate.tick()
        self._slot.put(_Frame(msg, time.monotonic()))

    def _on_camera_info(self, msg: CameraInfo) -> None:
        self._camera_infos.append(msg)

    def _on_set_parameters(self, params: list) -> SetParametersResult:
        changes = {}
        for param in params:
            spec = PARAMS_BY_NAME.get(param.name)
            if spec is None:
                continue
            if not spec.runtime:
                return SetParametersResult(successful=False, reason=(
                    f"{param.name} cannot change while the node runs; set it in the config "
                    "YAML and restart the node"))
            problem = spec.problem(param.value)
            if problem:
                return SetParametersResult(successful=False, reason=problem)
            changes[param.name] = param.value
        if changes:
            values = {**self._values, **changes}
            config = self._pipeline_config(values)
            problem = config.problem()
            if problem:
                return SetParametersResult(successful=False, reason=problem)
            with self._lock:
                self._values = values
                old = self._pipeline
                self._pipeline = DensePipeline(old.runner, old.spec, config, old.timer)
            self.get_logger().info("parameters changed: " + ", ".join(
                f"{k}={v}" for k, v in changes.items()))
        return SetParametersResult(successful=True)

    # ---- the worker threads -------------------------------------------------------------------
    # Two stages, so post-processing and publishing of frame N overlap the inference of frame
    # N+1 (LiteRT, OpenCV and numpy release the GIL): "infer" owns the model, "finish" the rest.
    def _run_stage(self, slot: FrameSlot, handle: Callable[[Any], None], nice: int = 0) -> None:
        if nice:
            _lower_thread_priority(nice)
        while not self._stop.is_set():
            item = slot.take(timeout=0.1)
            if item is not None and not self._stop.is_set():
                try:
                    handle(item)
                except Exception as exc:  # noqa: BLE001 - a failing frame must never stop us
                    self._stats.record_failure(f"{type(exc).__name__}: {exc}")
                    self._warn_once_per("failure", f"frame failed, skipped: "
                                                   f"{type(exc).__name__}: {exc}")

    def _request(self, values: dict[str, Any]) -> Request | None:
        """What to compute for the current subscribers; None when nobody listens."""
        def wanted(key: str) -> bool:
            pub = self._pubs.get(key)
            return pub is not None and pub.get_subscription_count() > 0

        request = Request(
            depth=wanted("depth") or wanted("depth_info"),
            depth_colored=wanted("depth_colored"),
            normals=wanted("normals"), normals_colored=wanted("normals_colored"),
            labels=wanted("labels"), labels_colored=wanted("labels_colored"),
            points=wanted("points"), points_rgb=wanted("points") and values["points_rgb"])
        return request if any(vars(request).values()) else None

    def _infer(self, frame: _Frame) -> None:
        with self._lock:
            pipeline, values = self._pipeline, self._values
        request = self._request(values)
        if request is None:
            self._stats.idle += 1
            return
        msg = frame.msg
        try:
            if isinstance(msg, CompressedImage):
                image, encoding = compressed_to_array(msg)
            else:
                image, encoding = image_to_array(msg), msg.encoding
        except BadImageError as exc:
            self._stats.rejected += 1
            self._warn_once_per(f"bad:{str(exc)[:40]}", f"skipping image: {exc}")
            return
        raw = pipeline.infer(image, encoding, request)
        self._finish_slot.put(_Inferred(frame, raw, pipeline, values))

    def _finish(self, item: _Inferred) -> None:
        header = item.frame.msg.header
        info, source = self._camera_info_for(header.stamp)
        intrinsics = None if info is None else camera_info_to_intrinsics(info)
        products = item.pipeline.finish(item.raw, intrinsics)
        self._stats.camera_info = source if not products.intrinsics_guessed \
            else products.intrinsics_note
        self._stats.intrinsics_guessed = products.intrinsics_guessed
        if products.intrinsics_guessed and info is not None:
            self._warn_once_per("camera_info", products.intrinsics_note, period=10.0)
        with self._timer.stage("publish"):
            self._publish(products, header, item.values, source_info=info)
        self._stats.record_success(time.monotonic() - item.frame.received)
        self._stats.input_size = (item.raw.frame.shape[1], item.raw.frame.shape[0])
        self._out_rate.tick()

    def _camera_info_for(self, stamp: Any) -> tuple[CameraInfo | None, str]:
        """The CameraInfo with the image's stamp, else the latest one, and which it was."""
        infos = list(self._camera_infos)
        if not infos:
            return None, "none received"
        for info in reversed(infos):
            if info.header.stamp == stamp:
                return info, "matched image stamp"
        return infos[-1], "latest (no stamp match)"

    def _publish(self, products: Any, header: Any, values: dict[str, Any],
                 source_info: CameraInfo | None) -> None:
        pubs = self._pubs
        if products.depth is not None:
            if "depth" in pubs and pubs["depth"].get_subscription_count():
                if values["depth_encoding"] == "16UC1":
                    pubs["depth"].publish(array_to_image(
                        post.depth_to_millimetres(products.depth), "16UC1", header))
                else:
                    pubs["depth"].publish(array_to_image(products.depth, "32FC1", header))
            if "depth_info" in pubs and products.intrinsics is not None:
                pubs["depth_info"].publish(intrinsics_to_camera_info(
                    products.intrinsics, header, None if products.intrinsics_guessed
                    else source_info))
        for key, encoding in IMAGE_OUTPUTS.items():
            image = getattr(products, key)
            if image is not None and key in pubs:
                pubs[key].publish(array_to_image(image, encoding, header))
        if products.points is not None and "points" in pubs:
            pubs["points"].publish(points_to_cloud(products.points, header))

    # ---- diagnostics -------------------------------------------------------------------------
    def _publish_diagnostics(self) -> None:
        with self._lock:
            values = self._values
        plan_size = f"{self._spec.input_width}x{self._spec.input_height}"
        array = build_diagnostics(
            name=f"{NODE_NAME}: {self._model_name}", stamp=self.get_clock().now().to_msg(),
            backend=self._pipeline.runner.description, model_kind=self._spec.kind,
            model_size=plan_size, fit=values["fit"], stats=self._stats,
            stages=self._timer.stats(), input_hz=self._in_rate.rate(),
            output_hz=self._out_rate.rate(), received=self._in_rate.total,
            dropped=self.frames_dropped,
            backend_note=getattr(self._pipeline.runner, "fallback_note", ""))
        self._diag_pub.publish(array)

    def _warn_once_per(self, key: str, text: str, period: float = 5.0) -> None:
        """Log ``text`` at most once per ``period`` seconds for each ``key`` (throttled)."""
        now = time.monotonic()
        if now - self._warned.get(key, -math.inf) >= period:
            self._warned[key] = now
            self.get_logger().warning(text)

    def stop(self) -> None:
        """Stop the workers (does not wait for an inference in progress to end)."""
        self._stop.set()
        for worker in self._workers:
            worker.join(timeout=0.5)

    @property
    def frames_dropped(self) -> int:
        """Frames replaced by newer ones before inference or before publishing."""
        return self._slot.dropped + self._finish_slot.dropped


def _lower_thread_priority(increment: int) -> None:
    """Raise the calling thread's nice value (Linux: nice is per thread); no-op elsewhere."""
    try:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, os.getpriority(os.PRIO_PROCESS, tid) + increment)
    except (AttributeError, OSError):
        pass


def main(args: list[str] | None = None, runner_hook: Callable[[Any], Any] | None = None) -> int:
    """Console entry point (``dense_perception_node``): spin until SIGINT/SIGTERM.

    Returns 0 after a clean stop and 1 when the node could not start (one FATAL line says why).
    ``runner_hook`` is for tests (e.g. a slow runner to check shutdown mid-inference).
    """
    rclpy.init(args=args, signal_handler_options=rclpy.signals.SignalHandlerOptions.NO)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    try:
        node = DensePerceptionNode(runner_hook=runner_hook)
    except StartupError as exc:
        rclpy.logging.get_logger(NODE_NAME).fatal(str(exc))
        rclpy.try_shutdown()
        return 1
    executor = rclpy.executors.SingleThreadedExecutor()
    executor.add_node(node)
    try:
        while not stop.is_set() and rclpy.ok():
            executor.spin_once(timeout_sec=0.1)
    finally:
        # The worker may be inside a long inference: it is a daemon thread, so the process
        # does not wait for it.
        node.stop()
        executor.shutdown(timeout_sec=0.5)
        node.destroy_node()
        rclpy.try_shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
