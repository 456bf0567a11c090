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
from typing import Any, Callable, Iterator

from ..core.models import ModelSpec
from ..core.model_detection import detect_model_spec
from ..core.backends.native_log import quiet_native_stderr, with_gpu_reason
from ..core.parameters import default_confidence
from ..core.pipeline import DensePipeline, load_pipeline
from ..core.products import COMPRESSED, OUTPUT_GROUPS, available_groups, request_for
from ..core.backends.runner import ModelLoadError, check_model_file, litert_version, resolve_model_path
from ..core.settings import compression_config, depth_options, npu_options, pipeline_config
from ..core.timing import StageTimer
from .bag_cameras import bag_events, bag_cameras, camera_scaler, missing_camera_info
from .camera_yaml import calibrated_frames, check_calibration_size, load_camera_info_yaml
from .console import PROG, CliError, warn
from .loop import BagTarget, FolderTarget, Frame, Target, run_frames
from .scale_options import reference_stream, scaler_for
from .settings_args import OFFLINE, setting_values, settings_problem

GROUP_ALIASES = {"segmentation": "seg", "labels": "seg", "point": "points", "cloud": "points"}
COPY_MODES = ("all", "camera", "none")
BAG_COMPRESSED = ("off", "add", "only")  # --compressed: image_transport's topics in the bag
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


def bag_keys(keys: list[str], compressed: str) -> list[str]:
    """The output keys a bag gets under ``--compressed``: off drops the compressed topics, add
    keeps both, only drops each raw image that a compressed topic carries."""
    if compressed == "off":
        return [k for k in keys if k not in COMPRESSED]
    if compressed == "only":
        carried = {COMPRESSED[k][0] for k in keys if k in COMPRESSED}
        return [k for k in keys if k not in carried]
    return list(keys)


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
                values = self.values
                pipeline = load_pipeline(self.model_path, values["model_type"],
                                         values["backend"], values["num_threads"], self.config,
                                         log=notes.append,
                                         gpu_precision=values["gpu_precision"],
                                         cpu_precision=values["cpu_precision"],
                                         gpu_timeout=args.gpu_timeout,
                                         gpu_max_restarts=args.gpu_max_restarts,
                                         npu_options=npu_options(values),
                                         depth=self.depth)
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
    from . import bagio
    from . import fileio
    args, spec, keys = session.args, session.spec, session.keys
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

    cleanup: list[Callable[[], None]] = []
    try:
        # ---- open the input (errors here leave nothing behind) ----
        if kind == "bag" and session.camera_info is not None:
            raise CliError("--camera-info-yaml is for image folders and videos; a bag's "
                           "CameraInfo comes from the bag (--camera-info-topic)")
        if kind == "bag":
            bag = bagio.BagInput(in_path)
            cleanup.append(bag.close)
            cameras = bag_cameras(bag, args, keys)
            image_conns = [c for cam in cameras for c in cam.image_conns]
            info_conns = [c for cam in cameras for c in cam.info_conns]
            out_topics = {k: v for cam in cameras for k, v in cam.out_topics.items()} \
                if len(cameras) == 1 else {f"{cam.topic} {k}": v for cam in cameras
                                           for k, v in cam.out_topics.items()}
            copy_conns = _copy_connections(bag, args.copy, image_conns, info_conns)
            clash = sorted({c.topic for c in copy_conns}
                           & {t for cam in cameras for t in cam.out_topics.values()})
            if clash:
                raise CliError(f"output topic {clash[0]} is already in the input bag; choose "
                               f"another --out-namespace or --copy camera/none")
            total = sum(int(c.msgcount) for c in image_conns)
            with timer.stage("camera_info_index"):
                for cam in cameras:
                    cam.info_index = bagio.CameraInfoIndex(bag, cam.info_conns)
            # never another camera's calibration: the guess, said on stderr and in the summary
            summary["warnings"] = missing_camera_info(cameras, keys, args.fallback_hfov)
            for text in summary["warnings"]:
                warn(text)
            reference = reference_stream(args, in_path, scaler)
            if reference is not None:
                cleanup.append(reference.close)
            # A scaler per camera: each filter follows one camera's stream, as in the node.
            if len(cameras) > 1 and scaler is not None:
                for cam in cameras:
                    cam.scaler = scaler_for(args, spec, kind=kind)
            else:
                cameras[0].scaler = scaler
            events = bag_events(bag, cameras, copy_conns, timer, reference,
                                 camera_info_slop=args.camera_info_slop)
            if len(cameras) == 1:
                summary.update(topic=cameras[0].topic, camera_info_topic=cameras[0].info_note,
                               camera_infos=cameras[0].info_index.count)
            else:
                summary.update(topic=[cam.topic for cam in cameras],
                               camera_info_topic=[cam.info_note for cam in cameras],
                               camera_infos=[cam.info_index.count for cam in cameras])
            summary.update(output_topics=out_topics, bag_format=args.bag_format,
                           copy=args.copy)
            source_desc = f"{total} frames of {', '.join(cam.topic for cam in cameras)}"
        elif kind == "video":
            video = fileio.VideoInput(in_path)
            cleanup.append(video.close)
            total = video.frame_count
            check_calibration_size(session.camera_info, args.camera_info_yaml, video.size)
            events = _video_events(video, timer)
            summary.update(video_fps=video.fps)
            source_desc = f"{total or '?'} video frames"
        else:
            paths = [in_path] if kind == "image" else fileio.list_images(in_path)
            if not paths:
                bags = sorted(p.name for p in in_path.iterdir()
                              if p.suffix.lower() in bagio.BAG_SUFFIXES)
                hint = (f"; for a bag without metadata.yaml pass the file itself, e.g. "
                        f"{in_path / bags[0]}") if bags else ""
                raise CliError(f"folder '{in_path}' has no image files "
                               f"({', '.join(fileio.IMAGE_SUFFIXES)}){hint}")
            if kind == "image":
                fileio.read_image(in_path)  # an unreadable single image is an error
            if session.camera_info is not None:
                first = fileio.read_image(paths[0])
                check_calibration_size(session.camera_info, args.camera_info_yaml,
                                       (first.shape[1], first.shape[0]))
            total = len(paths)
            events = _image_events(paths, timer)
            source_desc = f"{total} image{'s' if total != 1 else ''}"
        if kind != "bag" and session.camera_info is not None:
            events = calibrated_frames(events, session.camera_info, args.camera_info_yaml)
            summary.update(camera_info_yaml=str(args.camera_info_yaml))
        if args.max_frames and total:
            total = min(total, args.max_frames)

        # ---- the model (loaded once per session) ----
        pipeline = session.pipeline()
        pipeline.timer = timer
        if pipeline.confidence_note() and not quiet and not default_confidence(
                {"points_min_confidence": pipeline.config.points_min_confidence}):
            warn(pipeline.confidence_note())  # asked for, not the default: say it can't act
        runner, fallback = pipeline.runner, session.fallback
        summary.update(
            model={"path": session.model_path, "kind": spec.kind, "name": spec.display_name,
                   "metric_depth": spec.metric_depth},
            backend=runner.description, backend_note=fallback,
            litert=litert_version(), outputs=session.groups,
            config=dict(vars(session.config)),
            depth_format=args.depth_format)

        # ---- the output ----
        if kind == "bag":
            bag_out = bagio.BagOutput(out_path, args.bag_format)
            try:  # the input topics first, then the outputs (the order tools list them in)
                target: Target = BagTarget(bag_out, copy_conns, summary)
                sinks = {cam.topic: bagio.BagSink(
                    bag_out, cam.namespace,
                    bag_keys(keys, getattr(args, "compressed", "off")),
                    depth_encoding="16UC1" if args.depth_format == "png16" else "32FC1",
                    compression=compression_config(session.values))
                    for cam in cameras}
                target.sink = next(iter(sinks.values())) if len(sinks) == 1 \
                    else bagio.CameraSinks(sinks)
            except BaseException:
                bag_out.close()
                raise
        else:
            target = FolderTarget(fileio.FolderSink(out_path, keys, args.depth_format),
                                  summary)
        if not quiet:
            print(f"{PROG}: {spec.display_name} on {runner.description}"
                  f"{' (GPU unavailable)' if fallback else ''}: {source_desc} -> {out_path}",
                  flush=True)
        code = run_frames(pipeline, session.request, events, target, total, args.max_frames,
                          after_frame, summary, scaler=scaler, progress=progress,
                          scaler_of=camera_scaler(cameras) if kind == "bag" else None,
                          quiet=quiet, overlap=session.overlap)
        return code, summary
    finally:
        for close in reversed(cleanup):
            close()


def _copy_connections(bag: Any, mode: str, image_conns: list[Any], info_conns: list[Any]
                      ) -> list[Any]:
    if mode == "none":
        return []
    if mode == "camera":
        return list(image_conns) + list(info_conns)
    return list(bag.connections)


def _image_events(paths: list[Path], timer: StageTimer) -> Iterator[Frame]:
    from .fileio import InputError, read_image
    stems = [p.stem for p in paths]
    dupes = {s for s in stems if stems.count(s) > 1}
    for index, path in enumerate(paths):
        stem = path.name.replace(".", "_") if path.stem in dupes else path.stem
        try:
            with timer.stage("read"):
                image = read_image(path)
        except InputError as exc:
            yield Frame(index, stem, None, problem=str(exc))
            continue
        yield Frame(index, stem, image, time=float(index))  # photos: 1 s apart


def _video_events(video: Any, timer: StageTimer) -> Iterator[Frame]:
    frames = video.frames()
    index = 0
    while True:
        with timer.stage("read"):
            image = next(frames, None)
        if image is None:
            return
        yield Frame(index, f"frame_{index:06d}", image, time=index / (video.fps or 30.0))
        index += 1
