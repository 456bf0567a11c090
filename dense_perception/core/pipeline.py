# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""One frame through the whole chain: fit, preprocess, infer, post-process, un-fit, point cloud.

The node, the offline ``process`` command and the benchmark all call :class:`DensePipeline`, so
there is one copy of every step.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import postprocess as post
from .geometry.camera_model import CameraModel, as_camera_model
from .confidence import PROBABILITY, QUANTILE, confident_pixels
from .scheduling.host_threads import HostThreads, resolve_host_threads
from .geometry.fit import FitPlan, Interp, make_fit_plan
from .geometry.intrinsics import Intrinsics
from .scale.estimators import on_model_grid
from .scale.metric_scale import (DepthScaler, ScaleReport,
                                 fixed_scale_report, relative_output_problem,
                                 scale_is_estimated, withholds_depth)
from .model.specs import CONFIDENCE_KIND, ModelSpec
from .model.detection import detect_model_spec
from .geometry.pointcloud import depth_to_points, nearest_per_voxel
from .preprocess import Preprocessor, PixelFormat, pixel_format, to_colour_words, to_rgb8
from .product_table import added_products
from .geometry.rectify import Rectifier
from .backends.logits_head import read_head
from .backends.runner import Runner, check_model_file, open_runner
from .backends.runner_base import Log
from .wiring.derived import backend_config, depth_options, pipeline_config
from .settings.table import Settings
from .timing import StageTimer
from .frame_data import PipelineConfig, Products, RawFrame, Request


class DensePipeline:
    """Runs frames through a loaded model. Not thread-safe: one frame at a time."""

    def __init__(self, runner: Runner, spec: ModelSpec, config: PipelineConfig = PipelineConfig(),
                 timer: StageTimer | None = None, host_threads: HostThreads | None = None) -> None:
        if not spec.metric_depth and config.depth_scale_source == "none" and config.max_depth > 0:
            raise ValueError(relative_output_problem(False, "none", config.max_depth, "32FC1"))
        self.runner = runner
        self.spec = spec
        self.config = config
        self.timer = timer or StageTimer()
        self._preprocess = Preprocessor(spec)
        self._plans: dict[tuple[int, int], FitPlan] = {}
        self._rectifier = Rectifier()
        # A pipeline rebuilt for new runtime settings keeps its predecessor's threads.
        self.host_threads = host_threads or HostThreads(resolve_host_threads(config.host_threads))

    def camera_from_info(self, msg: Any) -> CameraModel | None:
        """The camera model of a CameraInfo message (None for None), per ``input_rectified``."""
        return None if msg is None else CameraModel.from_camera_info(msg, self.config.input_rectified)

    def plan_for(self, width: int, height: int) -> FitPlan:
        """The (cached) fit plan for frames of this size."""
        key = (width, height)
        if key not in self._plans:
            self._plans[key] = make_fit_plan(width, height, self.spec.input_width,
                                             self.spec.input_height, self.config.fit)
        return self._plans[key]

    def process(self, frame: np.ndarray, encoding: str,
                camera: CameraModel | Intrinsics | None = None,
                request: Request = Request()) -> Products:
        """Run one H x W [x C] uint8 frame of ``encoding`` and return the requested products.

        ``camera`` is the camera's model (from its CameraInfo) or bare pinhole intrinsics, for
        the full frame; without a usable one, the products carry a pinhole guess from
        ``fallback_hfov_deg`` and ``Products.intrinsics_guessed``.
        Raises ValueError for a frame that does not match its encoding.
        """
        return self.finish(self.infer(frame, encoding, request, camera))

    def infer(self, frame: np.ndarray, encoding: str, request: Request = Request(),
              camera: CameraModel | Intrinsics | None = None) -> RawFrame:
        """Fit (rectifying a distorted raw frame on the way), preprocess and run the model;
        take what ``request`` needs from its outputs.

        Everything returned is the caller's own (no views into the runner), so the next frame's
        inference can start while :meth:`finish` works on this one in another thread.
        """
        fmt = pixel_format(encoding)
        check_frame(frame, fmt)
        camera = as_camera_model(camera)
        plan = self.plan_for(frame.shape[1], frame.shape[0])
        spec, config = self.spec, self.config
        rectify = (camera is not None and camera.needs_rectification
                   and (camera.width, camera.height) == (frame.shape[1], frame.shape[0]))
        if rectify:  # camera pixels (a reference depth's) then go through the rectification
            plan = plan.rectifying(camera)
        valid = None
        with self.timer.stage("preprocess"):
            with self.timer.stage("fit"):  # crop + resize, or the one rectifying remap
                if rectify:
                    fitted, valid = self._rectifier.fit_image(frame, camera, plan)
                else:
                    fitted = plan.fit_image(frame)
            self._preprocess(fitted, fmt, self.runner.input_buffer())
        with self.timer.stage("inference"):
            outputs = self.runner.run()
        raw = RawFrame(frame=frame, fmt=fmt, plan=plan, fitted=fitted, request=request,
                       camera=camera, rectified=rectify, valid=valid)
        with self.timer.stage("extract"):
            depth_i = spec.output_index("depth")
            if depth_i is not None and (request.depth or request.depth_colored or request.points):
                # An estimated scale is applied in finish(); relative_depth_scale is the
                # asserted one ('fixed') or a unitless multiplier ('none').
                scale = 1.0 if spec.metric_depth or scale_is_estimated(
                    spec.metric_depth, config.depth_scale_source) else config.relative_depth_scale
                raw.depth = post.depth_from_output(outputs[depth_i], scale,
                                                   spec.inverse_depth)
            normals_i = spec.output_index("normals")
            if normals_i is not None and (request.normals or request.normals_colored):
                raw.normals = post.normals_from_output(outputs[normals_i])
            self._extract_segmentation(raw, outputs)
            self._extract_confidence(raw, outputs)
        return raw

    def confidence_note(self, value: float | None = None) -> str:
        """Why ``points_min_confidence`` (``value``, else the configured one) cannot act with
        this model ("" when it can, or is 0)."""
        value = self.config.points_min_confidence if value is None else value
        if value > 0 and self.spec.output_index(CONFIDENCE_KIND) is None and \
                self.spec.output_index("segmentation_logits") is None:
            return (f"points_min_confidence {value:g} has no effect: this "
                    f"{self.spec.display_name} file has no confidence output" +
                    (" (export-da3 writes DA3 with one)" if self.spec.kind == "da3" else ""))
        return ""

    def _extract_segmentation(self, raw: RawFrame, outputs: list[np.ndarray]) -> None:
        """TIPSv2's labels and top-class probability, from the graph where it computes them
        (:mod:`.backends.logits_head`), else in one banded pass over the logits: the
        probability for ``segmentation/confidence`` and, when the model has no confidence
        output of its own, for the points filter (see ``core.confidence``)."""
        request = raw.request
        seg_i = self.spec.output_index("segmentation_logits")
        if seg_i is None:
            return
        want_labels = request.labels or request.labels_colored or request.labels_confidence
        filtering = (request.points and self.config.points_min_confidence > 0
                     and self.spec.output_index(CONFIDENCE_KIND) is None)
        if not (want_labels or filtering):
            return
        head, wants_probability = self.runner.logits_head, request.labels_confidence or filtering
        if head is not None:  # computed where the model ran: a few planes to read
            labels, probability, probability_ms = read_head(outputs, head, post.INVALID_LABEL)
        else:
            labels, probability, probability_ms = post.labels_and_probability(
                outputs[seg_i], wants_probability, self.host_threads)
        if wants_probability:  # a part of "extract", like "scale" of "postprocess"
            self.timer.add("labels_confidence", probability_ms)
        if want_labels:
            raw.labels = labels
        if request.labels_confidence:
            raw.labels_probability = probability
        if filtering:
            raw.point_confidence, raw.confidence_meaning = probability, PROBABILITY

    def _extract_confidence(self, raw: RawFrame, outputs: list[np.ndarray]) -> None:
        """DA3's confidence output, for its topic and the points filter."""
        request, filtering = raw.request, self.config.points_min_confidence > 0
        conf_i = self.spec.output_index(CONFIDENCE_KIND)
        if conf_i is not None and (request.depth_confidence or (request.points and filtering)):
            raw.confidence = post.confidence_from_output(outputs[conf_i])
            raw.point_confidence, raw.confidence_meaning = raw.confidence, QUANTILE

    def finish(self, raw: RawFrame, intrinsics: Intrinsics | None = None,
               scaler: DepthScaler | None = None, stamp: float = 0.0,
               reference: np.ndarray | None = None, *, pose: np.ndarray | None = None,
               motion: Any = None) -> Products:
        """Map a frame's raw products back to the camera geometry, colour them, make points.

        The camera is the one given to :meth:`infer`; ``intrinsics`` (a pinhole camera, no
        distortion) may name it here instead when :meth:`infer` had none.
        For relative depth with an estimated scale source, ``scaler`` (kept by the caller across
        frames) gets the frame's ``stamp`` (s) and, for 'reference_depth', the ``reference``
        depth (metres, registered to the camera); its scale turns the depth into metres.
        Points are only made from metric depth. ``motion`` (the camera's
        ``core.motion.camera_motion.CameraMotion``, kept like ``scaler``) with the frame's
        ``pose`` (4x4 world_from_camera of the optical frame, None when unknown): the motion
        scale and the depth aligned over time (``products.motion`` reports them).
        """
        if intrinsics is not None and raw.camera is None:
            raw.camera = CameraModel.pinhole(intrinsics)
        with self.timer.stage("postprocess"):
            return self._finish(raw, scaler, stamp, reference, pose, motion)

    # -------------------------------------------------------------------------------------------
    def _finish(self, raw: RawFrame, scaler: DepthScaler | None = None, stamp: float = 0.0,
                reference: np.ndarray | None = None, pose: np.ndarray | None = None,
                motion: Any = None) -> Products:
        res, plan, request = self.config.output_resolution, raw.plan, raw.request
        width, height = plan.published_size(res)
        products = Products(width=width, height=height, plan=plan, rectified=raw.rectified)
        # Where the rectified view looked past the raw frame, nothing was seen.
        unseen = None if raw.valid is None else \
            plan.unfit(raw.valid, res, Interp.NEAREST, fill=0) == 0
        if raw.depth is not None:
            products.depth = plan.unfit(raw.depth, res, Interp.DEPTH, fill=np.nan)
            if unseen is not None:
                products.depth[unseen] = np.nan
        if raw.normals is not None:
            normals = plan.unturn_vectors(plan.unfit(raw.normals, res, Interp.LINEAR))
            if normals.shape[:2] != raw.normals.shape[:2]:
                post.normalize_vectors(normals)  # interpolation shortens the vectors
            if unseen is not None:
                normals[unseen] = np.nan
            products.normals = normals
            if request.normals_colored:
                products.normals_colored = post.colorize_normals(normals)
        if raw.confidence is not None and request.depth_confidence:
            products.depth_confidence = self._unfit_confidence(raw.confidence, plan, unseen)
        if raw.labels is not None:
            products.labels = plan.unfit(raw.labels, res, Interp.NEAREST, fill=post.INVALID_LABEL)
            if unseen is not None:
                products.labels[unseen] = post.INVALID_LABEL
            if request.labels_colored:
                products.labels_colored = post.colorize_labels(products.labels)
        if raw.labels_probability is not None:  # on the labels' grid, 0 where not seen
            products.labels_confidence = plan.unfit(
                post.confidence_to_mono8(raw.labels_probability), res, Interp.NEAREST, fill=0)
            if unseen is not None:
                products.labels_confidence[unseen] = 0

        frame = raw.frame
        why_not = camera_problem(raw.camera, frame.shape[1], frame.shape[0])
        camera_key: Any = raw.camera  # what the scale filter's estimates are tied to
        if why_not is not None:
            camera_k = Intrinsics.from_hfov(frame.shape[1], frame.shape[0],
                                            self.config.fallback_hfov_deg)
            camera_key = ("pinhole guess", camera_k)
            products.intrinsics_guessed = True
            products.intrinsics_note = (f"{why_not}: using a pinhole guess with "
                                        f"{self.config.fallback_hfov_deg:g} deg horizontal FOV")
        else:
            camera_k = raw.camera.intrinsics()
            products.camera_note = raw.camera.note()
        products.intrinsics = plan.published_intrinsics(camera_k, res)

        jobs = []  # the depth view and the cloud: independent, side by side on host threads
        if products.depth is not None:
            with self.timer.stage("scale"):
                estimate = None if motion is None else motion.frame_estimate(
                    self.config.depth_scale_source, stamp, pose, raw, products, res)
                # The motion scale carried by the alignment is judged after it (its error).
                judged = motion is not None and motion.judges_error(scaler, self.spec.metric_depth)
                products.scale = self._scale(products, scaler, stamp, reference, camera_key,
                                             estimate, (raw, camera_k), not judged)
            if motion is not None:
                with self.timer.stage("temporal"):
                    motion.align_products(stamp, pose, products, scaler if judged else None)
            if request.depth_colored:
                def colour_depth(depth: np.ndarray = products.depth) -> None:
                    products.depth_colored = post.colorize_depth(depth)
                jobs.append(colour_depth)
        if request.points and products.depth is not None and not products.depth_metric:
            products.withheld = f"points withheld: depth is {products.scale.units()}"
        elif request.points and products.depth is not None:
            jobs.append(lambda: self._points(raw, products, unseen))
        self.host_threads.run(jobs)
        if withholds_depth(products.scale):
            # Not metres yet, but it will be once a scale is found: withheld, so that no topic or
            # file set ever holds two units (the colour view above has no unit and stays).
            products.depth = None
            products.withheld = f"depth and points withheld: {products.scale.units()}"
        values = dict(self.config.product_settings)  # the settings their steps read
        for product in added_products():  # rows of the products table with their own step
            if product.key in request.extra:
                value = product.compute(products, values)
                if value is not None:
                    products.extra[product.key] = value
        return products


    def _points(self, raw: RawFrame, products: Products, unseen: np.ndarray | None) -> None:
        """The cloud of the (metric) depth, coloured from the frame when asked."""
        res, plan, frame = self.config.output_resolution, raw.plan, raw.frame
        rgb = None
        if raw.request.points_rgb:
            if res == "input":
                full = self._rectifier.full_frame(frame, raw.camera) if raw.rectified else frame
                rgb = to_colour_words(full, raw.fmt)
            elif not plan.turned:
                # Unturned, the model's grid (the fitted frame's) is the published one: the
                # frame's colour words straight away (unfit would return the image itself,
                # after a needless conversion to RGB).
                rgb = to_colour_words(raw.fitted, raw.fmt)
            else:
                rgb = plan.unfit(to_rgb8(raw.fitted, raw.fmt), res, Interp.LINEAR)
        voxel = self.config.points_voxel_size
        products.points = depth_to_points(
            products.depth, products.intrinsics, stride=self.config.points_stride,
            max_depth=self.config.max_depth or float("inf"), rgb=rgb,
            organized=self.config.points_organized and not voxel,
            keep=self._confident(raw, products, unseen))
        if voxel:
            products.points = nearest_per_voxel(products.points, voxel)

    def _unfit_confidence(self, confidence: np.ndarray, plan: FitPlan,
                          unseen: np.ndarray | None) -> np.ndarray:
        """A confidence map (any grid) on the published one, NaN where nothing was seen."""
        out = plan.unfit(confidence, self.config.output_resolution, Interp.LINEAR, fill=np.nan)
        if unseen is not None:
            out[unseen] = np.nan
        return out

    def _confident(self, raw: RawFrame, products: Products,
                   unseen: np.ndarray | None) -> np.ndarray | None:
        """The pixels confident enough for the cloud (None: all), on the depth's grid."""
        if raw.point_confidence is None or self.config.points_min_confidence == 0:
            return None
        if raw.point_confidence is raw.confidence and products.depth_confidence is not None:
            confidence = products.depth_confidence
        else:
            confidence = self._unfit_confidence(raw.point_confidence, raw.plan, unseen)
        return confident_pixels(confidence, self.config.points_min_confidence,
                                raw.confidence_meaning, self.config.points_stride,
                                products.depth, self.config.max_depth or float("inf"))

    def _scale(self, products: Products, scaler: DepthScaler | None, stamp: float,
               reference: np.ndarray | None, camera: Any = None,
               estimate: Any = None, model: tuple[RawFrame, Intrinsics] | None = None,
               bound: bool = True) -> ScaleReport:
        """The depth's unit; multiplies ``products.depth`` by an estimated scale when found.
        ``camera``: the camera model the intrinsics came from, or the pinhole guess (a change
        restarts the scaler's filter; a guess is marked in the report). ``model``: the frame
        and its camera's intrinsics, to estimate on the model's grid whatever is published."""
        source = self.config.depth_scale_source
        if not scale_is_estimated(self.spec.metric_depth, source):
            return fixed_scale_report(self.spec.metric_depth, source,
                                      self.config.relative_depth_scale)
        if scaler is None:
            return ScaleReport(source, None, False, reason="no scale estimator")
        depth, k, grid = products.depth, products.intrinsics, self.config.output_resolution
        if model is not None and grid != "model":  # one grid, so the scale is the same on both
            depth, k, grid = (*on_model_grid(model[0].plan, model[0].depth, model[0].valid,
                                             model[1]), "model")
        report = scaler.update(stamp, depth, k, products.plan, grid, reference, camera=camera,
                               guessed=products.intrinsics_guessed, estimate=estimate,
                               metric_model=self.spec.metric_depth, bound=bound)
        if report.scale is not None:  # a new array: raw.depth may be the same one
            relative = products.depth
            products.depth = relative * np.float32(report.scale)
            correction = None if estimate is None else estimate.correction_for(relative)
            if correction is not None:  # motion's scale map over the view
                products.depth *= np.exp(correction)
        return report


def check_frame(frame: np.ndarray, fmt: PixelFormat) -> None:
    """ValueError unless ``frame`` is a non-empty uint8 H x W [x C] array matching ``fmt``."""
    if frame.dtype != np.uint8:
        raise ValueError(f"{fmt.name} frame must be uint8, got {frame.dtype}")
    channels = 1 if frame.ndim == 2 else frame.shape[2] if frame.ndim == 3 else -1
    if channels != fmt.channels:
        raise ValueError(f"{fmt.name} frame needs {fmt.channels} channel(s), got shape {frame.shape}")
    if frame.shape[0] < 1 or frame.shape[1] < 1:
        raise ValueError(f"frame is empty ({frame.shape[1]}x{frame.shape[0]})")


def camera_problem(camera: CameraModel | None, width: int, height: int) -> str | None:
    """Why ``camera`` cannot serve a ``width`` x ``height`` frame, or None when it can."""
    if camera is None:
        return "no CameraInfo"
    if (camera.width, camera.height) != (width, height):
        return (f"CameraInfo is for {camera.width}x{camera.height} (binning and ROI applied) "
                f"but the image is {width}x{height}")
    problem = camera.problem()
    return None if problem is None else f"CameraInfo unusable ({problem})"


def load_pipeline(model_path: str, settings: Settings = Settings(), *, log: Log = print,
                  warn: Log | None = None) -> DensePipeline:
    """Load ``model_path`` as ``settings`` say (model kind, backend and its options, depth model
    options, pipeline settings), detect its kind and build the pipeline: the one call of both
    front ends. ``warn`` logs warnings (default: ``log``).

    Raises ModelLoadError (file or backend) or ModelSignatureError (unsupported model), each
    with a message that says how to fix it.
    """
    depth = depth_options(settings)
    # The signature is read from the file itself, so a wrong model fails before any loading.
    signature = check_model_file(model_path)
    spec = detect_model_spec(signature.input_shapes, signature.output_shapes,
                             settings.model_type, source=f"model file '{model_path}'",
                             output_names=signature.output_names, depth=depth, file=signature)
    log(f"model: {spec.display_name}; {spec.evidence}")  # what showed the model kind
    # Labels wanted: computed in the model's graph (where it runs), not from the logits here.
    logits_i = spec.output_index("segmentation_logits") if settings.publish_segmentation else None
    runner = open_runner(model_path, backend_config(settings), log=log, warn=warn, warmup=True,
                         labels_from=logits_i)
    return DensePipeline(runner, spec, pipeline_config(settings))
