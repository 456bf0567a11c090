# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""One run of ``dense-perception process`` planned once: :func:`make_plan` turns the run's
settings and options into a :class:`RunPlan` (the model file and its kind, each part's
configuration, the trajectory, the calibration file, the outputs), checking against the model
what the settings and options cannot check alone, before any input is opened. The command line
stops at the options; the single run and every fleet worker (a Ray actor gets the plan, not
the options) take the same plan, and the inputs read it (``inputs.sources.Session``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Iterable, Sequence

from ...core.backends.runner import check_model_file, resolve_model_path
from ...core.camera_track import TrackSetup
from ...core.compressed import CompressionConfig
from ...core.frame_data import Request
from ...core.model.detection import detect_model_spec
from ...core.model.specs import ModelSpec
from ...core.motion.camera_motion import MotionConfig
from ...core.motion.trajectory import Trajectory
from ...core.products import OUTPUT_GROUPS, available_groups, request_for
from ...core.scale.metric_scale import ScaleConfig
from ...core.settings.table import Settings
from ...core.wiring.relevance import INPUT_WORDS
from ...core.wiring.derived import (compression_config, depth_options, depth_units_problem,
                                    estimates_scale, motion_config, scale_config)
from ..console import CliError
from ..inputs.camera_yaml import load_camera_info_yaml
from ..inputs.poses import load_poses
from ..options.flag_relevance import check_flags
from ..options.process_options import BAG_ONLY, ProcessOptions
from ..options.scale_options import ScaleOptionError, scale_for
from ..options.settings_args import DEPTH_FORMATS, OFFLINE

GROUP_ALIASES = {"segmentation": "seg", "labels": "seg", "point": "points", "cloud": "points"}


@dataclass(frozen=True)
class RunPlan:
    """What one run derives from its settings and options, made and checked once."""

    settings: Settings
    options: ProcessOptions
    model_path: str                     # resolved: the file the model loads from
    spec: ModelSpec                     # the model's kind, detected from the file
    scale: ScaleConfig | None           # None: the metric scale is not estimated
    motion: MotionConfig                # temporal alignment and the motion scale
    compression: CompressionConfig
    trajectory: Trajectory | None       # --poses
    camera_info: Any                    # --camera-info-yaml: a CameraInfo, or None
    groups: tuple[str, ...]             # --outputs groups
    keys: tuple[str, ...]               # the products they make
    request: Request
    depth_format: str                   # npy or png16 depth files

    def track(self, kind: str) -> TrackSetup:
        """The setup of the camera track of one input of ``kind`` (``session.input_kind``):
        its scale (unrelated photos: each its own) and, where the input has the camera's
        motion (--poses, a bag's --odometry-topic), its motion."""
        posed = self.trajectory is not None or (kind == "bag"
                                                 and bool(self.options.odometry_topic))
        return TrackSetup(scale_for(self.scale, kind, self.options.reference_depth_topic,
                                    self.trajectory is not None),
                          self.motion if posed else None)

    def with_threads(self, threads: int) -> RunPlan:
        """The same plan for a worker granted ``threads`` CPUs (LiteRT's threads)."""
        return replace(self, settings=self.settings.changed({"num_threads": threads}))


def make_plan(settings: Settings, options: ProcessOptions, kinds: Sequence[str] = (),
              given: Sequence[str] = ()) -> RunPlan:
    """The run's plan, checked against the kinds of its inputs (``kinds``, in input order:
    ``session.input_kind``; without them, the checks that need them are left out). Fails (one
    line) before any input is opened on a typed bag option that no input reads, a missing or
    unsupported model, metric-scale settings that cannot work (for inputs of the first
    input's kind), a bad trajectory or calibration file, --outputs the model cannot give, or
    a typed setting flag (``given``) that does nothing for this model on every one of the
    inputs (``options.flag_relevance.check_flags``)."""
    check_bag_options(options, kinds)
    model_path = resolve_model_path(settings.model_path)
    signature = check_model_file(model_path)
    spec = detect_model_spec(
        signature.input_shapes, signature.output_shapes, settings.model_type,
        source=f"model file '{model_path}'", output_names=signature.output_names,
        depth=depth_options(settings), file=signature)
    kind = kinds[0] if kinds else None  # many inputs: one of another kind fails alone
    problem = depth_units_problem(settings, spec.metric_depth, OFFLINE)
    if problem:
        raise ScaleOptionError(problem)
    motion, compression = motion_config(settings), compression_config(settings)
    scale = scale_config(settings) if estimates_scale(settings, spec.metric_depth) else None
    trajectory = load_poses(options.poses)  # --poses: a bad file fails here
    if kind is not None:  # checks the input kind
        scale_for(scale, kind, options.reference_depth_topic, trajectory is not None)
    # The calibration file (images, videos), read once: a bad one fails before any input.
    camera_info = load_camera_info_yaml(options.camera_info_yaml, settings.input_rectified) \
        if options.camera_info_yaml else None
    groups, keys = parse_outputs(options.outputs, spec)
    if options.ply and "points" not in keys:
        raise CliError(f"--ply writes the cloud: keep points in --outputs (now: {options.outputs})")
    request = request_for(keys, points_rgb=settings.points_rgb)
    if kinds:  # a flag no input reads is refused
        check_flags(settings, list(given), spec, options, kinds)
    return RunPlan(settings, options, model_path, spec, scale, motion, compression, trajectory,
                   camera_info, tuple(groups), tuple(keys), request,
                   DEPTH_FORMATS[settings.depth_encoding])


def check_bag_options(options: ProcessOptions, kinds: Iterable[str]) -> None:
    """CliError for a typed bag option (``process_options.BAG_ONLY``) when no input is a bag,
    and for ``--bag-compression`` on a bag format it does not compress."""
    if "bag_compression" in options.given and options.bag_format != "mcap":
        raise CliError(f"--bag-compression has no effect on a {options.bag_format} bag (only "
                       "MCAP chunks are compressed); leave it out or use --bag-format mcap")
    kinds = sorted(set(kinds))
    if not kinds or "bag" in kinds:
        return
    for name, flag in BAG_ONLY.items():
        if name in options.given:
            raise CliError(f"{flag} has no effect on {INPUT_WORDS.get(kinds[0], kinds[0])} "
                           "(it is read for a bag input only); leave it out")


def parse_outputs(text: str, spec: ModelSpec) -> tuple[list[str], list[str]]:
    """(groups, output keys) for ``--outputs`` on this model; CliError when it cannot give one."""
    available = available_groups(spec)
    if text.strip() in ("", "all"):
        groups = available
    else:
        groups = []
        for part in (p.strip().lower() for p in text.split(",") if p.strip()):
            name = GROUP_ALIASES.get(part, part)
            if name not in OUTPUT_GROUPS:
                raise CliError(f"--outputs: '{part}' is unknown; use a comma-separated subset of "
                               f"{', '.join(OUTPUT_GROUPS)}")
            if name not in available:
                raise CliError(f"--outputs: {spec.display_name} has no {name} output; it "
                               f"gives: {', '.join(available)}")
            if name not in groups:
                groups.append(name)
    keys = [k for g in groups for k in OUTPUT_GROUPS[g].products]
    return groups, keys
