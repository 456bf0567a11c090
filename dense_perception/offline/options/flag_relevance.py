# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""``dense-perception process`` refuses a setting flag that would do nothing in this run (exit
2, one line naming the flag and why), by the settings table's one relevance rule
(``core/wiring/relevance.py``, shared with the node); the run's plan checks it
(``run/run_plan.py``, which also checks the command's own bag options against the inputs'
kinds). Only typed flags count: argparse gives None for one not typed.
"""

from __future__ import annotations

from typing import Iterable

from ...core.model.specs import ModelSpec
from ...core.wiring.relevance import Where, why_ignored
from ...core.settings.table import Settings
from ..console import CliError
from .process_options import ProcessOptions
from .settings_args import OFFLINE


def run_where(spec: ModelSpec, kind: str, options: ProcessOptions) -> Where:
    """One input of ``kind`` (``run.session.input_kind``) with this model and these options."""
    return Where(spec.kind, spec.metric_depth, kind,
                 camera_info_file=options.camera_info_yaml is not None,
                 compressed=kind == "bag" and options.compressed != "off",
                 sequence=bool(options.poses),  # photos with a trajectory
                 motion=bool(options.odometry_topic if kind == "bag" else options.poses))


def check_flags(settings: Settings, given: list[str], spec: ModelSpec,
                options: ProcessOptions, kinds: Iterable[str]) -> None:
    """CliError for the first typed setting flag that does nothing for this model on every one
    of the inputs' ``kinds``."""
    wheres = [run_where(spec, kind, options) for kind in sorted(set(kinds))]
    for name in given:
        whys = [why_ignored(name, settings, where, OFFLINE) for where in wheres]
        if all(whys):
            raise CliError(f"{whys[0]}; leave it out")
