# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The offline command's metric-scale options (DA3): the reference topic's flag, and the scale
configuration of each input.

Kept apart from cli.py so the command only hooks them in. The scale settings are checked once
per run (:func:`~dense_perception.core.wiring.derived.depth_units_problem`, by
:func:`~dense_perception.offline.run.run_plan.make_plan`); here each input gets its
configuration from the run's :class:`ScaleConfig` (its cameras' tracks each make a scaler of
it). The estimation itself is :mod:`dense_perception.core.scale.metric_scale`, the same code
the node runs.
"""

from __future__ import annotations

import argparse
from dataclasses import replace

from ...core.scale.metric_scale import ScaleConfig


class ScaleOptionError(ValueError):
    """The scale options cannot work together; the message says what to set."""


def add_scale_arguments(p: argparse.ArgumentParser) -> argparse._ArgumentGroup:
    """The metric-scale group with --reference-depth-topic (offline only); the settings of the
    table join it (``settings_args.add_setting_arguments``)."""
    g = p.add_argument_group("metric scale of relative depth (DA3, --model-type depth)")
    g.add_argument("--reference-depth-topic", help="bag topic of a metric depth image "
                   "registered to the camera (16UC1 mm or 32FC1 m; reference_depth)")
    g.add_argument("--poses", metavar="FILE", help="the camera's trajectory for a folder of "
                   "images or a video (TUM: 't tx ty tz qx qy qz qw' a line, camera-to-world "
                   "of the optical frame; one line per frame in order, or a video's frames "
                   "matched by stamp): temporal alignment and --depth-scale-source motion")
    return g


def scale_for(config: ScaleConfig | None, kind: str, reference_topic: str | None,
              sequence: bool = False) -> ScaleConfig | None:
    """The scale configuration of one input of ``kind`` (``run.session.input_kind``) from the
    run's scale settings (``config``; None: the scale is not estimated); ScaleOptionError
    when this input cannot give the scale they ask for.

    A video or a bag is one camera's stream: its frames share a filtered scale. An image or a
    folder of images is unrelated photos (``kind`` image / images): each gets its own estimate,
    with no filter and no hold (a photo without one is withheld), unless ``sequence`` (they
    have poses: one camera's stream).
    """
    if config is None:
        return None
    if config.source == "reference_depth" and (kind != "bag" or not reference_topic):
        raise ScaleOptionError("--depth-scale-source reference_depth needs a bag input and "
                               "--reference-depth-topic (its metric depth image topic)")
    if config.source == "motion" and kind != "bag" and not sequence:
        raise ScaleOptionError("--depth-scale-source motion needs the camera's motion: "
                               "--poses FILE (TUM, camera-to-world of the optical frame)")
    return replace(config, per_frame=kind in ("image", "images") and not sequence)

