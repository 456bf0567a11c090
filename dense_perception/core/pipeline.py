"""One frame through the whole chain: fit, preprocess, infer, post-process, un-fit, point cloud.

The node, the offline ``process`` command and the benchmark all call :class:`DensePipeline`, so
there is one copy of every step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import postprocess as post
from .fit import FitPlan, Interp, make_fit_plan, FIT_MODES, OUTPUT_RESOLUTIONS
from .intrinsics import Intrinsics
from .models import MODEL_TYPES, ModelSpec, detect_model_spec
from .pointcloud import depth_to_points
from .preprocess import Preprocessor, PixelFormat, pixel_format, to_rgb8
from .runner import Runner, check_model_file, open_runner
from .timing import StageTimer


@dataclass(frozen=True)
class Request:
    """Which products to compute (unrequested ones cost nothing)."""

    depth: bool = True
    depth_colored: bool = False
    normals: bool = False
    normals_colored: bool = False
    labels: bool = False
    labels_colored: bool = False
    points: bool = False
    points_rgb: bool = False

    @classmethod
    def everything(cls) -> "Request":
        return cls(True, True, True, True, True, True, True, True)


@dataclass
class Products:
    """What one frame produced, on the published grid (``width`` x ``height``)."""

    width: int
    height: int
    plan: FitPlan
    depth: np.ndarray | None = None           # H x W float32, NaN invalid
    depth_colored: np.ndarray | None = None   # H x W x 3 bgr8
    normals: np.ndarray | None = None         # H x W x 3 float32, unit, camera optical frame
    normals_colored: np.ndarray | None = None  # H x W x 3 rgb8
    labels: np.ndarray | None = None          # H x W uint8 ADE20K ids, 255 = not seen
    labels_colored: np.ndarray | None = None  # H x W x 3 rgb8
    points: np.ndarray | None = None          # structured x, y, z[, rgb]
    intrinsics: Intrinsics | None = None      # for the published grid
    intrinsics_guessed: bool = False
    intrinsics_note: str = ""                 # why the intrinsics are a guess


@dataclass
class RawFrame:
    """One frame after inference, before un-fitting: products on the model's own grids."""

    frame: np.ndarray          # the camera frame (for point colours at input resolution)
    fmt: PixelFormat
    plan: FitPlan
    fitted: np.ndarray         # the frame as the model saw it
    request: Request
    depth: np.ndarray | None = None    # model grid, float32, scaled, NaN invalid
    normals: np.ndarray | None = None  # model grid, H x W x 3 unit vectors (model's frame)
    labels: np.ndarray | None = None   # segmentation grid (256 x 256), uint8


@dataclass(frozen=True)
class PipelineConfig:
    """Tunable behaviour of the pipeline (mirrors the node's parameters)."""

    fit: str = "crop"
    output_resolution: str = "model"
    relative_depth_scale: float = 1.0
    max_depth: float = 0.0  # 0 = no limit
    points_stride: int = 1
    points_organized: bool = False
    fallback_hfov_deg: float = 60.0

    def problem(self) -> str | None:
        """Why this configuration is impossible, or None."""
        if self.fit not in FIT_MODES:
            return f"fit '{self.fit}' is unknown; allowed: {', '.join(FIT_MODES)}"
        if self.output_resolution not in OUTPUT_RESOLUTIONS:
            return (f"output_resolution '{self.output_resolution}' is unknown; allowed: "
                    f"{', '.join(OUTPUT_RESOLUTIONS)}")
        if not (self.relative_depth_scale > 0 and math.isfinite(self.relative_depth_scale)):
            return f"relative_depth_scale must be > 0, got {self.relative_depth_scale}"
        if not self.max_depth >= 0:
            return f"max_depth must be >= 0 (0 = no limit), got {self.max_depth}"
        if self.points_stride < 1:
            return f"points_stride must be >= 1, got {self.points_stride}"
        if not 1.0 <= self.fallback_hfov_deg <= 179.0:
            return f"fallback_hfov_deg must be in [1, 179], got {self.fallback_hfov_deg}"
        return None


class DensePipeline:
    """Runs frames through a loaded model. Not thread-safe: one frame at a time."""

    def __init__(self, runner: Runner, spec: ModelSpec, config: PipelineConfig = PipelineConfig(),
                 timer: StageTimer | None = None) -> None:
        problem = config.problem()
        if problem:
            raise ValueError(problem)
        self.runner = runner
        self.spec = spec
        self.config = config
        self.timer = timer or StageTimer()
        self._preprocess = Preprocessor(spec)
        self._plans: dict[tuple[int, int], FitPlan] = {}

    def plan_for(self, width: int, height: int) -> FitPlan:
        """The (cached) fit plan for frames of this size."""
        key = (width, height)
        if key not in self._plans:
            self._plans[key] = make_fit_plan(width, height, self.spec.input_width,
                                             self.spec.input_height, self.config.fit)
        return self._plans[key]

    def process(self, frame: np.ndarray, encoding: str, intrinsics: Intrinsics | None = None,
                request: Request = Request()) -> Products:
        """Run one H x W [x C] uint8 frame of ``encoding`` and return the requested products.

        ``intrinsics`` are the camera's (for the full frame); without usable ones, the products
        carry a pinhole guess from ``fallback_hfov_deg`` and ``Products.intrinsics_guessed``.
        Raises ValueError for a frame that does not match its encoding.
        """
        return self.finish(self.infer(frame, encoding, request), intrinsics)

    def infer(self, frame: np.ndarray, encoding: str, request: Request = Request()) -> RawFrame:
        """Fit, preprocess and run the model; take what ``request`` needs from its outputs.

        Everything returned is the caller's own (no views into the runner), so the next frame's
        inference can start while :meth:`finish` works on this one in another thread.
        """
        fmt = pixel_format(encoding)
        check_frame(frame, fmt)
        plan = self.plan_for(frame.shape[1], frame.shape[0])
        spec, config = self.spec, self.config
        with self.timer.stage("preprocess"):
            fitted = plan.fit_image(frame)
            self._preprocess(fitted, fmt, self.runner.input_buffer())
        with self.timer.stage("inference"):
            outputs = self.runner.run()
        raw = RawFrame(frame=frame, fmt=fmt, plan=plan, fitted=fitted, request=request)
        with self.timer.stage("extract"):
            depth_i = spec.output_index("depth")
            if depth_i is not None and (request.depth or request.depth_colored or request.points):
                scale = 1.0 if spec.metric_depth else config.relative_depth_scale
                raw.depth = post.depth_from_output(outputs[depth_i], scale)
            normals_i = spec.output_index("normals")
            if normals_i is not None and (request.normals or request.normals_colored):
                raw.normals = post.normals_from_output(outputs[normals_i])
            seg_i = spec.output_index("segmentation_logits")
            if seg_i is not None and (request.labels or request.labels_colored):
                raw.labels = post.labels_from_logits(outputs[seg_i])
        return raw

    def finish(self, raw: RawFrame, intrinsics: Intrinsics | None = None) -> Products:
        """Map a frame's raw products back to the camera geometry, colour them, make points."""
        with self.timer.stage("postprocess"):
            return self._finish(raw, intrinsics)

    # -------------------------------------------------------------------------------------------
    def _finish(self, raw: RawFrame, intrinsics: Intrinsics | None) -> Products:
        res, plan, request = self.config.output_resolution, raw.plan, raw.request
        width, height = plan.published_size(res)
        products = Products(width=width, height=height, plan=plan)
        if raw.depth is not None:
            products.depth = plan.unfit(raw.depth, res, Interp.LINEAR, fill=np.nan)
            if request.depth_colored:
                products.depth_colored = post.colorize_depth(products.depth)
        if raw.normals is not None:
            normals = plan.unturn_vectors(plan.unfit(raw.normals, res, Interp.LINEAR))
            if normals.shape[:2] != raw.normals.shape[:2]:
                post.normalize_vectors(normals)  # interpolation shortens the vectors
            products.normals = normals
            if request.normals_colored:
                products.normals_colored = post.colorize_normals(normals)
        if raw.labels is not None:
            products.labels = plan.unfit(raw.labels, res, Interp.NEAREST, fill=post.INVALID_LABEL)
            if request.labels_colored:
                products.labels_colored = post.colorize_labels(products.labels)

        frame = raw.frame
        camera_k = intrinsics
        why_not = camera_intrinsics_problem(intrinsics, frame.shape[1], frame.shape[0])
        if why_not is not None:
            camera_k = Intrinsics.from_hfov(frame.shape[1], frame.shape[0],
                                            self.config.fallback_hfov_deg)
            products.intrinsics_guessed = True
            products.intrinsics_note = (f"{why_not}: using a pinhole guess with "
                                        f"{self.config.fallback_hfov_deg:g} deg horizontal FOV")
        products.intrinsics = plan.published_intrinsics(camera_k, res)

        if request.points and products.depth is not None:
            rgb = None
            if request.points_rgb:
                source = to_rgb8(frame if res == "input" else raw.fitted, raw.fmt)
                rgb = source if res == "input" else plan.unfit(source, res, Interp.LINEAR)
            products.points = depth_to_points(
                products.depth, products.intrinsics, stride=self.config.points_stride,
                max_depth=self.config.max_depth or float("inf"), rgb=rgb,
                organized=self.config.points_organized)
        return products


def check_frame(frame: np.ndarray, fmt: PixelFormat) -> None:
    """ValueError unless ``frame`` is a non-empty uint8 H x W [x C] array matching ``fmt``."""
    if frame.dtype != np.uint8:
        raise ValueError(f"{fmt.name} frame must be uint8, got {frame.dtype}")
    channels = 1 if frame.ndim == 2 else frame.shape[2] if frame.ndim == 3 else -1
    if channels != fmt.channels:
        raise ValueError(f"{fmt.name} frame needs {fmt.channels} channel(s), got shape {frame.shape}")
    if frame.shape[0] < 1 or frame.shape[1] < 1:
        raise ValueError(f"frame is empty ({frame.shape[1]}x{frame.shape[0]})")


def camera_intrinsics_problem(k: Intrinsics | None, width: int, height: int) -> str | None:
    """Why ``k`` cannot serve a ``width`` x ``height`` frame, or None when it can."""
    if k is None:
        return "no CameraInfo"
    if (k.width, k.height) != (width, height):
        return f"CameraInfo is for {k.width}x{k.height} but the image is {width}x{height}"
    problem = k.problem()
    return None if problem is None else f"CameraInfo unusable ({problem})"


def load_pipeline(model_path: str, model_type: str = "auto", backend: str = "auto",
                  num_threads: int = -1, config: PipelineConfig = PipelineConfig(),
                  log=print, cpu_precision: str = "fp32") -> DensePipeline:
    """Check the configuration, load the model, detect its kind and build the pipeline.

    Raises ValueError (bad configuration), ModelLoadError (file or backend) or
    ModelSignatureError (unsupported model), each with a message that says how to fix it.
    """
    problem = config.problem()
    if problem:
        raise ValueError(problem)
    if model_type not in MODEL_TYPES:
        raise ValueError(f"model_type '{model_type}' is unknown; allowed: {', '.join(MODEL_TYPES)}")
    # The signature is read from the file itself, so a wrong model fails before any loading.
    signature = check_model_file(model_path)
    spec = detect_model_spec(signature.input_shapes, signature.output_shapes, model_type,
                             source=f"model file '{model_path}'")
    runner = open_runner(model_path, backend, num_threads, log=log, warmup=True,
                         cpu_precision=cpu_precision)
    return DensePipeline(runner, spec, config)
