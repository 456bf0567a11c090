# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""From the checked :class:`~..settings.table.Settings` to the configuration of each part that
uses them (pipeline, metric scale, backend, depth model, compressed topics, each camera of the
node), and the rules between settings. The node and ``dense-perception process`` both go
through here, so the two front ends cannot map a setting differently.

The node's one entry is :func:`node_setup`: a typed record for each of its parts (each camera,
the odometry input, what it says of the settings given) and the reason it cannot start, made
once from the settings and handed down (the parts derive nothing and read no Settings).

Each value was checked against its row when the Settings was made; only rules that join
several settings (and the model) live here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np

from ..backends.runner import BackendConfig
from ..camera_track import TrackSetup
from ..compressed import CompressionConfig, representable_depth
from ..model.depth_network import DepthOptions
from ..model.specs import ModelSpec
from ..motion.camera_motion import MotionConfig
from ..motion.odometry import camera_mountings, given_mountings
from ..frame_data import PipelineConfig
from ..product_table import PRODUCTS
from ..products import OUTPUT_GROUPS, OutputGroup
from ..scale.metric_scale import ScaleConfig, relative_output_problem, scale_is_estimated
from ..setting_names import NODE, Syntax
from ..settings.table import PARAMS_BY_NAME, Settings, camera_names, per_camera_heights
from .relevance import Where, given_at_start, ignored_settings

# What the node adds to a settings problem it cannot start with.
NODE_FIX = "Fix it in the config YAML or with -p name:=value."

# The ScaleConfig field each setting fills (PipelineConfig's and DepthOptions' fields are named
# after their settings); test_settings checks that every field has a setting.
SCALE_FIELDS = {"source": "depth_scale_source", "fixed_scale": "relative_depth_scale",
                "camera_height": "camera_height", "time_constant": "depth_scale_time_constant",
                "max_age": "depth_scale_max_age", "max_tilt_deg": "ground_max_tilt_deg",
                "min_inlier_ratio": "depth_scale_min_inliers",
                "max_scale_error": "max_scale_error", "metric_error": "metric_depth_error",
                "max_depth": "max_depth", "check": "depth_scale_check"}


# ---- the configuration of each part ---------------------------------------------------------
def pipeline_config(settings: Settings) -> PipelineConfig:
    """The pipeline's settings, with the values of those the added products read."""
    return PipelineConfig(**{f.name: getattr(settings, f.name) for f in fields(PipelineConfig)
                             if f.name != "product_settings"},
                          product_settings=product_settings(settings))


def product_settings(settings: Settings) -> tuple[tuple[str, Any], ...]:
    """(name, value) of every setting a row of the products table reads
    (``Product.settings``); ValueError (one line) for a name that is no setting."""
    names = sorted({name for row in PRODUCTS.values() for name in row.settings})
    unknown = [name for name in names if name not in PARAMS_BY_NAME]
    if unknown:
        rows = sorted(row.key for row in PRODUCTS.values() if set(row.settings) & set(unknown))
        raise ValueError(f"product(s) {', '.join(rows)} read {', '.join(unknown)}, which no "
                         "setting is called (docs/parameters.md lists them)")
    return tuple((name, getattr(settings, name)) for name in names)


def scale_config(settings: Settings, per_frame: bool = False,
                 camera_height: float | None = None) -> ScaleConfig:
    """The metric-scale settings (relative-depth models); ``per_frame``: unrelated photos, each
    scaled on its own (offline image inputs); ``camera_height``: one camera's own height
    (several cameras: :func:`camera_heights`)."""
    config = ScaleConfig(**{f: getattr(settings, name) for f, name in SCALE_FIELDS.items()},
                         per_frame=per_frame)
    return config if camera_height is None else replace(config, camera_height=camera_height)


def motion_config(settings: Settings, realtime: bool = False) -> MotionConfig:
    """The camera's motion settings: temporal alignment, the motion scale and its clock.
    ``realtime`` (the node): a frame never waits for a keyframe's measurement (offline, each
    lands on the next keyframe, so a run is the same on any machine)."""
    return MotionConfig(temporal_alignment=settings.temporal_alignment,
                        min_baseline=settings.motion_scale_min_baseline,
                        scale_map=settings.motion_scale_map,
                        clock_offset=settings.pose_clock_offset,
                        max_translation=settings.temporal_max_translation,
                        wait_for_keyframes=not realtime)


def backend_config(settings: Settings) -> BackendConfig:
    """Where and how the model runs (backend, threads, precisions, GPU worker, NPU plugin)."""
    return BackendConfig(settings.backend, settings.num_threads, settings.gpu_precision,
                         settings.cpu_precision, settings.gpu_timeout, settings.gpu_max_restarts,
                         npu={"vendor": settings.npu_vendor, "device": settings.openvino_device,
                              "cache_dir": settings.npu_cache_dir,
                              "library_dir": settings.npu_library_dir})


def depth_options(settings: Settings) -> DepthOptions:
    """How to read a ``model_type`` 'depth' file."""
    return DepthOptions(**{f.name: getattr(settings, f.name) for f in fields(DepthOptions)})


def compression_config(settings: Settings) -> CompressionConfig:
    """The compressed topics' encoder settings."""
    return CompressionConfig(depth_max=settings.compressed_depth_max,
                             depth_quantization=settings.compressed_depth_quantization,
                             png_level=settings.png_level, jpeg_quality=settings.jpeg_quality)


# ---- rules between settings -------------------------------------------------------------------
def estimates_scale(settings: Settings, metric_depth: bool) -> bool:
    """Whether a frame's scale is estimated for this model (``metric_scale.scale_is_estimated``
    on these settings)."""
    return scale_is_estimated(metric_depth, settings.depth_scale_source)


def camera_heights(settings: Settings) -> list[float]:
    """Each camera's height (``camera_heights``, else ``camera_height`` for all), one per
    camera of ``cameras`` (one for the single default camera)."""
    if not per_camera_heights(settings.camera_heights):
        return [settings.camera_height] * max(1, len(camera_names(settings.cameras)))
    return list(settings.camera_heights)


def camera_heights_problem(settings: Settings) -> str | None:
    """Why ``camera_heights`` does not give one height per camera (None: it does)."""
    count = len(camera_names(settings.cameras))
    heights = camera_heights(settings)
    if len(heights) != max(1, count):
        return (f"camera_heights has {len(heights)} values for {count or 1} "
                f"camera{'s' if count != 1 else ''}; give one per camera, in the order of "
                "cameras (or [] to use camera_height for all)")
    return None


def ignored_camera_height(current: Settings, changed: Settings) -> str | None:
    """Why the change from ``current`` to ``changed`` of ``camera_height`` would be ignored
    (None: it would not): while ``camera_heights`` is set each camera uses its own entry, so
    the change is refused."""
    per_camera = per_camera_heights(changed.camera_heights)
    if changed.camera_height == current.camera_height or not per_camera:
        return None  # not changed, or used
    return (f"camera_height is not used while camera_heights is set "
            f"({list(changed.camera_heights)}): set camera_heights (one height per camera, "
            "in the order of cameras) instead, or set camera_heights to [0.0] with it to use "
            "camera_height for every camera")


def depth_units_problem(settings: Settings, metric_depth: bool,
                        syntax: Syntax = NODE) -> str | None:
    """Why these settings would pass relative depth off as metres, or cannot find a scale
    (ground_plane without each camera's height), or None."""
    if estimates_scale(settings, metric_depth):
        for height in camera_heights(settings):
            problem = scale_config(settings, camera_height=height).problem(syntax)
            if problem:
                return problem
    return relative_output_problem(metric_depth, settings.depth_scale_source,
                                   settings.max_depth, settings.depth_encoding, syntax)


def compressed_depth_problem(settings: Settings, syntax: Syntax = NODE) -> str | None:
    """Why compressedDepth cannot hold the depth out to ``compressed_depth_max`` (32FC1): past
    q (q + 1) (q = ``compressed_depth_quantization``) one step of its 16-bit inverse depth spans
    all farther depth, so such depth is sent as invalid; a depth_max beyond it is refused."""
    config = compression_config(settings)
    limit = representable_depth(config)
    if settings.depth_encoding != "32FC1" or config.depth_max <= limit:
        return None
    q_min = math.ceil((math.sqrt(1.0 + 4.0 * config.depth_max) - 1.0) / 2.0 * 100.0) / 100.0
    q = syntax.phrase("compressed_depth_quantization", f"{config.depth_quantization:g}")
    depth_max = syntax.phrase("compressed_depth_max", f"{config.depth_max:g}")
    return (f"{q} cannot represent depth out to {depth_max} m: compressedDepth's inverse "
            f"depth holds depth below q (q + 1) = {limit:g} m "
            f"only; raise {syntax.name('compressed_depth_quantization')} to at least {q_min:g} "
            f"or lower {syntax.name('compressed_depth_max')} to {limit:g}")


def publishes(settings: Settings, group: OutputGroup) -> bool:
    """Whether ``group``'s ``publish_*`` switch is on."""
    return bool(getattr(settings, group.switch))


def default_confidence(points_min_confidence: float) -> bool:
    """Whether ``points_min_confidence`` is the table's default (not a user's request), so
    a model without confidence has nothing to filter rather than a request it cannot meet."""
    return points_min_confidence == PARAMS_BY_NAME["points_min_confidence"].default


# ---- the node: one entry, made once and handed down ------------------------------------------
def reference_span(settings: Settings) -> float:
    """How far back (s of stamps) reference depths are kept: ``depth_scale_max_age``, at least
    ``reference_depth_slop`` (0, a scale held forever: no limit by time, only the caps of
    :mod:`..scale.reference_window`)."""
    age = settings.depth_scale_max_age
    return max(age, settings.reference_depth_slop) if age > 0 else 0.0


def node_where(spec: ModelSpec) -> Where:
    """The node's run, for the settings' relevance rule: this model on a camera topic."""
    return Where(spec.kind, spec.metric_depth)


@dataclass(frozen=True)
class CameraInputSetup:
    """How one camera's topics are subscribed to."""

    compressed: bool  # ``input_compressed``: the image comes as a CompressedImage
    qos: str          # ``input_qos``
    info_qos: str     # ``camera_info_qos``
    reference: bool   # also ``reference_depth`` (the camera's scale comes from it)


@dataclass(frozen=True)
class CameraSetup:
    """What one camera of the node takes from the settings."""

    name: str                  # "" for the single default camera
    height: float              # its own (``camera_heights``, else ``camera_height``)
    scale: ScaleConfig | None  # its metric-scale filter's configuration; None: not estimated
    motion: MotionConfig       # temporal alignment and the motion scale
    reference_span: float      # s of reference depth stamps kept (:func:`reference_span`)
    reference_slop: float      # ``reference_depth_slop``: a frame's reference within it (s)
    input: CameraInputSetup    # its subscriptions
    outputs: tuple[str, ...]   # the output groups (``OutputGroup.name``) switched on
    scale_source: str          # ``depth_scale_source`` (diagnostics of a scale not estimated)
    fixed_scale: float         # ``relative_depth_scale`` (idem)

    @property
    def track(self) -> TrackSetup:
        """What its :class:`~..camera_track.CameraTrack` takes."""
        return TrackSetup(self.scale, self.motion, self.reference_span)


@dataclass(frozen=True)
class OdometrySetup:
    """What the node's odometry input takes from the settings."""

    mountings: tuple[np.ndarray | None, ...]  # each camera's base_from_camera (optical) pose
    #                                           from ``camera_in_base``; None: not given
    given: tuple[float, ...]  # ``camera_in_base`` as given (empty: not given)
    tolerance: float          # ``odometry_tolerance`` (s)
    max_gap: float            # ``odometry_max_gap`` (s)
    wait: float               # ``odometry_wait`` (s)


@dataclass(frozen=True)
class StartNotes:
    """What the node says at start about the settings it was given."""

    ignored: tuple[str, ...] = ()  # why each does nothing here: a WARN each, in /diagnostics
    info: tuple[str, ...] = ()     # said at INFO only (the default confidence filter's note)


@dataclass(frozen=True)
class NodeSetup:
    """Everything the node derives from the settings, and why it cannot start ("" when it
    can)."""

    cameras: tuple[CameraSetup, ...]
    odometry: OdometrySetup
    notes: StartNotes = StartNotes()
    problem: str = ""


def node_setup(settings: Settings, spec: ModelSpec, confidence_note: str = "") -> NodeSetup:
    """Everything the node derives from ``settings`` for the model ``spec``: each camera's
    configuration, the odometry's, what to say of the settings given (``confidence_note``:
    why ``points_min_confidence`` cannot act with this model, "" when it can) and the
    startup problem (camera_heights or camera_in_base that do not fit the cameras, depth
    units that would be wrong or without a scale)."""
    problem = camera_heights_problem(settings) or ""
    if not problem:
        units = depth_units_problem(settings, spec.metric_depth)  # every camera's
        problem = f"{units}. {NODE_FIX}" if units else ""
    # the rules of this module first, then those of the parts they name
    where = node_where(spec)
    motion, span = motion_config(settings, realtime=True), reference_span(settings)
    scale = scale_config(settings)
    outputs = tuple(group.name for group in OUTPUT_GROUPS.values()
                    if publishes(settings, group))
    # the note on the default filter is said at INFO only: the user asked for nothing
    quiet = confidence_note if default_confidence(settings.points_min_confidence) else ""
    heights = camera_heights(settings)
    names = camera_names(settings.cameras) or [""]
    estimated = scale_is_estimated(spec.metric_depth, settings.depth_scale_source)
    ignored = ignored_settings(settings, given_at_start(settings), where)
    if confidence_note and not quiet and \
            not any(why.startswith("points_min_confidence ") for why in ignored):
        ignored.append(confidence_note)  # asked for, and not said yet
    given = given_mountings(settings.camera_in_base)
    try:
        mountings = tuple(camera_mountings(settings.camera_in_base, len(names)))
    except ValueError as exc:
        mountings = (None,) * len(names)
        problem = problem or f"{exc}. Fix it in the config YAML."
    odometry = OdometrySetup(mountings, tuple(given), settings.odometry_tolerance,
                             settings.odometry_max_gap, settings.odometry_wait)
    subscribe = CameraInputSetup(settings.input_compressed, settings.input_qos,
                                 settings.camera_info_qos,
                                 estimated and settings.depth_scale_source == "reference_depth")
    cameras = tuple(CameraSetup(name, height, replace(scale, camera_height=height)
                                if estimated else None, motion, span,
                                settings.reference_depth_slop, subscribe, outputs,
                                settings.depth_scale_source, settings.relative_depth_scale)
                    for name, height in zip(names, heights))
    notes = StartNotes(tuple(ignored), (quiet,) if quiet else ())
    return NodeSetup(cameras, odometry, notes, problem)
