# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The settings table, as a typed object: every setting is a field of :class:`Settings` with its
type, default, allowed values or range, runtime or restart-only, unit, description and the
offline command's flag (its :class:`ParamSpec` row). ROS-free, and low in the package: it
imports no backend and no OpenCV (the allowed values live below it, in :mod:`..setting_values`).

The one source for both front ends: the node declares its parameters from :data:`PARAMS`
(``ros/parameters.py``), ``dense-perception process`` generates its flags from it
(``offline/options/settings_args.py``), ``docs/parameters.md`` is generated from it (``make docs``),
and both front ends make one :class:`Settings` of their values. A Settings is checked when it is
made (each value against its row, once); the rules between settings and the configurations
built from them (pipeline, scale, backend) are in ``core/wiring/derived.py``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields, replace
from typing import Any, Mapping, Sequence

from ..motion.odometry import mountings_problem
from .model_table import ModelSettings
from ..setting_names import NODE, Syntax
from .row import ParamSpec, SettingError, setting
from ..setting_values import (DEPTH_ENCODINGS, FIT_MODES, OUTPUT_RESOLUTIONS, SCALE_CHECKS,
                              SCALE_SOURCES, voxel_size_problem)

INPUT_QOS = ("auto", "sensor_data", "reliable")
MODEL_STATUS = "model"  # the shared model's diagnostics status: <node>: model (not a camera)
CAMERA_INFO_QOS = ("auto", "sensor_data", "reliable", "transient_local")


def camera_names(value: list[str]) -> list[str]:
    """The ``cameras`` parameter as a list of names: [] (one camera, no prefix) for [] or ['']."""
    return [name for name in value if name]


def per_camera_heights(heights: Sequence[float]) -> bool:
    """Whether the value ``heights`` of ``camera_heights`` is set (then ``camera_height`` is
    not used)."""
    return bool(heights) and list(heights) != [0.0]


def camera_names_problem(value: list[str], syntax: Syntax = NODE) -> str | None:
    """Why ``cameras`` is not a list of distinct relative ROS names (None: it is)."""
    names = camera_names(list(value))
    for name in names:
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*(/[A-Za-z][A-Za-z0-9_]*)*", name):
            return (f"cameras: '{name}' is not a relative topic name (letters, digits, _ and /, "
                    "starting with a letter)")
    if len(set(names)) != len(names):
        return f"cameras: a name is listed twice in {names}"
    if MODEL_STATUS in names:
        return (f"cameras: '{MODEL_STATUS}' is the name of the shared model's diagnostics "
                f"status (<node>: {MODEL_STATUS}); call that camera otherwise")
    return None


@dataclass(frozen=True)
class Settings(ModelSettings):
    """Every setting of the node and the offline command, typed and checked: making one (or
    :func:`dataclasses.replace` on one) checks each value against its row and raises
    :class:`SettingError`. Lists are held as tuples."""

    fit: str = setting(
        "crop", "How frames meet the model's fixed input without padding: crop "
        "(centre crop, no distortion), stretch, or rotate (turn landscape frames for "
        "portrait models).", choices=FIT_MODES, runtime=True,
        offline="--fit")
    output_resolution: str = setting(
        "model", "Publish on the model's grid ('model', cheaper) or "
        "at the camera's full size ('input').", choices=OUTPUT_RESOLUTIONS, runtime=True,
        offline="--output-resolution")
    relative_depth_scale: float = setting(
        1.0, "depth_scale_source fixed: metres per unit of "
        "relative depth (DA3, model_type depth), asserted by you; none: a unitless "
        "multiplier. Metric models ignore it.", low=1e-9, high=1e9, runtime=True,
        unit="m/unit", offline="--relative-depth-scale")
    depth_scale_source: str = setting(
        "none", "Where the metric scale of relative depth (DA3, "
        "model_type depth) comes from: none (depth stays relative: 32FC1 unitless, no "
        "points, no 16UC1 or max_depth), fixed (relative_depth_scale is metres per unit, "
        "asserted), ground_plane (from camera_height above a flat floor), "
        "reference_depth (from a metric depth image on reference_depth) or motion (from "
        "the camera's motion: odometry, offline --poses). Metric models ignore it.",
        choices=SCALE_SOURCES,
        offline="--depth-scale-source")
    depth_scale_check: str = setting(
        "none", "A second scale source beside depth_scale_source motion or reference_depth, "
        "in the same filter: ground_plane (camera_height above a flat floor). Where both "
        "measure, each counts by its error; where they disagree beyond both errors the frame "
        "is withheld with the reason (a trajectory twice too long, a wrong camera_height), "
        "which neither source can tell alone.", choices=SCALE_CHECKS,
        offline="--depth-scale-check")
    camera_height: float = setting(
        0.0, "Height (m) of the camera's optical centre above the floor; "
        "needed by depth_scale_source: ground_plane.", low=0.0, high=1000.0, runtime=True,
        unit="m", offline="--camera-height")
    camera_heights: tuple[float, ...] = setting(
        [0.0], "Per camera (cameras): the height (m) of each camera's "
        "optical centre above the floor, in the order of cameras, for "
        "depth_scale_source: ground_plane; [] or [0.0] = camera_height for every camera. "
        "While it is set, a change of camera_height is refused (it would be ignored).",
        runtime=True, unit="m")
    depth_scale_time_constant: float = setting(
        5.0, "Time constant (s, by frame stamps) of the "
        "filter that smooths the estimated scale; a scene change larger than the noise "
        "is taken over within a third of it.", low=0.01, high=3600.0, runtime=True,
        unit="s", offline="--depth-scale-time-constant")
    depth_scale_max_age: float = setting(
        50.0, "Seconds (by frame stamps) the last scale is held "
        "when frames give none (no floor or reference in view); older, depth/image and "
        "points are withheld again (diagnostics WARN) until a new estimate. 0 = hold "
        "forever. The default is 10 default time constants: raise it with "
        "depth_scale_time_constant.", low=0.0, high=1e6, runtime=True,
        unit="s", offline="--depth-scale-max-age")
    max_scale_error: float = setting(0.08, "Metres only while the estimated scale's error "
        "bound (2 sigma) is within this fraction; else depth is withheld with the reason. 1 = "
        "no bound.", low=0.005, high=1.0, unit="fraction", offline="--max-scale-error")
    metric_depth_error: float = setting(
        0.15, "A metric network's own relative error (1 sigma) "
        "before a source has measured it (widened by what the source then finds): with an "
        "estimated depth_scale_source its "
        "metres are one more estimate of the scale, fused with the source's by their errors; "
        "where the two disagree beyond both the source corrects them (diagnostics say so).",
        low=0.001, high=10.0, unit="fraction", offline="--metric-depth-error")
    ground_max_tilt_deg: float = setting(
        30.0, "ground_plane: largest angle (deg) between the floor's "
        "normal and the image's down axis (camera pitch or roll).", low=1.0, high=89.0,
        runtime=True,
        unit="deg", offline="--ground-max-tilt")
    depth_scale_min_inliers: float = setting(
        0.3, "Smallest share of inliers (points of the robot's "
        "own floor in the lower view, or agreeing reference pixels) for a frame's scale "
        "to count.",
        low=0.0, high=1.0, runtime=True, unit="share", offline="--depth-scale-min-inliers")
    motion_scale_min_baseline: float = setting(
        0.1, "depth_scale_source motion: the shortest camera motion (m) between two frames "
        "whose image motion gives a scale (the latest earlier frame this far away, within "
        "2 s, is the partner); shorter baselines give too little parallax to tell.",
        low=0.005, high=10.0, runtime=True, unit="m", offline="--motion-scale-min-baseline")
    pose_clock_offset: float = setting(
        0.0, "depth_scale_source motion: the pose clock's offset "
        "(s) against the image clock, the poses taken at each image's stamp plus it; 0 = "
        "measured from the image motion (diagnostics report it). Set it when it is known "
        "(poses stamped 60 ms before the camera got there: -0.06).", low=-1.0, high=1.0, unit="s",
        offline="--pose-clock-offset")
    motion_scale_map: bool = setting(True, "depth_scale_source motion: correct the depth over "
        "the view with the ratios the flow measured (a grid of the view and its depth bands), "
        "not only one scale.", offline="--motion-scale-map")
    temporal_alignment: bool = setting(
        True, "With the camera's motion (odometry, offline --poses): the previous depth "
        "moved into the new view and fused with the new frame where they agree (less "
        "flicker), anchored to the frame's own scale; it starts afresh on a jump and says "
        "why. Frames without a pose are published as they are.",
        runtime=True, offline="--temporal-alignment")
    temporal_max_translation: float = setting(
        0.5, "temporal_alignment: the largest camera motion (m) between two frames that is "
        "still aligned; more is a jump, and the alignment starts afresh (a fast robot at a "
        "low frame rate: raise it to its motion per frame).", low=0.01, high=100.0,
        runtime=True, unit="m", offline="--temporal-max-translation")
    reference_depth_slop: float = setting(
        0.05, "reference_depth: largest stamp difference (s) "
        "between an image and the reference depth used for it.", low=0.0, high=10.0,
        runtime=True,
        unit="s", offline="--reference-depth-slop")
    max_depth: float = setting(
        0.0, "Points farther than this (m) are dropped; 0 = no limit. An estimated scale "
        "that puts 90 % of the view beyond it is refused as a unit error (are the poses in "
        "metres?).",
        low=0.0, high=1e6, runtime=True,
        unit="m", offline="--max-depth")
    points_min_confidence: float = setting(
        0.1, "Drop the least confident points, in [0, 1]; 0 = "
        "keep all. DA3 (a file with its confidence output): the quantile of the cloud's "
        "confidence (its points after max_depth and points_stride) under which points "
        "are dropped (0.4 = the official DA3 export's 40th "
        "percentile). TIPSv2: the top-class segmentation probability under which points "
        "are dropped. A DA3 file without confidence has nothing to filter: the default "
        "is said once at INFO, another value is a WARN at start and refused at runtime.",
        low=0.0, high=1.0, runtime=True,
        offline="--points-min-confidence")
    publish_depth: bool = setting(
        True, "Publish depth/image, depth/camera_info, depth/colored "
        "and depth/confidence (DA3 files with a confidence output).")
    publish_normals: bool = setting(
        True, "Publish normals/image and normals/colored (if the "
        "model has normals).")
    publish_segmentation: bool = setting(
        True, "Publish segmentation/* (if the model segments).")
    publish_points: bool = setting(
        True, "Publish the points PointCloud2.")
    points_rgb: bool = setting(
        True, "Add the camera colour to each point (rgb field).",
        runtime=True,
        offline="--points-rgb")
    points_stride: int = setting(
        2, "Use every n-th pixel in each direction for the cloud.",
        low=1, high=64, runtime=True,
        unit="px", offline="--points-stride")
    points_organized: bool = setting(
        False, "Keep the image grid in the cloud (NaN for invalid "
        "pixels) instead of dropping invalid points.", runtime=True,
        offline="--points-organized")
    points_voxel_size: float = setting(
        0.0, "Keep one point per cube of this edge (m), the one "
        "nearest the camera, so a cloud for a network link stays light and no obstacle "
        "is lost; 0 = off, else at least 0.001 (1 mm). The cloud is then unorganised "
        "(points_organized is ignored).", low=0.0, high=100.0, runtime=True,
        unit="m", offline="--points-voxel-size", check=voxel_size_problem)
    input_rectified: bool = setting(
        False, "true: the image is rectified (image_rect), use "
        "CameraInfo P and ignore K and D; false: the image is raw (image_raw), rectified "
        "here first when D is not zero.", runtime=True,
        offline="--input-rectified")
    fallback_hfov_deg: float = setting(
        60.0, "Horizontal field of view for a guessed pinhole "
        "model when no usable CameraInfo arrives.", low=1.0, high=179.0, runtime=True,
        unit="deg", offline="--fallback-hfov")
    host_threads: int = setting(
        0, "Threads for the host work around inference (the depth "
        "view beside the cloud; the segmentation argmax and confidence split by class "
        "between at most two); 0 = auto: the cores this process may use, at most 4.",
        low=0, high=64,
        offline="--host-threads", affects_output=False)
    diagnostics_period: float = setting(
        1.0, "Seconds between /diagnostics messages.",
        low=0.05, high=3600.0,
        unit="s")
    input_qos: str = setting(
        "auto", "Camera subscription QoS: 'auto' matches the camera "
        "publisher's reliability (history depth 1) and re-checks when it appears; "
        "'sensor_data' (best effort, REP 2003) or 'reliable' force one.",
        choices=INPUT_QOS)
    camera_info_qos: str = setting(
        "auto", "camera_info subscription QoS: 'auto' is input_qos, "
        "but reliable transient-local (depth 1) when every camera_info publisher is "
        "transient-local (a driver that latches its CameraInfo once); 'transient_local', "
        "'sensor_data' or 'reliable' force one.", choices=CAMERA_INFO_QOS)
    camera_info_slop: float = setting(
        0.05, "When no CameraInfo is stamped at or before an image, "
        "use the first one stamped at most this long (s) after it (drivers that stamp "
        "CameraInfo on another clock); until the first CameraInfo arrives, a frame waits "
        "at most this long for it (once).", low=0.0, high=10.0, runtime=True,
        unit="s", offline="--camera-info-slop")
    camera_in_base: tuple[float, ...] = setting(
        [0.0], "The camera's optical frame in the robot's base frame (the odometry's "
        "child_frame_id): x y z qx qy qz qw (m, quaternion; REP 103), 7 numbers per camera in "
        "the order of cameras. With odometry, it gives the camera's motion. [0.0] or [] = from "
        "TF where tf2_ros is installed (offline: the bag's /tf_static), else no motion: no "
        "default mounting is safe (an identity would have the camera look straight up).",
        check=mountings_problem, offline="--camera-in-base")
    odometry_tolerance: float = setting(
        0.05, "A frame stamped at most this long (s) before the oldest odometry message "
        "takes its pose; one past the newest waits (odometry_wait), never taking the newest's.",
        low=0.0, high=10.0, runtime=True, unit="s", offline="--odometry-tolerance")
    odometry_wait: float = setting(
        0.3, "How long (s) after it came a frame may wait for the odometry message after its "
        "stamp before it goes on without motion.", low=0.0, high=10.0, runtime=True, unit="s")
    odometry_max_gap: float = setting(
        0.5, "The longest time (s) between two odometry messages that a frame's pose is "
        "interpolated across; a frame in a longer gap (messages lost) gets no motion.",
        low=0.001, high=60.0, runtime=True, unit="s", offline="--odometry-max-gap")
    cameras: tuple[str, ...] = setting(
        [""], "Several cameras, one model: camera names, e.g. [front, rear]. "
        "Each camera subscribes to <name>/image (or <name>/image/compressed) and "
        "<name>/camera_info and publishes every output under <name>/, stamped with its "
        "header; cameras take turns on the model. [] or [''] = one camera on image and "
        "camera_info.", check=camera_names_problem)
    use_lifecycle: bool = setting(
        False, "Run as a managed (lifecycle) node: configure loads the "
        "model, activate starts publishing, deactivate stops inference, cleanup frees "
        "the model.")
    input_compressed: bool = setting(
        False, "Subscribe to image/compressed (JPEG/PNG) instead "
        "of image.")
    jpeg_quality: int = setting(
        80, "JPEG quality (1-100) of depth/colored/compressed, "
        "normals/colored/compressed and segmentation/colored/compressed.", low=1,
        high=100, runtime=True, offline="--jpeg-quality")
    png_level: int = setting(
        3, "zlib level (0-9) of the PNG in depth/image/compressedDepth and "
        "segmentation/labels/compressed: higher is smaller and slower.", low=0, high=9,
        runtime=True, offline="--png-level")
    compressed_depth_max: float = setting(
        10.0, "depth/image/compressedDepth: depth at or past "
        "this (m) is sent as invalid (compressed_depth_image_transport's depth_max).",
        low=1.0, high=100.0, runtime=True, unit="m", offline="--compressed-depth-max")
    compressed_depth_quantization: float = setting(
        100.0, "depth/image/compressedDepth (32FC1): "
        "the depth (m) at which one step of the 16-bit inverse depth is 1 m "
        "(compressed_depth_image_transport's depth_quantization); the error at depth z is "
        "at most z^2 / (q (q + 1) - z), for z below q (q + 1) only: farther depth is sent "
        "as invalid, and compressed_depth_max must not pass q (q + 1).", low=1.0, high=150.0,
        runtime=True,
        unit="m", offline="--compressed-depth-quantization")
    depth_encoding: str = setting(
        "32FC1", "depth/image encoding: 32FC1 (metres, NaN invalid) "
        "or 16UC1 (millimetres, 0 invalid).", choices=DEPTH_ENCODINGS, runtime=True,
        offline="--depth-format")

    def __post_init__(self) -> None:
        for spec in PARAMS:
            value = getattr(self, spec.name)
            if isinstance(value, list):  # a parameter or flag gives a list: held as a tuple
                object.__setattr__(self, spec.name, value := tuple(value))
            problem = spec.problem(value)
            if problem:
                raise SettingError(spec, value, problem)

    @classmethod
    def from_values(cls, values: Mapping[str, Any]) -> "Settings":
        """The settings ``values`` (``{setting name: value}``) give, the rest at their
        defaults; SettingError when one is out of its row."""
        return cls(**values)

    def values(self) -> dict[str, Any]:
        """``{setting name: value}``, tuples as lists (as a parameter or YAML file holds them)."""
        return {spec.name: list(v) if isinstance(v := getattr(self, spec.name), tuple) else v
                for spec in PARAMS}

    def changed(self, changes: Mapping[str, Any]) -> "Settings":
        """These settings with ``changes`` (``{setting name: value}``) applied, checked."""
        return replace(self, **changes)


PARAMS: tuple[ParamSpec, ...] = tuple(replace(f.metadata["row"], name=f.name)
                                      for f in fields(Settings))
"""The table's rows, in the order of :class:`Settings`' fields."""

PARAMS_BY_NAME = {p.name: p for p in PARAMS}
