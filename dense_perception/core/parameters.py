"""The node's parameters: names, defaults, descriptions and allowed values (ROS-free data).

The node declares these with ParameterDescriptors; the launch test and the README use the same
table, so there is one list.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .fit import FIT_MODES, OUTPUT_RESOLUTIONS
from .models import MODEL_TYPES
from .cpu_precision import CPU_PRECISIONS
from .runner import BACKENDS

DEPTH_ENCODINGS = ("32FC1", "16UC1")


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

    def problem(self, value: Any) -> str | None:
        """Why ``value`` is not allowed, or None."""
        if self.choices and value not in self.choices:
            return f"{self.name} '{value}' is not allowed; use one of: {', '.join(self.choices)}"
        if self.low is not None and not value >= self.low:
            return f"{self.name} must be >= {self.low:g}, got {value}"
        if self.high is not None and not value <= self.high:
            return f"{self.name} must be <= {self.high:g}, got {value}"
        if self.name == "num_threads" and value == 0:
            return "num_threads must be >= 1, or -1 for all cores; got 0"
        return None


PARAMS: tuple[ParamSpec, ...] = (
    ParamSpec("model_path", "", "Path to the .tflite model (DA3-Small or TIPSv2-B14-DPT); "
              "relative paths are looked up in the package's models/ folder too."),
    ParamSpec("model_type", "auto", "Model kind; 'auto' detects it from the file's signature.",
              choices=MODEL_TYPES),
    ParamSpec("backend", "auto", "'gpu' (LiteRT CompiledModel), 'cpu' (XNNPACK) or 'auto' "
              "(GPU if it initialises, else CPU).", choices=BACKENDS),
    ParamSpec("num_threads", -1, "CPU threads for XNNPACK; -1 = all cores (4 on a Pi 5).",
              low=-1, high=256),
    ParamSpec("cpu_precision", "auto", "CPU arithmetic: 'fp16' where the CPU has native fp16 "
              "(ARMv8.2+, e.g. Pi 5), 'fp32', or 'auto' (fp16 if the CPU has it and the model "
              "passes an fp16-vs-fp32 check at load, else fp32; the log says which).",
              choices=CPU_PRECISIONS),
    ParamSpec("fit", "crop", "How frames meet the model's fixed input without padding: crop "
              "(centre crop, no distortion), stretch, or rotate (turn landscape frames for "
              "portrait models).", choices=FIT_MODES, runtime=True),
    ParamSpec("output_resolution", "model", "Publish on the model's grid ('model', cheaper) or "
              "at the camera's full size ('input').", choices=OUTPUT_RESOLUTIONS, runtime=True),
    ParamSpec("relative_depth_scale", 1.0, "Multiplier for relative (non-metric) depth, e.g. "
              "DA3. Metric models ignore it.", low=1e-9, high=1e9, runtime=True),
    ParamSpec("max_depth", 0.0, "Points farther than this (m) are dropped; 0 = no limit.",
              low=0.0, high=1e6, runtime=True),
    ParamSpec("publish_depth", True, "Publish depth/image, depth/camera_info, depth/colored."),
    ParamSpec("publish_normals", True, "Publish normals/image and normals/colored (if the "
              "model has normals)."),
    ParamSpec("publish_segmentation", True, "Publish segmentation/* (if the model segments)."),
    ParamSpec("publish_points", True, "Publish the points PointCloud2."),
    ParamSpec("points_rgb", True, "Add the camera colour to each point (rgb field).",
              runtime=True),
    ParamSpec("points_stride", 2, "Use every n-th pixel in each direction for the cloud.",
              low=1, high=64, runtime=True),
    ParamSpec("points_organized", False, "Keep the image grid in the cloud (NaN for invalid "
              "pixels) instead of dropping invalid points.", runtime=True),
    ParamSpec("fallback_hfov_deg", 60.0, "Horizontal field of view for a guessed pinhole "
              "model when no usable CameraInfo arrives.", low=1.0, high=179.0, runtime=True),
    ParamSpec("diagnostics_period", 1.0, "Seconds between /diagnostics messages.",
              low=0.05, high=3600.0),
    ParamSpec("input_compressed", False, "Subscribe to image/compressed (JPEG/PNG) instead "
              "of image."),
    ParamSpec("depth_encoding", "32FC1", "depth/image encoding: 32FC1 (metres, NaN invalid) "
              "or 16UC1 (millimetres, 0 invalid).", choices=DEPTH_ENCODINGS, runtime=True),
)

PARAMS_BY_NAME = {p.name: p for p in PARAMS}
