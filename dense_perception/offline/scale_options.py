"""The offline command's metric-scale options (DA3): arguments, checks, scaler, reference topic.

Kept apart from cli.py so the command only hooks them in; the estimation itself is
:mod:`dense_perception.core.metric_scale`, the same code the node runs.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..core.metric_scale import (ESTIMATED_SOURCES, SCALE_SOURCES, DepthScaler, ScaleConfig,
                                 relative_output_problem)
from ..core.models import ModelSpec
from ..core.parameters import PARAMS_BY_NAME


class ScaleOptionError(ValueError):
    """The scale options cannot work together; the message says what to set."""


def _default(name: str) -> Any:
    return PARAMS_BY_NAME[name].default


def add_scale_arguments(p: argparse.ArgumentParser) -> None:
    """--depth-scale-source and the options it uses (the node's parameters of the same names)."""
    g = p.add_argument_group("metric scale of relative depth (DA3)")
    g.add_argument("--depth-scale-source", choices=SCALE_SOURCES,
                   default=_default("depth_scale_source"),
                   help="none: depth stays relative (unitless .npy / 32FC1, no points, no png16 "
                   "or --max-depth); fixed: --relative-depth-scale is metres per unit; "
                   "ground_plane: from --camera-height; reference_depth: from "
                   "--reference-depth-topic (bags)")
    g.add_argument("--camera-height", type=float, default=_default("camera_height"),
                   help="metres from the camera's optical centre down to the floor "
                   "(ground_plane)")
    g.add_argument("--reference-depth-topic", help="bag topic of a metric depth image "
                   "registered to the camera (16UC1 mm or 32FC1 m; reference_depth)")
    g.add_argument("--depth-scale-time-constant", type=float,
                   default=_default("depth_scale_time_constant"),
                   help="seconds (by frame stamps) of the scale filter (videos, bags)")
    g.add_argument("--depth-scale-max-age", type=float,
                   default=_default("depth_scale_max_age"),
                   help="seconds (by frame stamps) the last scale is held when frames give "
                   "none; older, depth and points are withheld again; 0 = hold forever "
                   "(videos, bags; images get each their own scale)")
    g.add_argument("--ground-max-tilt", type=float, default=_default("ground_max_tilt_deg"),
                   help="degrees between the floor's normal and the image's down axis")
    g.add_argument("--reference-depth-slop", type=float,
                   default=_default("reference_depth_slop"),
                   help="largest stamp difference (s) between an image and its reference")


def scaler_for(args: argparse.Namespace, spec: ModelSpec, kind: str) -> DepthScaler | None:
    """The scaler these options ask for (None: no per-frame estimate); ScaleOptionError when
    they would write relative depth as metres or cannot find a scale.

    A video or a bag is one camera's stream: its frames share a filtered scale. An image or a
    folder of images is unrelated photos (``kind`` image / images): each gets its own estimate,
    with no filter and no hold (a photo without one is withheld).
    """
    depth_format = "16UC1" if args.depth_format == "png16" else "32FC1"
    problem = relative_output_problem(spec.metric_depth, args.depth_scale_source,
                                      args.max_depth, depth_format)
    if problem:
        problem = (problem.replace("depth_encoding 16UC1", "--depth-format png16")
                   .replace("use 32FC1", "use --depth-format npy")
                   .replace("max_depth", "--max-depth")
                   .replace("depth_scale_source", "--depth-scale-source"))
        raise ScaleOptionError(problem)
    if spec.metric_depth or args.depth_scale_source not in ESTIMATED_SOURCES:
        return None
    if args.depth_scale_source == "reference_depth" and (kind != "bag"
                                                         or not args.reference_depth_topic):
        raise ScaleOptionError("--depth-scale-source reference_depth needs a bag input and "
                               "--reference-depth-topic (its metric depth image topic)")
    config = ScaleConfig(source=args.depth_scale_source, fixed_scale=args.relative_depth_scale,
                         camera_height=args.camera_height,
                         time_constant=args.depth_scale_time_constant,
                         max_age=args.depth_scale_max_age, max_tilt_deg=args.ground_max_tilt,
                         per_frame=kind in ("image", "images"))
    problem = config.problem()
    if problem:
        raise ScaleOptionError(problem.replace("camera_height", "--camera-height")
                               .replace("-p --camera-height:=", "--camera-height ")
                               .replace("depth_scale_time_constant",
                                        "--depth-scale-time-constant")
                               .replace("depth_scale_max_age", "--depth-scale-max-age"))
    return DepthScaler(config)


def reference_stream(args: argparse.Namespace, bag_path: Path, scaler: DepthScaler | None
                     ) -> Any:
    """The bag's reference depth reader when the scaler needs one, else None."""
    if scaler is None or scaler.config.source != "reference_depth":
        return None
    from .reference_depth import ReferenceDepthStream
    return ReferenceDepthStream(bag_path, args.reference_depth_topic, args.reference_depth_slop)
