# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""``dense-perception process`` on one input: open it, run the model over it, write its output.

INPUT is an image file, a folder of images, a video (anything OpenCV reads) or a ROS 2 bag
(rosbag2 folder with MCAP or sqlite3 storage, or a bare .mcap / .db3 file). Images and videos
give a folder of files (see ``inputs/file_io.py``); a bag gives a new bag with the input
topics plus the node's output topics (see ``inputs/bag_io.py``). The frames go through
``loop.run_frames``.

A :class:`ModelSession` holds the model and the run's plan (:mod:`.run_plan`, made once by
cli.py); :meth:`ModelSession.process_input` runs it over one input. One input is one
``process_input``; many inputs (``fleet``) one session per worker of the same plan, loaded
once, and ``process_input`` per input, in this process or in a Ray actor.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from ...core.backends.native_log import quiet_native_stderr, with_gpu_reason
from ...core.backends.runner import ModelLoadError, litert_version
from ...core.pipeline import DensePipeline, load_pipeline
from ...core.timing import StageTimer
from ...core.wiring.derived import default_confidence
from ..console import PROG, CliError, warn
from ..inputs.sources import open_input
from .loop import run_frames
from .run_plan import RunPlan

COPY_MODES = ("all", "camera", "none")
TIMER_WINDOW = 1_000_000  # keep every frame's stage times: summary.json covers the whole run


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
    """The model of a run and its plan (:class:`~.run_plan.RunPlan`: what the settings and
    options give, made and checked once); the model is loaded once, on first use.

    :meth:`pipeline` loads the model; :meth:`process_input` runs it over one input. The single
    run and each fleet worker (in this process or a Ray actor) hold one, all of one plan.
    """

    def __init__(self, plan: RunPlan, *, overlap: bool = True) -> None:
        # Overlap: the next frame's inference runs on a second thread while this one is
        # finished and written. A Ray worker granted one CPU turns it off, so that it uses one,
        # with one host thread.
        self.plan = plan
        self.settings = plan.settings if overlap else plan.settings.changed({"host_threads": 1})
        self.overlap = overlap
        self.fallback = ""  # why the GPU was not used (backend auto), once loaded
        self._pipeline: DensePipeline | None = None

    def pipeline(self) -> DensePipeline:
        """The loaded pipeline (LiteRT's native log captured unless --verbose)."""
        if self._pipeline is not None:
            return self._pipeline
        verbose = self.plan.options.verbose
        notes: list[str] = []
        failure = None
        with quiet_native_stderr(not verbose) as native:
            try:
                pipeline = load_pipeline(self.plan.model_path, self.settings, log=notes.append)
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

    def loaded(self) -> tuple[DensePipeline, dict[str, Any]]:
        """The loaded pipeline (:meth:`pipeline`) and what summary.json says of the model and
        the run's settings."""
        pipeline, plan = self.pipeline(), self.plan
        runner, spec = pipeline.runner, plan.spec
        return pipeline, {"model": {"path": plan.model_path, "kind": spec.kind,
                                    "name": spec.display_name, "metric_depth": spec.metric_depth},
                          "backend": runner.description, "backend_note": self.fallback,
                          "litert": litert_version(), "outputs": list(plan.groups),
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
        plan = self.plan
        max_frames = plan.options.max_frames
        kind = input_kind(in_path)
        if out_path.resolve() == in_path.resolve():
            raise CliError(f"output '{out_path}' is the input; choose another --out")
        track = plan.track(kind)  # new per input: each follows one camera's stream
        file_io.check_new_output(out_path)
        timer = StageTimer(window=TIMER_WINDOW)
        summary: dict[str, Any] = {"input": str(in_path), "input_kind": kind,
                                   "output": str(final_out or out_path)}
        summary.update(extra_summary or {})
        source = open_input(plan, in_path, kind, timer, track)  # errors: nothing left behind
        try:
            pipeline, model = self.loaded()  # loaded once per session, once the input opened
            events = source.events()
            summary.update(source.summary)
            total = source.total
            if max_frames and total:
                total = min(total, max_frames)
            pipeline.timer = timer
            if pipeline.confidence_note() and not quiet and not default_confidence(
                    pipeline.config.points_min_confidence):
                warn(pipeline.confidence_note())  # asked for, not the default: it can't act
            summary.update(model, depth_format=plan.depth_format)
            target = source.target(out_path, summary)
            if plan.options.rerun:
                from ..inputs.rerun_record import RerunRecording
                target = RerunRecording(
                    target, Path(plan.options.rerun),
                    world_is_odometry=getattr(source, "motion", None) is not None,
                    cameras={c.topic: c.namespace for c in getattr(source, "cameras", [])})
            if not quiet:
                print(f"{PROG}: {plan.spec.display_name} on {pipeline.runner.description}"
                      f"{' (GPU unavailable)' if self.fallback else ''}: "
                      f"{source.description} -> {out_path}", flush=True)
            code = run_frames(pipeline, plan.request, events, target, total, max_frames,
                              after_frame, summary, source.track_of(), progress=progress,
                              quiet=quiet, overlap=self.overlap,
                              require_metres=plan.options.require_metres)
            return code, summary
        finally:
            source.close()
