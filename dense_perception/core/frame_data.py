# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""What travels through the pipeline: which products a frame asks for, the pipeline's settings,
one frame's outputs after inference, and its finished products."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from .confidence import QUANTILE
from .geometry.camera_model import CameraModel
from .geometry.fit import FitPlan
from .geometry.intrinsics import Intrinsics
from .preprocess import PixelFormat
from .product_table import PRODUCTS, added_products
from .scale.metric_scale import ScaleReport


@dataclass(frozen=True)
class Request:
    """Which products to compute (unrequested ones cost nothing): a field per built-in product
    of the products table (:mod:`.product_table`), and ``extra``, the keys of the rows added
    with a compute step of their own."""

    depth: bool = True
    depth_colored: bool = False
    normals: bool = False
    normals_colored: bool = False
    labels: bool = False
    labels_colored: bool = False
    points: bool = False
    points_rgb: bool = False
    labels_confidence: bool = False
    depth_confidence: bool = False  # DA3 files with a confidence output
    extra: frozenset[str] = frozenset()  # added rows (product_table.register) to compute

    @classmethod
    def everything(cls) -> "Request":
        return cls(**{f.name: True for f in fields(cls) if f.name != "extra"},
                   extra=frozenset(p.key for p in added_products()))


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
    labels_confidence: np.ndarray | None = None  # H x W mono8: top class probability x 255
    points: np.ndarray | None = None          # structured x, y, z[, rgb]
    depth_confidence: np.ndarray | None = None  # H x W float32, DA3's own values, NaN unseen
    intrinsics: Intrinsics | None = None      # for the published grid
    intrinsics_guessed: bool = False
    intrinsics_note: str = ""                 # why the intrinsics are a guess
    scale: ScaleReport | None = None          # what the depth's unit is (metres or relative)
    withheld: str = ""                        # why depth or points were not made (not metres)
    camera_note: str = ""                     # what of the CameraInfo could not be honoured
    rectified: bool = False                   # the raw frame was rectified before the model
    motion: Any = None                        # core.motion MotionReport (a pose was handed in)
    extra: dict[str, Any] = field(default_factory=dict)  # added rows' products, by key

    @property
    def depth_metric(self) -> bool:
        """True when ``depth`` (and ``points``) are metres."""
        return self.scale is not None and self.scale.metric

    def get(self, key: str) -> Any:
        """Product ``key`` of the products table: its field, or an added row's product (None
        when this frame has none)."""
        return self.extra.get(key) if PRODUCTS[key].compute is not None else getattr(self, key)

    def computed(self) -> tuple[str, ...]:
        """The image and cloud products this frame computed (what it cost, not what was
        published: depth may be computed for the cloud alone): the table's per-frame rows."""
        return tuple(key for key, row in PRODUCTS.items()
                     if row.computed and self.get(key) is not None)


@dataclass
class RawFrame:
    """One frame after inference, before un-fitting: products on the model's own grids."""

    frame: np.ndarray          # the camera frame (for point colours at input resolution)
    fmt: PixelFormat
    plan: FitPlan
    fitted: np.ndarray         # the frame as the model saw it
    request: Request
    camera: CameraModel | None = None  # the camera given to infer
    rectified: bool = False            # ``fitted`` is the rectified frame
    valid: np.ndarray | None = None    # model grid: 0 where the rectified view left the frame
    depth: np.ndarray | None = None    # model grid, float32, scaled, NaN invalid
    normals: np.ndarray | None = None  # model grid, H x W x 3 unit vectors (model's frame)
    labels: np.ndarray | None = None   # segmentation grid (256 x 256), uint8
    labels_probability: np.ndarray | None = None  # segmentation grid, float32 top-class softmax
    confidence: np.ndarray | None = None  # model grid: DA3's depth confidence (its own values)
    point_confidence: np.ndarray | None = None  # its own grid: what points_min_confidence reads
    confidence_meaning: str = QUANTILE    # how points_min_confidence reads it (core.confidence)


@dataclass(frozen=True)
class PipelineConfig:
    """Tunable behaviour of the pipeline: the settings of the same names (checked in the
    settings table; ``core/wiring/derived.py`` builds it)."""

    fit: str = "crop"
    output_resolution: str = "model"
    relative_depth_scale: float = 1.0
    max_depth: float = 0.0  # 0 = no limit
    points_min_confidence: float = 0.1  # 0 = keep all; see core.confidence
    points_stride: int = 2  # defaults: the table's (test_settings checks)
    points_organized: bool = False
    fallback_hfov_deg: float = 60.0
    depth_scale_source: str = "none"  # relative models: none, fixed, ground_plane, reference_depth
    input_rectified: bool = False  # images are image_rect (use P), not image_raw (K and D)
    host_threads: int = 0  # threads for the host work around inference; 0 = auto (host_threads)
    points_voxel_size: float = 0.0  # m; one point (the nearest) per cube; 0 = off
    # (name, value) of each setting an added product's compute step reads (Product.settings)
    product_settings: tuple[tuple[str, Any], ...] = ()
