# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""``dense-perception process`` refuses a flag that would do nothing in this run (exit 2, one
line naming the flag and why), by the settings table's one relevance rule
(``core/wiring/relevance.py``, shared with the node) and, for the command's own bag options,
the input's kind. Only typed flags count: argparse gives None for one not typed.
"""

from __future__ import annotations

from typing import Iterable

from ...core.model.specs import ModelSpec
from ...core.wiring.relevance import INPUT_WORDS, Where, why_ignored
from ...core.settings.table import Settings
from ..console import CliError
from .process_options import BAG_ONLY, ProcessOptions
from .settings_args import OFFLINE


def run_where(spec: ModelSpec, kind: str, options: ProcessOptions) -> Where:
    """One input of ``kind`` (``run.session.input_kind``) with this model and these options."""
    return Where(spec.kind, spec.metric_depth, kind,
                 camera_info_file=options.camera_info_yaml is not None,
                 compressed=kind == "bag" and options.compressed != "off",
                 sequence=bool(options.poses),  # photos with a trajectory
                 motion=bool(options.odometry_topic if kind == "bag" else options.poses))


def check_bag_options(options: ProcessOptions, kinds: Iterable[str]) -> None:
    """CliError for a typed bag option when no input is a bag."""
    kinds = sorted(set(kinds))
    if "bag" in kinds:
        return
    for name, flag in BAG_ONLY.items():
        if name in options.given:
            raise CliError(f"{flag} has no effect on {INPUT_WORDS.get(kinds[0], kinds[0])} "
                           "(it is read for a bag input only); leave it out")


def check_flags(settings: Settings, given: list[str], spec: ModelSpec,
                options: ProcessOptions, kinds: Iterable[str]) -> None:
    """CliError for the first typed setting flag that does nothing for this model on every one
    of the inputs' ``kinds``."""
    wheres = [run_where(spec, kind, options) for kind in sorted(set(kinds))]
    for name in given:
        whys = [why_ignored(name, settings, where, OFFLINE) for where in wheres]
        if all(whys):
            raise CliError(f"{whys[0]}; leave it out")
