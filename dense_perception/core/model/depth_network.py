# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Any single-image depth network (``model_type: depth``): its spec, from the file and settings.

DA3 and TIPSv2 are known by their signatures (:mod:`.specs`). Other monocular depth networks
(PyD-Net++, MiDaS, Depth Anything V2 exports, ...) do not say in their files how their input is
normalised or which output is depth, so the settings declare it (``input_normalization``,
``input_mean``, ``input_std``, ``depth_output``, ``depth_output_kind``) and the file gives the
rest: the input's layout (NHWC or NCHW) and size, and the outputs' shapes. Such a model is
relative depth, like DA3: everything after inference (scale sources, clouds, diagnostics) is
DA3's path. ``auto`` never picks it: a file that is no DA3 or TIPSv2 is refused with a hint.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from .specs import DEPTH_TYPE, ModelSignatureError, ModelSpec, OutputSpec, format_signature
from ..setting_names import NODE, Syntax

Shape = tuple[int, ...]

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
UNUSED = "unused"  # the kind of a depth model's other outputs


@dataclass(frozen=True)
class DepthOptions:
    """How to read a depth model (the settings of the same names, checked in the settings
    table; ``core/wiring/derived.py`` builds it)."""

    input_normalization: str = "unit"
    input_mean: tuple[float, ...] = (0.0, 0.0, 0.0)  # custom: in units of RGB/255
    input_std: tuple[float, ...] = (1.0, 1.0, 1.0)
    depth_output: int = -1  # -1: the first output at the input's resolution
    depth_output_kind: str = "depth"
    depth_output_unit: str = "relative"  # or "metres": a metric network

    def mean_std(self) -> tuple[tuple[float, float, float], tuple[float, float, float]]:
        """(mean, std) in units of RGB/255, per the normalisation."""
        if self.input_normalization == "imagenet":
            return IMAGENET_MEAN, IMAGENET_STD
        if self.input_normalization == "custom":
            return tuple(self.input_mean), tuple(self.input_std)  # type: ignore[return-value]
        return (0.0, 0.0, 0.0), (1.0, 1.0, 1.0)


def mean_std_problem(mean: Sequence[float], std: Sequence[float],
                     syntax: Syntax = NODE) -> str | None:
    """Why ``input_mean`` / ``input_std`` are not three finite numbers (std > 0), or None."""
    for name, values in (("input_mean", mean), ("input_std", std)):
        if len(values) != 3 or not all(math.isfinite(v) for v in values):
            return f"{syntax.name(name)} needs 3 finite numbers (R, G, B), got {list(values)}"
    if not all(v > 0 for v in std):
        return f"{syntax.name('input_std')} must be > 0 for each channel, got {list(std)}"
    return None


def input_layout(shape: Sequence[int]) -> str | None:
    """'NHWC' for [1,H,W,3], 'NCHW' for [1,3,H,W], None for anything else."""
    if len(shape) != 4 or shape[0] != 1:
        return None
    if shape[3] == 3 and shape[1] != 3:
        return "NHWC"
    if shape[1] == 3 and shape[3] != 3:
        return "NCHW"
    return None


def depth_plane(shape: Sequence[int]) -> tuple[int, int] | None:
    """(H, W) of a one-plane output: [1,1,H,W], [1,H,W,1], [1,H,W] or [H,W]; else None."""
    shape = tuple(shape)
    if len(shape) == 4 and shape[0] == 1 and (shape[1] == 1) != (shape[3] == 1):
        return (shape[2], shape[3]) if shape[1] == 1 else (shape[1], shape[2])
    if len(shape) == 3 and shape[0] == 1:
        return shape[1], shape[2]
    if len(shape) == 2:
        return shape[0], shape[1]
    return None


def same_aspect(plane: tuple[int, int], size: tuple[int, int]) -> bool:
    """Whether an h x w plane (more than one pixel each way) is the H x W input scaled by one
    factor, up to rounding each side to whole pixels (|h W - w H| < H + W: each side within
    one pixel of H s, W s)."""
    (h, w), (big_h, big_w) = plane, size
    return h > 1 and w > 1 and abs(h * big_w - w * big_h) < big_h + big_w


def _input_size(shape: Sequence[int], layout: str) -> tuple[int, int]:
    return (shape[1], shape[2]) if layout == "NHWC" else (shape[2], shape[3])


def depth_suggestion(input_shapes: Sequence[Shape], output_shapes: Sequence[Shape]) -> str:
    """A hint for a file that matched no known model: model_type depth when it looks like a
    single-image depth network (one image input, an output plane at its size), else ''."""
    if len(input_shapes) != 1 or input_layout(input_shapes[0]) is None:
        return ""
    size = _input_size(input_shapes[0], input_layout(input_shapes[0]))
    if not any(depth_plane(s) == size for s in output_shapes):
        return ""
    return ("; it looks like a single-image depth network: set model_type to 'depth' "
            "(--model-type depth) and declare its input_normalization and depth_output_kind")


def depth_model_spec(input_shapes: Sequence[Shape], output_shapes: Sequence[Shape],
                     options: DepthOptions, source: str = "the model file",
                     output_names: Sequence[str] = ()) -> ModelSpec:
    """The spec of a single-image depth network read per ``options``.

    Raises ModelSignatureError (one line, naming what the file has) when the file has no
    image input or no usable depth output.
    """
    signature = format_signature(input_shapes, output_shapes)
    layout = input_layout(input_shapes[0]) if len(input_shapes) == 1 else None
    if layout is None:
        raise ModelSignatureError(
            f"{source} has {signature}: model_type 'depth' needs one RGB image input, "
            "[1,H,W,3] (NHWC) or [1,3,H,W] (NCHW)")
    height, width = _input_size(input_shapes[0], layout)
    index = options.depth_output
    if index == -1:
        index = next((i for i, s in enumerate(output_shapes) if depth_plane(s) == (height, width)),
                     -1)
        if index == -1:
            raise ModelSignatureError(
                f"{source} has {signature}: no output is one plane at the input's {width}x"
                f"{height} ([1,{height},{width},1], [1,1,{height},{width}] or [1,{height},"
                f"{width}]); name the depth output with depth_output")
    elif index >= len(output_shapes):
        raise ModelSignatureError(
            f"{source} has {signature}: depth_output {index} is past its "
            f"{len(output_shapes)} output(s) (counted from 0)")
    elif depth_plane(output_shapes[index]) is None:
        raise ModelSignatureError(
            f"{source} has {signature}: output {index} is not one plane ([1,H,W,1], [1,1,H,W], "
            "[1,H,W] or [H,W]); choose another depth_output")
    elif not same_aspect(depth_plane(output_shapes[index]), (height, width)):
        out_h, out_w = depth_plane(output_shapes[index])
        raise ModelSignatureError(
            f"{source} has {signature}: output {index} is {out_w}x{out_h}, not the input's "
            f"{width}x{height} aspect, so it would be stretched onto the image; choose the "
            "depth output at the input's aspect with depth_output")
    inverse = options.depth_output_kind == "inverse_depth"
    names = list(output_names) if len(output_names) == len(output_shapes) else \
        [f"output_{i}" for i in range(len(output_shapes))]
    metric = options.depth_output_unit == "metres"
    unit = "metres" if metric else "relative depth"
    meaning = (f"inverse depth (1/x is {unit})" if inverse else
               f"{unit} (larger = farther)") + ("" if metric else
                                                ", scaled by relative_depth_scale")
    outputs = tuple(OutputSpec(names[i], "depth" if i == index else UNUSED, tuple(shape),
                               meaning if i == index else "not used")
                    for i, shape in enumerate(output_shapes))
    mean, std = options.mean_std()
    return ModelSpec(
        kind=DEPTH_TYPE, display_name="depth model", file_name="", input_shape=tuple(
            input_shapes[0]), scale=255.0, mean=mean, std=std, outputs=outputs,
        metric_depth=metric, layout=layout, inverse_depth=inverse,
        source=f"a single-image depth network ({layout}, input {options.input_normalization}, "
               f"output {index}: {options.depth_output_kind} in {options.depth_output_unit})")
