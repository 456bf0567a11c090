"""``dense-perception process`` on one input: open it, run the model over it, write its output.

INPUT is an image file, a folder of images, a video (anything OpenCV reads) or a ROS 2 bag
(rosbag2 folder with MCAP or sqlite3 storage, or a bare .mcap / .db3 file). Images and videos
give a folder of files (see ``fileio``); a bag gives a new bag with the input topics plus the
node's output topics (see ``bagio``). The frames go through ``loop.run_frames``.

A :class:`ModelSession` holds the model and options; :func:`process_input` runs it over one
input. One input: ``process_one`` does both. Many inputs (``fleet``): one session per worker,
loaded once, and ``process_input`` per input, in this process or in a Ray actor.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Callable

from ..core.models import ModelSpec
from ..core.model_detection import detect_model_spec
from ..core.backends.native_log import quiet_native_stderr, with_gpu_reason
from ..core.parameters import default_confidence
from ..core.pipeline import DensePipeline
from ..core.products import OUTPUT_GROUPS, available_groups, request_for
from ..core.backends.runner import (ModelLoadError, check_model_file, litert_version,
                                    resolve_model_path)
from ..core.settings import depth_options, pipeline_config, pipeline_for
from ..core.timing import StageTimer
from .camera_yaml import load_camera_info_yaml
from .console import PROG, CliError, warn
from .inputs import open_input
from .loop import run_frames
from .scale_options import scaler_for
from .settings_args import OFFLINE, setting_values, settings_problem

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
    from .bagio import is_bag
    from .fileio import InputError, is_image_file
    if not path.exists():
        raise InputError(f"input '{path}' does not exist")
    if is_bag(path):
        return "bag"
    if path.is_dir():
        return "images"
    return "image" if is_image_file(path) else "video"


def default_out(path: Path) -> Path:
    name = path.name if path.is_dir() else path.stem
    return path.resolve().parent / f"{name}_dense"


def process_one(args: argparse.Namespace,
                after_frame: Callable[[int], None] | None = None) -> int:
    """One input: ``args.input[0]`` into ``--out`` (the CLI sends many inputs to ``fleet``)."""
    from .bagio import BagError
    from .fileio import InputError
    try:
        in_path = Path(args.input[0])
        session = ModelSession(args, scale_check_kind=lambda: input_kind(in_path))
        out_path = Path(args.out) if args.out else default_out(in_path)
        code, _ = process_input(session, in_path, out_path, after_frame=after_frame)
        return code
    except (BagError, InputError) as exc:
        raise CliError(str(exc)) from None


class ModelSession:
    """The model and the options of a ``process`` run; the model is loaded once, on first use.

    Creating one checks the options and the model file (a missing or unsupported model fails
    before any input is opened), and the metric-scale options for inputs of the kind
    ``scale_check_kind()`` gives; :meth:`pipeline` loads it.
    """

    def __init__(self, args: argparse.Namespace,
                 scale_check_kind: Callable[[], str] | None = None, *,
                 overlap: bool = True) -> None:
        self.args = args
        # Overlap: the next frame's inference runs on a second thread while this one is
        # finished and written. A Ray worker granted one CPU turns it off, so that it uses one.
        self.overlap = overlap
        self.values = setting_values(args)
        problem = settings_problem(self.values)
        if problem:
            raise CliError(problem)
        # One host thread for a worker that may use one CPU (see overlap).
        self.config = pipeline_config(self.values,
                                      **({} if overlap else {"host_threads": 1}))
        problem = self.config.problem(OFFLINE)
        if problem:
            raise CliError(problem)
        self.depth = depth_options(self.values)
        problem = self.depth.problem(OFFLINE)
        if problem:
            raise CliError(problem)
        if args.max_frames < 0:
            raise CliError(f"--max-frames must be >= 0, got {args.max_frames}")
        self.model_path = resolve_model_path(args.model)
        signature = check_model_file(self.model_path)
        self.spec: ModelSpec = detect_model_spec(
            signature.input_shapes, signature.output_shapes, args.model_type,
            source=f"model file '{self.model_path}'", output_names=signature.output_names,
            depth=self.depth)
        if scale_check_kind is not None:
            scaler_for(args, self.spec, kind=scale_check_kind())  # checks the settings
        # The calibration file (images, videos), read once: a bad one fails before any input.
        self.camera_info = load_camera_info_yaml(args.camera_info_yaml, self.values[
            "input_rectified"]) if getattr(args, "camera_info_yaml", None) else None
        self.groups, self.keys = parse_outputs(args.outputs, self.spec)
        self.request = request_for(self.keys, points_rgb=args.points_rgb)
        self.fallback = ""  # why the GPU was not used (backend auto), once loaded
        self._pipeline: DensePipeline | None = None

    def pipeline(self) -> DensePipeline:
        """The loaded pipeline (LiteRT's native log captured unless --verbose)."""
        if self._pipeline is not None:
            return self._pipeline
        args = self.args
        notes: list[str] = []
        failure = None
        with quiet_native_stderr(not args.verbose) as native:
            try:
                pipeline = pipeline_for(self.model_path, self.values, self.config,
                                        log=notes.append)
            except ModelLoadError as exc:
                failure = str(exc)
        if failure is not None:
            raise ModelLoadError(with_gpu_reason(failure, native) if args.backend == "gpu"
                                 and not args.verbose else failure)
        fallback = pipeline.runner.fallback_note or next(
            (n for n in notes if n.startswith("GPU unavailable")), "")
        if fallback and not args.verbose:
            fallback = with_gpu_reason(fallback, native)
        self.fallback, self._pipeline = fallback, pipeline
        return pipeline

    def describe(self) -> dict[str, Any]:
        """What summary.json says of the model and the run's settings (once loaded)."""
        runner = self.pipeline().runner
        return {"model": {"path": self.model_path, "kind": self.spec.kind,
                          "name": self.spec.display_name, "metric_depth": self.spec.metric_depth},
                "backend": runner.description, "backend_note": self.fallback,
                "litert": litert_version(), "outputs": self.groups,
                "config": dict(vars(self.config))}


def process_input(session: ModelSession, in_path: Path, out_path: Path, *,
                  after_frame: Callable[[int], None] | None = None,
                  progress: Callable[[int], None] | None = None, quiet: bool = False,
                  final_out: Path | None = None, extra_summary: dict[str, Any] | None = None
                  ) -> tuple[int, dict[str, Any]]:
    """Run ``session`` over one input into ``out_path``: (exit status, summary).

    ``final_out``: where the output will be renamed to once complete (the summary names it);
    ``extra_summary``: more summary.json fields; ``progress``/``quiet``: see ``run_frames``.
    Errors before the first frame (a missing input, a wrong topic, ...) raise.
    """
    from . import fileio
    args, spec = session.args, session.spec
    kind = input_kind(in_path)
    if out_path.resolve() == in_path.resolve():
        raise CliError(f"output '{out_path}' is the input; choose another --out")
    # A new scaler per input: its filter follows one camera's stream.
    scaler = scaler_for(args, spec, kind=kind)
    fileio.check_new_output(out_path)
    timer = StageTimer(window=TIMER_WINDOW)
    summary: dict[str, Any] = {"input": str(in_path), "input_kind": kind,
                               "output": str(final_out or out_path)}
    summary.update(extra_summary or {})
    source = open_input(session, in_path, kind, timer, scaler)  # errors: nothing left behind
    try:
        events = source.events()
        summary.update(source.summary)
        total = source.total
        if args.max_frames and total:
            total = min(total, args.max_frames)
        pipeline = session.pipeline()  # loaded once per session
        pipeline.timer = timer
        if pipeline.confidence_note() and not quiet and not default_confidence(
                {"points_min_confidence": pipeline.config.points_min_confidence}):
            warn(pipeline.confidence_note())  # asked for, not the default: say it can't act
        summary.update(session.describe(), depth_format=args.depth_format)
        target = source.target(out_path, summary)
        if not quiet:
            print(f"{PROG}: {spec.display_name} on {pipeline.runner.description}"
                  f"{' (GPU unavailable)' if session.fallback else ''}: {source.description} "
                  f"-> {out_path}", flush=True)
        code = run_frames(pipeline, session.request, events, target, total, args.max_frames,
                          after_frame, summary, scaler=scaler, progress=progress,
                          scaler_of=source.scaler_of(), quiet=quiet, overlap=session.overlap)
        return code, summary
    finally:
        source.close()
