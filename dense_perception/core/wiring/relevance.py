# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Where each setting of the table acts: the one rule for "this setting does nothing here".

Every row of the settings table (:data:`~..settings.table.PARAMS`) has a rule in :data:`SCOPE`:
given a run (:class:`Where`: the model's kind, whether its depth is metric, the input's kind,
whether a calibration file, the compressed formats or the camera's motion are there) and its
settings, why the setting does nothing, or None where it acts. A row without a rule fails
test_setting_relevance, so a new setting cannot skip it.

The three front ends ask :func:`ignored_settings` alike, for the settings the user gave: the
node at start (those off their defaults: one WARN each, and /diagnostics lists them), the node
at runtime (a change is refused) and ``dense-perception process`` (a flag typed on the command
line is refused: exit 2, one line).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable

from ..scale.cross_check import CHECKED_SOURCES
from ..scale.metric_scale import ESTIMATED_SOURCES
from ..setting_names import NODE, Syntax
from ..settings.table import PARAMS, Settings, per_camera_heights

TOPIC = "topic"  # the node's input: a camera topic
INPUT_WORDS = {TOPIC: "a camera topic", "bag": "a bag", "video": "a video",
               "images": "a folder of images", "image": "an image file"}


@dataclass(frozen=True)
class Where:
    """What decides whether a setting acts: the model, the input and the outputs made."""

    model_kind: str                 # ModelSpec.kind: da3, tipsv2 or depth
    metric_depth: bool
    input_kind: str = TOPIC         # the node's, or offline: bag, video, images, image
    camera_info_file: bool = False  # offline images and videos: --camera-info-yaml given
    compressed: bool = True         # compressed formats made (offline: --compressed add|only)
    sequence: bool = False          # offline images with poses: one camera's stream, filtered
    motion: bool = True             # the camera's motion comes (the node: its odometry;
    #                                 offline: --poses, a bag's --odometry-topic)


# A rule: (settings, where, syntax) -> what follows "<name> has no effect", or None (it acts).
Rule = Callable[[Settings, Where, Syntax], "str | None"]


def always(settings: Settings, where: Where, syntax: Syntax) -> str | None:
    """Acts in every run (or what it does is checked elsewhere, as its description says)."""
    return None


def model_kinds(*kinds: str) -> Rule:
    """Read only for these model kinds."""
    def rule(settings: Settings, where: Where, syntax: Syntax) -> str | None:
        if where.model_kind in kinds:
            return None
        return (f"on this {where.model_kind} model: it is read only for "
                f"{syntax.phrase('model_type', ' and '.join(kinds))}")
    return rule


def sources_in_force(settings: Settings) -> set[str]:
    """The scale sources a run measures with: depth_scale_source, and depth_scale_check's
    beside motion or reference_depth."""
    checked = settings.depth_scale_source in CHECKED_SOURCES
    return {settings.depth_scale_source} | (
        {settings.depth_scale_check} if checked and settings.depth_scale_check != "none" else
        set())


def scale_setting(*sources: str) -> Rule:
    """A scale setting: read with these depth_scale_source values, or depth_scale_check's
    (no values: the source itself). A metric model reads only the estimated sources' settings:
    they check its metres."""
    def rule(settings: Settings, where: Where, syntax: Syntax) -> str | None:
        estimated = set(ESTIMATED_SOURCES)
        if where.metric_depth and (set(sources).isdisjoint(estimated) if sources else
                                   settings.depth_scale_source not in estimated):
            return (": this model's depth is metric (only an estimated depth_scale_source, "
                    f"{', '.join(ESTIMATED_SOURCES)}, acts on it: it checks its metres)")
        if sources and sources_in_force(settings).isdisjoint(sources):
            return (f"with {syntax.phrase('depth_scale_source', settings.depth_scale_source)} "
                    f"(it is read by {' and '.join(sources)})")
        return None
    return rule


def inputs(*kinds: str) -> Rule:
    """Read only for these input kinds."""
    def rule(settings: Settings, where: Where, syntax: Syntax) -> str | None:
        if where.input_kind in kinds:
            return None
        return (f"on {INPUT_WORDS.get(where.input_kind, where.input_kind)} (it is read for "
                f"{' and '.join(INPUT_WORDS.get(k, k) for k in kinds)} only)")
    return rule


def unless(predicate: Callable[[Settings, Where], bool], why: Callable[[Settings, Syntax], str]
           ) -> Rule:
    """Does nothing while ``predicate`` holds; ``why`` says so."""
    def rule(settings: Settings, where: Where, syntax: Syntax) -> str | None:
        return why(settings, syntax) if predicate(settings, where) else None
    return rule


def all_of(*rules: Rule) -> Rule:
    """Acts where every one of ``rules`` lets it (the first reason otherwise)."""
    def rule(settings: Settings, where: Where, syntax: Syntax) -> str | None:
        return next((r for r in (rule(settings, where, syntax) for rule in rules) if r), None)
    return rule


def any_of(*rules: Rule) -> Rule:
    """Acts where one of ``rules`` lets it (the first reason otherwise)."""
    def rule(settings: Settings, where: Where, syntax: Syntax) -> str | None:
        reasons = [rule(settings, where, syntax) for rule in rules]
        return None if None in reasons else reasons[0]
    return rule


def _backends(*names: str) -> Rule:
    return unless(lambda s, w: s.backend not in names,
                  lambda s, x: f"with {x.phrase('backend', s.backend)} (it is read by "
                               f"{' and '.join(names)})")


def _vendors(*names: str) -> Rule:
    return all_of(_backends("npu"), unless(
        lambda s, w: s.npu_vendor not in names,
        lambda s, x: f"with {x.phrase('npu_vendor', s.npu_vendor)} (it is read by "
                     f"{' and '.join(names)})"))


# Points exist for metric depth (a metric model or a scale source) and publish_points.
POINTS = all_of(
    unless(lambda s, w: not w.metric_depth and s.depth_scale_source == "none",
           lambda s, x: f"with {x.phrase('depth_scale_source', 'none')}: relative depth "
                        "gives no points"),
    unless(lambda s, w: not s.publish_points,
           lambda s, x: f"with {x.phrase('publish_points', 'false')}: no points are made"))
COMPRESSED = unless(lambda s, w: not w.compressed,
                    lambda s, x: "without compressed outputs (offline: a bag with --compressed "
                                 "add or only)")
# The camera's calibration comes from CameraInfo (the node, a bag) or a calibration file.
CALIBRATED = unless(lambda s, w: w.input_kind not in (TOPIC, "bag") and not w.camera_info_file,
                    lambda s, x: "without a calibration (--camera-info-yaml): frames are "
                                 "taken as rectified pinhole images of the guessed camera")
GUESSED = unless(lambda s, w: w.input_kind not in (TOPIC, "bag") and w.camera_info_file,
                 lambda s, x: "with a calibration file (--camera-info-yaml): no camera is "
                              "guessed")
HEIGHT = all_of(scale_setting("ground_plane"), unless(
    lambda s, w: per_camera_heights(s.camera_heights),
    lambda s, x: f"while camera_heights is set ({list(s.camera_heights)}): set camera_heights "
                 "(one height per camera, in the order of cameras) instead, or set "
                 "camera_heights to [0.0] with it to use camera_height for every camera"))


def _heights(settings: Settings, where: Where, syntax: Syntax) -> str | None:
    """camera_heights: read by ground_plane; [] or [0.0] (camera_height for all) is unset."""
    if not per_camera_heights(settings.camera_heights):
        return None
    return scale_setting("ground_plane")(settings, where, syntax)


# An image or a folder of unrelated photos: each scaled alone (no filter, no hold).
FILTERED = unless(lambda s, w: w.input_kind in ("image", "images") and not w.sequence,
                  lambda s, x: "on unrelated photos: each is scaled on its own, with no filter "
                               "and no hold")

# The camera's motion: the node's odometry, offline --poses or a bag's --odometry-topic.
MOVING = unless(lambda s, w: not w.motion,
                lambda s, x: "without the camera's motion (offline: --poses FILE for images "
                             "and videos, --odometry-topic TOPIC for a bag)")

SCOPE: dict[str, Rule] = {
    "model_path": always, "model_type": always,
    "input_normalization": model_kinds("depth"),
    "input_mean": all_of(model_kinds("depth"), unless(
        lambda s, w: s.input_normalization != "custom",
        lambda s, x: f"with {x.phrase('input_normalization', s.input_normalization)} (it is "
                     f"read with {x.phrase('input_normalization', 'custom')})")),
    "depth_output": model_kinds("depth"), "depth_output_kind": model_kinds("depth"),
    "depth_output_unit": model_kinds("depth"),
    "backend": always,
    "gpu_precision": _backends("gpu", "auto"),
    "gpu_timeout": _backends("gpu", "auto", "npu"),
    "gpu_max_restarts": _backends("gpu", "auto", "npu"),
    "npu_vendor": _backends("npu"), "npu_cache_dir": _backends("npu"),
    "openvino_device": _vendors("intel_openvino", "auto"),
    "npu_library_dir": _vendors("qualcomm", "auto"),
    "num_threads": _backends("cpu", "auto"), "cpu_precision": _backends("cpu", "auto"),
    "fit": always, "output_resolution": always,
    "relative_depth_scale": scale_setting("fixed", "none"),
    "depth_scale_source": scale_setting(),
    "depth_scale_check": scale_setting(*CHECKED_SOURCES),
    "camera_height": HEIGHT, "camera_heights": _heights,
    "depth_scale_time_constant": all_of(scale_setting(*ESTIMATED_SOURCES), FILTERED),
    "depth_scale_max_age": all_of(scale_setting(*ESTIMATED_SOURCES), FILTERED),
    "max_scale_error": scale_setting(*ESTIMATED_SOURCES),
    "metric_depth_error": all_of(unless(
        lambda s, w: not w.metric_depth,
        lambda s, x: "on a relative-depth model (it is a metric network's own error)"),
        scale_setting(*ESTIMATED_SOURCES)),
    "ground_max_tilt_deg": scale_setting("ground_plane"),
    "depth_scale_min_inliers": scale_setting(*ESTIMATED_SOURCES),
    "motion_scale_min_baseline": scale_setting("motion"),
    "motion_scale_map": scale_setting("motion"),
    "pose_clock_offset": scale_setting("motion"),
    "temporal_alignment": MOVING,
    "temporal_max_translation": all_of(MOVING, unless(
        lambda s, w: not s.temporal_alignment,
        lambda s, x: f"with {x.phrase('temporal_alignment', 'false')}: nothing is aligned")),
    "reference_depth_slop": scale_setting("reference_depth"),
    # max_depth with relative depth is refused outright (metric_scale.relative_output_problem)
    "max_depth": any_of(POINTS, scale_setting(*ESTIMATED_SOURCES)),
    # a file without confidence: the pipeline's confidence_note (the file decides, not its kind)
    "points_min_confidence": POINTS,
    "publish_depth": always, "publish_normals": always, "publish_segmentation": always,
    "publish_points": always,
    "points_rgb": POINTS, "points_stride": POINTS, "points_voxel_size": POINTS,
    "points_organized": all_of(POINTS, unless(
        lambda s, w: s.points_voxel_size > 0,
        lambda s, x: f"with {x.phrase('points_voxel_size', s.points_voxel_size)} (a voxel "
                     "cloud is unorganised)")),
    "input_rectified": CALIBRATED, "fallback_hfov_deg": GUESSED,
    "host_threads": always, "diagnostics_period": always, "input_qos": always,
    "camera_info_qos": always, "camera_info_slop": inputs(TOPIC, "bag"),
    # the robot's motion: the node's odometry topic, a bag's --odometry-topic
    "camera_in_base": inputs(TOPIC, "bag"), "odometry_tolerance": inputs(TOPIC, "bag"),
    "odometry_max_gap": inputs(TOPIC, "bag"), "odometry_wait": inputs(TOPIC),
    "cameras": always, "use_lifecycle": always, "input_compressed": always,
    "jpeg_quality": COMPRESSED, "png_level": COMPRESSED, "compressed_depth_max": COMPRESSED,
    "compressed_depth_quantization": all_of(COMPRESSED, unless(
        lambda s, w: s.depth_encoding != "32FC1",
        lambda s, x: f"with {x.phrase('depth_encoding', s.depth_encoding)} (compressedDepth "
                     "sends millimetres as they are; it quantises 32FC1 only)")),
    "depth_encoding": always,
}
SCOPE["input_std"] = SCOPE["input_mean"]


def why_ignored(name: str, settings: Settings, where: Where, syntax: Syntax = NODE
                ) -> str | None:
    """Why setting ``name`` does nothing in this run with these settings (None: it acts)."""
    tail = SCOPE.get(name, always)(settings, where, syntax)  # a row without one: the test
    if tail is None:
        return None
    return f"{syntax.name(name)} has no effect{'' if tail.startswith(':') else ' '}{tail}"


def ignored_settings(settings: Settings, names: Iterable[str], where: Where,
                     syntax: Syntax = NODE) -> list[str]:
    """Why each of the settings ``names`` (those the user gave) does nothing here, in order."""
    return [why for name in names if (why := why_ignored(name, settings, where, syntax))]


def given_at_start(settings: Settings) -> list[str]:
    """The settings off their table defaults: those the node was given (a YAML file that lists
    a setting at its default, as config/*.yaml do, changes nothing and says nothing)."""
    defaults = Settings()
    return [spec.name for spec in PARAMS if getattr(settings, spec.name) !=
            getattr(defaults, spec.name)]
