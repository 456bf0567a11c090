"""The settings table: every setting's name, type (its default's), default, allowed values or
range, runtime or restart-only, unit, description, and the offline command's flag (ROS-free).

The one source for both front ends: the node declares its parameters from it
(``ros/parameters.py``), ``dense-perception process`` generates its flags from it
(``offline/settings_args.py``), both build the pipeline and scale configuration through
``core/settings.py``, and ``docs/parameters.md`` is generated from it (``make docs``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from .geometry.fit import FIT_MODES, OUTPUT_RESOLUTIONS
from .scale.metric_scale import SCALE_SOURCES
from .depth_model import DEPTH_OUTPUT_KINDS, NORMALIZATIONS, mean_std_problem
from .models import MODEL_TYPES
from .backends.cpu_precision import CPU_PRECISIONS
from .backends.runner_base import BACKENDS, GPU_PRECISIONS
from .backends.gpu_runner import DEFAULT_MAX_RESTARTS, DEFAULT_TIMEOUT_S
from .backends.npu_runner import NPU_VENDORS, OPENVINO_DEVICES
from .products import DEPTH_ENCODINGS
from .setting_names import NODE, Syntax

INPUT_QOS = ("auto", "sensor_data", "reliable")
MODEL_STATUS = "model"  # the shared model's diagnostics status: <node>: model (not a camera)
CAMERA_INFO_QOS = ("auto", "sensor_data", "reliable", "transient_local")


@dataclass(frozen=True)
class ParamSpec:
    """One parameter: default, description, and either ``choices`` or a numeric range."""

    name: str
    default: Any
    description: str
    choices: tuple[str, ...] = ()
    low: float | None = None
    high: float | None = None
    runtime: bool = False  # may change while the node runs
    unit: str = ""  # of a number: m, s, deg, px, m/unit, share ('' = none)
    # The offline command's flag (``dense-perception process``), None = the node only. Flags
    # are generated from this table (offline/settings_args.py) but for --model and
    # --depth-format (npy/png16 for 32FC1/16UC1), which the command line writes out itself.
    offline: str | None = None
    # Whether the setting can change an output's bytes: the fleet's reuse key
    # (offline/fleet.py) is every offline setting marked so. True unless a setting is shown
    # not to, so a new setting is in the key until someone says otherwise.
    affects_output: bool = True

    def problem(self, value: Any, syntax: Syntax = NODE) -> str | None:
        """Why ``value`` is not allowed, or None (the setting named in ``syntax``)."""
        name = syntax.name(self.name)
        if self.choices and value not in self.choices:
            return f"{name} '{value}' is not allowed; use one of: {', '.join(self.choices)}"
        if self.low is not None and not value >= self.low:
            return f"{name} must be >= {self.low:g}, got {value}"
        if self.high is not None and not value <= self.high:
            return f"{name} must be <= {self.high:g}, got {value}"
        if self.name == "cameras":
            return camera_names_problem(list(value))
        if self.name in ("input_mean", "input_std"):
            ones = [1.0] * 3  # checks this one alone; the other at its default
            return mean_std_problem(*((value, ones) if self.name == "input_mean" else
                                      ([0.0] * 3, value)), syntax=syntax)
        if self.name == "num_threads" and value == 0:
            return f"{name} must be >= 1, or -1 for all cores; got 0"
        return None


def camera_names(value: list[str]) -> list[str]:
    """The ``cameras`` parameter as a list of names: [] (one camera, no prefix) for [] or ['']."""
    return [name for name in value if name]


def camera_names_problem(value: list[str]) -> str | None:
    """Why ``cameras`` is not a list of distinct relative ROS names (None: it is)."""
    names = camera_names(value)
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


def per_camera_heights(values: dict[str, Any]) -> bool:
    """Whether ``camera_heights`` is set (then ``camera_height`` is not used)."""
    heights = list(values["camera_heights"])
    return bool(heights) and heights != [0.0]


def camera_heights_for(values: dict[str, Any]) -> list[float]:
    """Each camera's height (``camera_heights``, else ``camera_height`` for all), one per
    camera of ``cameras`` (one for the single default camera)."""
    count = max(1, len(camera_names(values["cameras"])))
    if not per_camera_heights(values):
        return [values["camera_height"]] * count
    return list(values["camera_heights"])


def camera_heights_problem(values: dict[str, Any]) -> str | None:
    """Why ``camera_heights`` does not give one height per camera (None: it does)."""
    names = camera_names(values["cameras"])
    heights = camera_heights_for(values)
    if len(heights) != max(1, len(names)):
        return (f"camera_heights has {len(heights)} values for {len(names) or 1} "
                f"camera{'s' if len(names) != 1 else ''}; give one per camera, in the order of "
                "cameras (or [] to use camera_height for all)")
    return None


def ignored_camera_height(values: dict[str, Any], changes: dict[str, Any]) -> str | None:
    """Why changing ``camera_height`` would be ignored (None: it would not): while
    ``camera_heights`` is set each camera uses its own entry, so the change is refused."""
    merged = {**values, **changes}
    if changes.get("camera_height", values["camera_height"]) == values["camera_height"] \
            or not per_camera_heights(merged):
        return None  # not changed, or used
    return (f"camera_height is not used while camera_heights is set "
            f"({list(merged['camera_heights'])}): set camera_heights (one height per camera, "
            "in the order of cameras) instead, or set camera_heights to [0.0] with it to use "
            "camera_height for every camera")


PARAMS: tuple[ParamSpec, ...] = (
    ParamSpec("model_path", "", "Path to the .tflite model (DA3-Small, TIPSv2-B14-DPT, or any "
              "single-image depth network with model_type depth); "
              "relative paths are looked up in the package's models/ folder too.",
              offline="--model"),
    ParamSpec("model_type", "auto", "Model kind: da3, tipsv2, or depth (any single-image "
              "relative-depth network, read per input_normalization, depth_output and "
              "depth_output_kind); 'auto' detects DA3 and TIPSv2 from the file's signature and "
              "never picks depth.",
              choices=MODEL_TYPES,
              offline="--model-type"),
    ParamSpec("input_normalization", "unit", "model_type depth: how RGB pixels are normalised "
              "for the model: unit (RGB/255), imagenet (RGB/255, then ImageNet's mean and std) "
              "or custom (RGB/255, then input_mean and input_std). DA3 and TIPSv2 ignore it "
              "(their cards fix it).", choices=NORMALIZATIONS,
              offline="--input-normalization"),
    ParamSpec("input_mean", [0.0, 0.0, 0.0], "model_type depth, input_normalization custom: "
              "the mean subtracted from RGB/255, per channel (R, G, B).",
              offline="--input-mean"),
    ParamSpec("input_std", [1.0, 1.0, 1.0], "model_type depth, input_normalization custom: "
              "the standard deviation that RGB/255 minus input_mean is divided by, per channel "
              "(R, G, B; > 0).",
              offline="--input-std"),
    ParamSpec("depth_output", -1, "model_type depth: which output (counted from 0) is the "
              "depth; -1 = the first output that is one plane at the input's resolution.",
              low=-1, high=1000,
              offline="--depth-output"),
    ParamSpec("depth_output_kind", "depth", "model_type depth: what the depth output holds: "
              "depth (grows with distance) or inverse_depth (disparity-like, shrinks with "
              "distance; depth = 1/x, x <= 0 is invalid). Either is relative depth: see "
              "depth_scale_source.", choices=DEPTH_OUTPUT_KINDS,
              offline="--depth-output-kind"),
    ParamSpec("backend", "auto", "'gpu' (LiteRT CompiledModel, WebGPU over Vulkan), 'cpu' "
              "(XNNPACK), 'npu' (a LiteRT vendor plugin: npu_vendor) or 'auto' (the GPU if it "
              "initialises and is not a CPU emulation such as llvmpipe, else the CPU; never the "
              "NPU).", choices=BACKENDS,
              offline="--backend"),
    ParamSpec("gpu_precision", "fp16", "GPU arithmetic for backend gpu/auto: fp16 (LiteRT's "
              "default, fastest) or fp32 (GpuOptions enforce_f32: for values beyond fp16's "
              "range of 65504 or its 3 significant digits).", choices=GPU_PRECISIONS,
              offline="--gpu-precision"),
    ParamSpec("gpu_timeout", DEFAULT_TIMEOUT_S, "Seconds one GPU inference may take (real "
              "models: milliseconds to tenths of a second); past it the GPU worker process is "
              "killed and restarted, and that frame fails.", low=0.1, high=3600.0,
              unit="s", offline="--gpu-timeout", affects_output=False),
    ParamSpec("gpu_max_restarts", DEFAULT_MAX_RESTARTS, "GPU worker restarts (after a "
              "timeout or a crash) with no good inference between them; one more and the node "
              "exits with status 1 and one FATAL line, for respawn to act.", low=0, high=1000,
              offline="--gpu-max-restarts", affects_output=False),
    ParamSpec("npu_vendor", "auto", "backend npu: the LiteRT vendor plugin: intel_openvino "
              "(Intel Core Ultra NPUs through OpenVINO), qualcomm (Hexagon HTP through QNN) or "
              "auto (intel_openvino on x86_64, qualcomm on aarch64).", choices=NPU_VENDORS,
              offline="--npu-vendor"),
    ParamSpec("openvino_device", "NPU", "backend npu, intel_openvino: OpenVINO's device: NPU, "
              "GPU, or CPU (a test bed on machines without an NPU, slower than backend cpu).",
              choices=OPENVINO_DEVICES,
              offline="--openvino-device"),
    ParamSpec("npu_cache_dir", "", "backend npu: folder of compiled models (keyed by model "
              "hash, plugin and device); '' = $XDG_CACHE_HOME or ~/.cache, "
              "dense_perception/npu; 'off' = compile at every start.",
              offline="--npu-cache-dir", affects_output=False),
    ParamSpec("npu_library_dir", "", "backend npu, qualcomm: folder with LiteRT's Qualcomm "
              "dispatch library (libLiteRtDispatch_Qualcomm.so), optionally its compiler "
              "plugin, and Qualcomm's QNN libraries (libQnn*.so); no ai-edge-litert wheel has "
              "them. Unused for intel_openvino.",
              offline="--npu-library-dir", affects_output=False),
    ParamSpec("num_threads", -1, "CPU threads for XNNPACK; -1 = all cores (4 on a Pi 5).",
              low=-1, high=256,
              offline="--threads", affects_output=False),
    ParamSpec("cpu_precision", "auto", "CPU arithmetic: 'fp16' where the CPU has native fp16 "
              "(ARMv8.2+, e.g. Pi 5), 'fp32', or 'auto' (fp16 if the CPU has it and the model "
              "passes an fp16-vs-fp32 check at load, else fp32; the log says which).",
              choices=CPU_PRECISIONS,
              offline="--cpu-precision"),
    ParamSpec("fit", "crop", "How frames meet the model's fixed input without padding: crop "
              "(centre crop, no distortion), stretch, or rotate (turn landscape frames for "
              "portrait models).", choices=FIT_MODES, runtime=True,
              offline="--fit"),
    ParamSpec("output_resolution", "model", "Publish on the model's grid ('model', cheaper) or "
              "at the camera's full size ('input').", choices=OUTPUT_RESOLUTIONS, runtime=True,
              offline="--output-resolution"),
    ParamSpec("relative_depth_scale", 1.0, "depth_scale_source fixed: metres per unit of "
              "relative depth (DA3, model_type depth), asserted by you; none: a unitless "
              "multiplier. Metric models ignore it.", low=1e-9, high=1e9, runtime=True,
              unit="m/unit", offline="--relative-depth-scale"),
    ParamSpec("depth_scale_source", "none", "Where the metric scale of relative depth (DA3, "
              "model_type depth) comes from: none (depth stays relative: 32FC1 unitless, no "
              "points, no 16UC1 or max_depth), fixed (relative_depth_scale is metres per unit, "
              "asserted), ground_plane (from camera_height above a flat floor) or "
              "reference_depth (from a metric depth image on reference_depth). Metric models "
              "ignore it.",
              choices=SCALE_SOURCES,
              offline="--depth-scale-source"),
    ParamSpec("camera_height", 0.0, "Height (m) of the camera's optical centre above the floor; "
              "needed by depth_scale_source: ground_plane.", low=0.0, high=1000.0, runtime=True,
              unit="m", offline="--camera-height"),
    ParamSpec("camera_heights", [0.0], "Per camera (cameras): the height (m) of each camera's "
              "optical centre above the floor, in the order of cameras, for "
              "depth_scale_source: ground_plane; [] or [0.0] = camera_height for every camera. "
              "While it is set, a change of camera_height is refused (it would be ignored).",
              runtime=True, unit="m"),
    ParamSpec("depth_scale_time_constant", 5.0, "Time constant (s, by frame stamps) of the "
              "filter that smooths the estimated scale; a scene change larger than the noise "
              "is taken over within a third of it.", low=0.01, high=3600.0, runtime=True,
              unit="s", offline="--depth-scale-time-constant"),
    ParamSpec("depth_scale_max_age", 50.0, "Seconds (by frame stamps) the last scale is held "
              "when frames give none (no floor or reference in view); older, depth/image and "
              "points are withheld again (diagnostics WARN) until a new estimate. 0 = hold "
              "forever. The default is 10 default time constants: raise it with "
              "depth_scale_time_constant.", low=0.0, high=1e6, runtime=True,
              unit="s", offline="--depth-scale-max-age"),
    ParamSpec("ground_max_tilt_deg", 30.0, "ground_plane: largest angle (deg) between the floor's "
              "normal and the image's down axis (camera pitch or roll).", low=1.0, high=89.0,
              runtime=True,
              unit="deg", offline="--ground-max-tilt"),
    ParamSpec("depth_scale_min_inliers", 0.3, "Smallest share of inliers (points of the robot's "
              "own floor in the lower view, or agreeing reference pixels) for a frame's scale "
              "to count.",
              low=0.0, high=1.0, runtime=True,
              unit="share", offline="--depth-scale-min-inliers"),
    ParamSpec("reference_depth_slop", 0.05, "reference_depth: largest stamp difference (s) "
              "between an image and the reference depth used for it.", low=0.0, high=10.0,
              runtime=True,
              unit="s", offline="--reference-depth-slop"),
    ParamSpec("max_depth", 0.0, "Points farther than this (m) are dropped; 0 = no limit.",
              low=0.0, high=1e6, runtime=True,
              unit="m", offline="--max-depth"),
    ParamSpec("points_min_confidence", 0.1, "Drop the least confident points, in [0, 1]; 0 = "
              "keep all. DA3 (a file with its confidence output): the quantile of the cloud's "
              "confidence (its points after max_depth and points_stride) under which points "
              "are dropped (0.4 = the official DA3 export's 40th "
              "percentile). TIPSv2: the top-class segmentation probability under which points "
              "are dropped. A DA3 file without confidence has nothing to filter: the default "
              "is said once at INFO, another value is a WARN at start and refused at runtime.",
              low=0.0, high=1.0, runtime=True,
              offline="--points-min-confidence"),
    ParamSpec("publish_depth", True, "Publish depth/image, depth/camera_info, depth/colored "
              "and depth/confidence (DA3 files with a confidence output)."),
    ParamSpec("publish_normals", True, "Publish normals/image and normals/colored (if the "
              "model has normals)."),
    ParamSpec("publish_segmentation", True, "Publish segmentation/* (if the model segments)."),
    ParamSpec("publish_points", True, "Publish the points PointCloud2."),
    ParamSpec("points_rgb", True, "Add the camera colour to each point (rgb field).",
              runtime=True,
              offline="--points-rgb"),
    ParamSpec("points_stride", 2, "Use every n-th pixel in each direction for the cloud.",
              low=1, high=64, runtime=True,
              unit="px", offline="--points-stride"),
    ParamSpec("points_organized", False, "Keep the image grid in the cloud (NaN for invalid "
              "pixels) instead of dropping invalid points.", runtime=True,
              offline="--points-organized"),
    ParamSpec("points_voxel_size", 0.0, "Keep one point per cube of this edge (m), the one "
              "nearest the camera, so a cloud for a network link stays light and no obstacle "
              "is lost; 0 = off. The cloud is then unorganised (points_organized is ignored).",
              low=0.0, high=100.0, runtime=True,
              unit="m", offline="--points-voxel-size"),
    ParamSpec("input_rectified", False, "true: the image is rectified (image_rect), use "
              "CameraInfo P and ignore K and D; false: the image is raw (image_raw), rectified "
              "here first when D is not zero.", runtime=True,
              offline="--input-rectified"),
    ParamSpec("fallback_hfov_deg", 60.0, "Horizontal field of view for a guessed pinhole "
              "model when no usable CameraInfo arrives.", low=1.0, high=179.0, runtime=True,
              unit="deg", offline="--fallback-hfov"),
    ParamSpec("host_threads", 0, "Threads for the host work around inference (the depth "
              "view beside the cloud; the segmentation argmax and confidence split by class "
              "between at most two); 0 = auto: the cores this process may use, at most 4.",
              low=0, high=64,
              offline="--host-threads", affects_output=False),
    ParamSpec("diagnostics_period", 1.0, "Seconds between /diagnostics messages.",
              low=0.05, high=3600.0,
              unit="s"),
    ParamSpec("input_qos", "auto", "Camera subscription QoS: 'auto' matches the camera "
              "publisher's reliability (history depth 1) and re-checks when it appears; "
              "'sensor_data' (best effort, REP 2003) or 'reliable' force one.",
              choices=INPUT_QOS),
    ParamSpec("camera_info_qos", "auto", "camera_info subscription QoS: 'auto' is input_qos, "
              "but reliable transient-local (depth 1) when every camera_info publisher is "
              "transient-local (a driver that latches its CameraInfo once); 'transient_local', "
              "'sensor_data' or 'reliable' force one.", choices=CAMERA_INFO_QOS),
    ParamSpec("camera_info_slop", 0.05, "When no CameraInfo is stamped at or before an image, "
              "use the first one stamped at most this long (s) after it (drivers that stamp "
              "CameraInfo on another clock); until the first CameraInfo arrives, a frame waits "
              "at most this long for it (once).", low=0.0, high=10.0, runtime=True,
              unit="s", offline="--camera-info-slop"),
    ParamSpec("cameras", [""], "Several cameras, one model: camera names, e.g. [front, rear]. "
              "Each camera subscribes to <name>/image (or <name>/image/compressed) and "
              "<name>/camera_info and publishes every output under <name>/, stamped with its "
              "header; cameras take turns on the model. [] or [''] = one camera on image and "
              "camera_info."),
    ParamSpec("use_lifecycle", False, "Run as a managed (lifecycle) node: configure loads the "
              "model, activate starts publishing, deactivate stops inference, cleanup frees "
              "the model."),
    ParamSpec("input_compressed", False, "Subscribe to image/compressed (JPEG/PNG) instead "
              "of image."),
    ParamSpec("jpeg_quality", 80, "JPEG quality (1-100) of depth/colored/compressed, "
              "normals/colored/compressed and segmentation/colored/compressed.", low=1,
              high=100, runtime=True, offline="--jpeg-quality"),
    ParamSpec("png_level", 3, "zlib level (0-9) of the PNG in depth/image/compressedDepth and "
              "segmentation/labels/compressed: higher is smaller and slower.", low=0, high=9,
              runtime=True, offline="--png-level"),
    ParamSpec("compressed_depth_max", 10.0, "depth/image/compressedDepth: depth at or past "
              "this (m) is sent as invalid (compressed_depth_image_transport's depth_max).",
              low=1.0, high=100.0, runtime=True, unit="m", offline="--compressed-depth-max"),
    ParamSpec("compressed_depth_quantization", 100.0, "depth/image/compressedDepth (32FC1): "
              "the depth (m) at which one step of the 16-bit inverse depth is 1 m "
              "(compressed_depth_image_transport's depth_quantization); the error at depth z is "
              "at most z^2 / (q (q + 1) - z).", low=1.0, high=150.0, runtime=True,
              unit="m", offline="--compressed-depth-quantization"),
    ParamSpec("depth_encoding", "32FC1", "depth/image encoding: 32FC1 (metres, NaN invalid) "
              "or 16UC1 (millimetres, 0 invalid).", choices=DEPTH_ENCODINGS, runtime=True,
              offline="--depth-format"),
)

PARAMS_BY_NAME = {p.name: p for p in PARAMS}


def default_confidence(values: dict[str, Any]) -> bool:
    """Whether ``points_min_confidence`` is the table's default (not a user's request), so
    a model without confidence has nothing to filter rather than a request it cannot meet."""
    return values["points_min_confidence"] == PARAMS_BY_NAME["points_min_confidence"].default
