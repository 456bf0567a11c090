# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""``dense-perception process`` on one input: open it, run the model over it, write its output.

INPUT is an image file, a folder of images, a video (anything OpenCV reads) or a ROS 2 bag
(rosbag2 folder with MCAP or sqlite3 storage, or a bare .mcap / .db3 file). Images and videos
give a folder of files (see ``inputs/file_io.py``); a bag gives a new bag with the input
topics plus the node's output topics (see ``inputs/bag_io.py``). The frames go through
``loop.run_frames``.

A :class:`ModelSession` holds the model, the run's settings and the command's options;
:meth:`ModelSession.process_input` runs it over one input. cli.py makes the session once; one
input is one ``process_input``, many inputs (``fleet``) one session per worker, loaded once, and
``process_input`` per input, in this process or in a Ray actor.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from ...core.model.specs import ModelSpec
from ...core.model.detection import detect_model_spec
from ...core.backends.native_log import quiet_native_stderr, with_gpu_reason
from ...core.pipeline import DensePipeline, load_pipeline
from ...core.products import OUTPUT_GROUPS, available_groups, request_for
from ...core.backends.runner import (ModelLoadError, check_model_file, litert_version,
                                    resolve_model_path)
from ...core.wiring.derived import (compression_config, default_confidence, depth_options,
                                    depth_units_problem, estimates_scale, motion_config,
                                    scale_config)
from ...core.settings.table import Settings
from ...core.timing import StageTimer
from ..inputs.camera_yaml import load_camera_info_yaml
from ..console import PROG, CliError, warn
from ..inputs.sources import open_input
from .loop import run_frames
from ..options.process_options import ProcessOptions
from ..inputs.poses import load_poses
from ..options.scale_options import ScaleOptionError, scale_for
from ...core.camera_track import TrackSetup
from ..options.settings_args import DEPTH_FORMATS, OFFLINE

GROUP_ALIASES = {"segmentation": "seg", "labels": "seg", "point": "points", "cloud": "points"}
COPY_MODES = ("all", "camera", "none")
TIMER_WINDOW = 1_000_000  # keep every frame's stage times: summary.json covers the whole run


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


# ---- inputs -------------------------------------------------------------------------------------
def input_kind(path: Path) -> str:
    """What ``path`` is: bag, images (a folder), image or video; InputError when missing."""
    from ..inputs.bag_io import is_bag
    from ..inputs.file_io import InputError, is_image_file
    if not path.exists():
        raise InputError(f"input '{path}' does not exist")
    if is_bag(path):
        return "bag"
    if path.is_dir():
        return "images"
    return "image" if is_image_file(path) else "video"


def default_out(path: Path) -> Path:
    """The output of one input without --out: ``<input>_dense`` beside it."""
    name = path.name if path.is_dir() else path.stem
    return path.resolve().parent / f"{name}_dense"


class ModelSession:
    """The model, the run's settings and the command's options; the model is loaded once, on
    first use.

    Creating one checks what the settings and options cannot check alone against the model
    file (a missing or unsupported model fails before any input is opened): the metric-scale
    settings (for inputs of the kind ``scale_check_kind()`` gives), the calibration file and
    --outputs. :meth:`pipeline` loads the model; :meth:`process_input` runs it over one input.
    """

    def __init__(self, settings: Settings, options: ProcessOptions,
                 scale_check_kind: Callable[[], str] | None = None, *,
                 overlap: bool = True) -> None:
        # Overlap: the next frame's inference runs on a second thread while this one is
        # finished and written. A Ray worker granted one CPU turns it off, so that it uses one,
        # with one host thread.
        self.settings = settings if overlap else settings.changed({"host_threads": 1})
        self.options, self.overlap = options, overlap
        self.model_path = resolve_model_path(settings.model_path)
        signature = check_model_file(self.model_path)
        # What the settings give each part, made once (core/wiring/derived.py).
        depth = depth_options(settings)
        self.spec: ModelSpec = detect_model_spec(
            signature.input_shapes, signature.output_shapes, settings.model_type,
            source=f"model file '{self.model_path}'", output_names=signature.output_names,
            depth=depth, file=signature)
        # The input's kind first: a missing input is said before what the settings lack.
        kind = scale_check_kind() if scale_check_kind is not None else None
        problem = depth_units_problem(settings, self.spec.metric_depth, OFFLINE)
        if problem:
            raise ScaleOptionError(problem)
        # The run's scale settings (None: not estimated); each input gets its own scaler.
        self.scale = scale_config(settings) if estimates_scale(
            settings, self.spec.metric_depth) else None
        self.compression = compression_config(settings)
        self.trajectory = load_poses(options.poses)  # --poses: a bad file fails here
        if kind is not None:  # checks the input kind
            scale_for(self.scale, kind, options.reference_depth_topic,
                      self.trajectory is not None)
        # The calibration file (images, videos), read once: a bad one fails before any input.
        self.camera_info = load_camera_info_yaml(
            options.camera_info_yaml, settings.input_rectified) \
            if options.camera_info_yaml else None
        self.groups, self.keys = parse_outputs(options.outputs, self.spec)
        self.request = request_for(self.keys, points_rgb=settings.points_rgb)
        self.depth_format = DEPTH_FORMATS[settings.depth_encoding]  # npy or png16 files
        self.fallback = ""  # why the GPU was not used (backend auto), once loaded
        self._pipeline: DensePipeline | None = None

    def pipeline(self) -> DensePipeline:
        """The loaded pipeline (LiteRT's native log captured unless --verbose)."""
        if self._pipeline is not None:
            return self._pipeline
        verbose = self.options.verbose
        notes: list[str] = []
        failure = None
        with quiet_native_stderr(not verbose) as native:
            try:
                pipeline = load_pipeline(self.model_path, self.settings, log=notes.append)
            except ModelLoadError as exc:
                failure = str(exc)
        if failure is not None:
            raise ModelLoadError(with_gpu_reason(failure, native)
                                 if self.settings.backend == "gpu" and not verbose else failure)
        fallback = pipeline.runner.fallback_note or next(
            (n for n in notes if n.startswith("GPU unavailable")), "")
        if fallback and not verbose:
            fallback = with_gpu_reason(fallback, native)
        self.fallback, self._pipeline = fallback, pipeline
        return pipeline

    def describe(self) -> dict[str, Any]:
        """What summary.json says of the model and the run's settings (once loaded)."""
        pipeline = self.pipeline()
        runner = pipeline.runner
        return {"model": {"path": self.model_path, "kind": self.spec.kind,
                          "name": self.spec.display_name, "metric_depth": self.spec.metric_depth},
                "backend": runner.description, "backend_note": self.fallback,
                "litert": litert_version(), "outputs": self.groups,
                "config": dict(vars(pipeline.config))}

    def process_input(self, in_path: Path, out_path: Path, *,
                      after_frame: Callable[[int], None] | None = None,
                      progress: Callable[[int], None] | None = None, quiet: bool = False,
                      final_out: Path | None = None,
                      extra_summary: dict[str, Any] | None = None) -> tuple[int, dict[str, Any]]:
        """Run the model over one input into ``out_path``: (exit status, summary).

        ``final_out``: where the output will be renamed to once complete (the summary names
        it); ``extra_summary``: more summary.json fields; ``progress``/``quiet``: see
        ``run_frames``. Errors before the first frame (a missing input, a wrong topic, ...)
        raise.
        """
        from ..inputs import file_io
        max_frames = self.options.max_frames
        kind = input_kind(in_path)
        if out_path.resolve() == in_path.resolve():
            raise CliError(f"output '{out_path}' is the input; choose another --out")
        # New tracks per input: each follows one camera's stream (a bag's cameras their own).
        posed = self.trajectory is not None or (kind == "bag"
                                                 and bool(self.options.odometry_topic))
        track = TrackSetup(scale_for(self.scale, kind, self.options.reference_depth_topic,
                                     self.trajectory is not None),
                           motion_config(self.settings) if posed else None)
        file_io.check_new_output(out_path)
        timer = StageTimer(window=TIMER_WINDOW)
        summary: dict[str, Any] = {"input": str(in_path), "input_kind": kind,
                                   "output": str(final_out or out_path)}
        summary.update(extra_summary or {})
        source = open_input(self, in_path, kind, timer, track)  # errors: nothing left behind
        try:
            events = source.events()
            summary.update(source.summary)
            total = source.total
            if max_frames and total:
                total = min(total, max_frames)
            pipeline = self.pipeline()  # loaded once per session
            pipeline.timer = timer
            if pipeline.confidence_note() and not quiet and not default_confidence(
                    pipeline.config.points_min_confidence):
                warn(pipeline.confidence_note())  # asked for, not the default: it can't act
            summary.update(self.describe(), depth_format=self.depth_format)
            target = source.target(out_path, summary)
            if not quiet:
                print(f"{PROG}: {self.spec.display_name} on {pipeline.runner.description}"
                      f"{' (GPU unavailable)' if self.fallback else ''}: "
                      f"{source.description} -> {out_path}", flush=True)
            code = run_frames(pipeline, self.request, events, target, total, max_frames,
                              after_frame, summary, source.track_of(), progress=progress,
                              quiet=quiet, overlap=self.overlap)
            return code, summary
        finally:
            source.close()
