"""From setting values to the pipeline's and the scale's configuration: one function each, used
by the node (its parameter values) and by ``dense-perception process`` (its flags' values), so
the two front ends cannot map a setting differently.

``values`` is ``{setting name: value}`` with the names of the settings table
(:data:`.parameters.PARAMS`).
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any, Callable

from .compressed import CompressionConfig
from .depth_model import DepthOptions
from .scale.metric_scale import ScaleConfig
from .parameters import PARAMS_BY_NAME
from .frame_data import PipelineConfig
from .pipeline import DensePipeline, load_pipeline

# The PipelineConfig / ScaleConfig field each setting fills (a field of the same name unless
# listed here); test_settings checks that every field has a setting.
SCALE_FIELDS = {"source": "depth_scale_source", "fixed_scale": "relative_depth_scale",
                "camera_height": "camera_height", "time_constant": "depth_scale_time_constant",
                "max_age": "depth_scale_max_age", "max_tilt_deg": "ground_max_tilt_deg",
                "min_inlier_ratio": "depth_scale_min_inliers"}


def defaults() -> dict[str, Any]:
    """Every setting at its default."""
    return {name: spec.default for name, spec in PARAMS_BY_NAME.items()}


def pipeline_config(values: dict[str, Any], **overrides: Any) -> PipelineConfig:
    """The pipeline settings among ``values`` (``overrides``: fields set by the caller itself,
    e.g. one host thread for a one-CPU fleet worker)."""
    chosen = {f.name: values[f.name] for f in fields(PipelineConfig)}
    return PipelineConfig(**{**chosen, **overrides})


def compression_config(values: dict[str, Any]) -> CompressionConfig:
    """The compressed topics' encoder settings among ``values``."""
    return CompressionConfig(depth_max=values["compressed_depth_max"],
                             depth_quantization=values["compressed_depth_quantization"],
                             png_level=values["png_level"], jpeg_quality=values["jpeg_quality"])


def scale_config(values: dict[str, Any], per_frame: bool = False) -> ScaleConfig:
    """The metric-scale settings (DA3) among ``values``; ``per_frame``: unrelated photos, each
    scaled on its own (offline image inputs)."""
    return ScaleConfig(**{f: values[name] for f, name in SCALE_FIELDS.items()},
                       per_frame=per_frame)


def depth_options(values: dict[str, Any]) -> DepthOptions:
    """How to read a ``model_type`` 'depth' file, from ``values``."""
    return DepthOptions.from_values(values)


def npu_options(values: dict[str, Any]) -> dict[str, Any]:
    """The NPU keyword arguments of ``open_runner`` (``npu_options``) among ``values``."""
    return {"vendor": values["npu_vendor"], "device": values["openvino_device"],
            "cache_dir": values["npu_cache_dir"], "library_dir": values["npu_library_dir"]}


def pipeline_for(model_path: str, values: dict[str, Any], config: PipelineConfig | None = None,
                 log: Callable[[str], None] = print,
                 warn: Callable[[str], None] | None = None) -> DensePipeline:
    """The loaded pipeline that ``values`` describe (model kind, backend, threads, precisions,
    GPU and NPU options, depth model options): the one call of both front ends. ``config``:
    the pipeline settings with a front end's own overrides (default: from ``values``)."""
    return load_pipeline(model_path, values["model_type"], values["backend"],
                         values["num_threads"], config or pipeline_config(values), log=log,
                         warn=warn, gpu_precision=values["gpu_precision"],
                         cpu_precision=values["cpu_precision"],
                         gpu_timeout=values["gpu_timeout"],
                         gpu_max_restarts=values["gpu_max_restarts"],
                         npu_options=npu_options(values), depth=depth_options(values))
