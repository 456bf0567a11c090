"""The offline command's metric-scale options (DA3): arguments, checks, scaler, reference topic.

Kept apart from cli.py so the command only hooks them in; the estimation itself is
:mod:`dense_perception.core.scale.metric_scale`, the same code the node runs.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..core.scale.metric_scale import DepthScaler, relative_output_problem, scale_is_estimated
from ..core.models import ModelSpec
from ..core.settings import scale_config
from .settings_args import OFFLINE, setting_values


class ScaleOptionError(ValueError):
    """The scale options cannot work together; the message says what to set."""


def add_scale_arguments(p: argparse.ArgumentParser) -> argparse._ArgumentGroup:
    """The metric-scale group with --reference-depth-topic (offline only); the settings of the
    table join it (``settings_args.add_setting_arguments``)."""
    g = p.add_argument_group("metric scale of relative depth (DA3, --model-type depth)")
    g.add_argument("--reference-depth-topic", help="bag topic of a metric depth image "
                   "registered to the camera (16UC1 mm or 32FC1 m; reference_depth)")
    return g


def scaler_for(args: argparse.Namespace, spec: ModelSpec, kind: str) -> DepthScaler | None:
    """The scaler these options ask for (None: no per-frame estimate); ScaleOptionError when
    they would write relative depth as metres or cannot find a scale.

    A video or a bag is one camera's stream: its frames share a filtered scale. An image or a
    folder of images is unrelated photos (``kind`` image / images): each gets its own estimate,
    with no filter and no hold (a photo without one is withheld).
    """
    values = setting_values(args)
    problem = relative_output_problem(spec.metric_depth, values["depth_scale_source"],
                                      values["max_depth"], values["depth_encoding"], OFFLINE)
    if problem:
        raise ScaleOptionError(problem)
    if not scale_is_estimated(spec.metric_depth, values["depth_scale_source"]):
        return None
    if values["depth_scale_source"] == "reference_depth" and (kind != "bag"
                                                              or not args.reference_depth_topic):
        raise ScaleOptionError("--depth-scale-source reference_depth needs a bag input and "
                               "--reference-depth-topic (its metric depth image topic)")
    config = scale_config(values, per_frame=kind in ("image", "images"))
    problem = config.problem(OFFLINE)
    if problem:
        raise ScaleOptionError(problem)
    return DepthScaler(config)


def reference_stream(args: argparse.Namespace, bag_path: Path, scaler: DepthScaler | None
                     ) -> Any:
    """The bag's reference depth reader when the scaler needs one, else None."""
    if scaler is None or scaler.config.source != "reference_depth":
        return None
    from .reference_depth import ReferenceDepthStream
    return ReferenceDepthStream(bag_path, args.reference_depth_topic, args.reference_depth_slop)
