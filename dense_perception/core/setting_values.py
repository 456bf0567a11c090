# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The allowed values of the choice settings, the limits of a few ranges and their checks, and
the GPU worker's default limits.

The settings table (:mod:`.settings.table`) shows them and the parts that act on them (fit, metric
scale, depth model, backends, products, the point cloud) check against them. They live here,
below both, so that the table imports no backend and no OpenCV (``make docs`` runs without
either). This module imports nothing of the package.
"""

from __future__ import annotations

from typing import Any

# Fitting the camera frame to the model's input (geometry/fit.py) and the outputs' grid.
FIT_MODES = ("crop", "stretch", "rotate")
OUTPUT_RESOLUTIONS = ("model", "input")

# Where relative depth's metres come from (scale/metric_scale.py).
SCALE_SOURCES = ("none", "fixed", "ground_plane", "reference_depth", "motion")
# depth_scale_check: a second source beside motion or reference_depth (core/scale/cross_check.py)
SCALE_CHECKS = ("none", "ground_plane")

# How a ``model_type: depth`` file reads its input and output (model/depth_network.py).
NORMALIZATIONS = ("unit", "imagenet", "custom")
DEPTH_OUTPUT_KINDS = ("depth", "inverse_depth")
DEPTH_OUTPUT_UNITS = ("relative", "metres")  # a depth network's output: scale-free or metric

# Inference backends (backends/): npu is LiteRT's vendor plugins (backends/npu_runner.py).
BACKENDS = ("auto", "gpu", "cpu", "npu")
GPU_PRECISIONS = ("fp16", "fp32")  # GPU arithmetic; fp32 = GpuOptions(enforce_f32=True)
CPU_PRECISIONS = ("auto", "fp32", "fp16")  # XNNPACK arithmetic (backends/cpu_precision.py)
NPU_VENDORS = ("auto", "intel_openvino", "qualcomm")
OPENVINO_DEVICES = ("NPU", "GPU", "CPU")
GPU_TIMEOUT_S = 30.0  # gpu_timeout: real models take milliseconds to tenths of a second
GPU_MAX_RESTARTS = 3  # gpu_max_restarts: restarts in a row before the GPU counts as lost

# The depth image's encodings (products.py): metres as float, or millimetres as uint16.
DEPTH_ENCODINGS = ("32FC1", "16UC1")

# The smallest voxel edge of the point cloud (m, geometry/pointcloud.py): finer than a
# millimetre thins nothing a depth network can tell apart, and an edge that underflows float32
# (1e-300) would put every point in one cube.
MIN_VOXEL_SIZE = 0.001


def voxel_size_problem(value: float, syntax: Any) -> str | None:
    """Why ``value`` is not a voxel edge (0 = off, else at least :data:`MIN_VOXEL_SIZE`)."""
    if 0 < value < MIN_VOXEL_SIZE:
        return (f"{syntax.name('points_voxel_size')} must be 0 (off) or >= {MIN_VOXEL_SIZE:g} m, "
                f"got {value:g}")
    return None
