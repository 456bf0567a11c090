"""``dense-perception``: the node's pipeline over recorded data, with no ROS install needed.

    dense-perception process INPUT --model M [--out OUT] [options]
    dense-perception info M

INPUT is an image file, a folder of images, a video (anything OpenCV reads) or a ROS 2 bag
(rosbag2 folder with MCAP or sqlite3 storage, or a bare .mcap / .db3 file). Images and videos
give a folder of files (see ``fileio``); a bag gives a new bag with the input topics plus the
node's output topics (see ``bagio``). Every frame goes through :class:`DensePipeline` (``infer``
then ``finish``), the node's code path; finishing and writing frame N overlaps the inference of
frame N+1, as in the node.

Exit status: 0 done, 2 error (one line on stderr says why), 130 interrupted by Ctrl-C (the
output is closed and valid, holding the frames done so far).
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import statistics
import sys
import threading
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import numpy as np

from .. import __version__
from ..core.fit import FIT_MODES, OUTPUT_RESOLUTIONS
from ..core.intrinsics import Intrinsics
from ..core.native_log import NativeLog, capture_native_stderr
from ..core.models import MODEL_TYPES, ModelSignatureError, ModelSpec, detect_model_spec, \
    format_signature
from ..core.parameters import PARAMS_BY_NAME
from ..core.pipeline import DensePipeline, PipelineConfig, Request, load_pipeline
from ..core.runner import (BACKENDS, ModelLoadError, check_model_file, litert_version, open_runner,
                     resolve_model_path)
from ..core.timing import StageTimer

PROG = "dense-perception"
EXIT_OK, EXIT_ERROR, EXIT_INTERRUPTED = 0, 2, 130
# --outputs groups -> (output keys, the model output they need)
OUTPUT_GROUPS: dict[str, tuple[tuple[str, ...], str]] = {
    "depth": (("depth", "depth_info", "depth_colored"), "depth"),
    "normals": (("normals", "normals_colored"), "normals"),
    "seg": (("labels", "labels_colored", "classes"), "segmentation_logits"),
    "points": (("points",), "depth"),
}
GROUP_ALIASES = {"segmentation": "seg", "labels": "seg", "point": "points", "cloud": "points"}
COPY_MODES = ("all", "camera", "none")
TIMER_WINDOW = 1_000_000  # keep every frame's stage times: summary.json covers the whole run


class CliError(RuntimeError):
    """A user-facing error: printed as one line, exit status 2."""


# ---- frames and events ------------------------------------------------------------------------
@dataclass
class Frame:
    """One input frame (``image`` None when it cannot be used; ``problem`` says why)."""

    index: int
    stem: str
    image: np.ndarray | None
    encoding: str = "bgr8"
    problem: str = ""
    header: Any = None          # bag input: the image message's header (outputs carry it)
    log_time: int = 0           # bag input: the image message's log time (ns)
    camera_info: Any = None     # bag input: the CameraInfo used
    camera_info_note: str = ""
    intrinsics: Intrinsics | None = None


@dataclass
class Copy:
    """An input bag message to copy unchanged into the output bag."""

    conn: Any
    log_time: int
    data: bytes


@dataclass
class RunStats:
    frames: int = 0
    rejected: int = 0
    guessed_intrinsics: int = 0
    intrinsics: dict[str, dict[str, Any]] = field(default_factory=dict)
    reject_reasons: dict[str, int] = field(default_factory=dict)


# ---- output ----------------------------------------------------------------------------------
def _say(text: str, stream=None) -> None:
    """Print a line without breaking a progress bar."""
    from tqdm import tqdm
    tqdm.write(text, file=stream or sys.stdout)


def warn(text: str) -> None:
    _say(f"{PROG}: warning: {text}", sys.stderr)


def _interactive() -> bool:
    return sys.stdout.isatty() and sys.stderr.isatty()


def quiet_native_stderr(enabled: bool = True) -> contextlib.AbstractContextManager[NativeLog]:
    """Capture what native libraries (LiteRT and its GPU probes) print on fd 2 meanwhile
    (core.native_log: the node uses the same capture); ``enabled=False`` lets it through."""
    return capture_native_stderr() if enabled else contextlib.nullcontext(NativeLog())


def _with_gpu_reason(message: str, log: NativeLog) -> str:
    """``message`` with the reason from LiteRT's captured log (which the user did not see)."""
    reason = log.gpu_reason()
    seen = "LiteRT's log above says why"  # runner.py's wording for a log the user saw
    if not reason:
        return message.replace(seen, "--verbose shows LiteRT's log")
    if seen in message:
        return message.replace(seen, f"LiteRT: {reason}")
    if reason in message:  # the runner quoted LiteRT's log already
        return message
    return f"{message} LiteRT: {reason}."


# ---- argument parsing -------------------------------------------------------------------------
def _default(name: str) -> Any:
    return PARAMS_BY_NAME[name].default


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG, description="Dense depth, normals, segmentation and point clouds from images, "
        "videos and ROS 2 bags, with the dense_perception node's pipeline (no ROS needed).")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True,
                                metavar="{process,info,export-da3}")

    p = sub.add_parser("process", help="run a model over an image, folder, video or bag",
                       description="Run a model over an image file, a folder of images, a video "
                       "or a ROS 2 bag (MCAP or sqlite3).")
    p.add_argument("input", help="image file, folder of images, video file, or ROS 2 bag "
                   "(rosbag2 folder, .mcap or .db3)")
    p.add_argument("--model", "-m", required=True, help=".tflite model file")
    p.add_argument("--out", "-o", help="output folder (images/video) or new bag folder (bag "
                   "input); default: <input>_dense next to the input")
    p.add_argument("--backend", choices=BACKENDS, default=_default("backend"),
                   help="gpu, cpu (XNNPACK) or auto (GPU if it initialises, else CPU)")
    p.add_argument("--threads", type=int, default=_default("num_threads"),
                   help="CPU threads; -1 = all cores")
    p.add_argument("--model-type", choices=MODEL_TYPES, default="auto")
    p.add_argument("--fit", choices=FIT_MODES, default=_default("fit"),
                   help="how frames meet the model input: crop, stretch, rotate")
    p.add_argument("--output-resolution", choices=OUTPUT_RESOLUTIONS,
                   default=_default("output_resolution"),
                   help="outputs on the model grid or at the input size")
    p.add_argument("--outputs", default="all", help="comma-separated subset of depth, normals, "
                   "seg, points (default: all the model provides)")
    p.add_argument("--depth-format", choices=("npy", "png16"), default="npy",
                   help="depth data: float32 metres (.npy files / 32FC1 in bags) or 16-bit "
                   "millimetres (PNG files / 16UC1 in bags)")
    p.add_argument("--relative-depth-scale", type=float,
                   default=_default("relative_depth_scale"))
    p.add_argument("--max-depth", type=float, default=_default("max_depth"),
                   help="drop points farther than this (m); 0 = no limit")
    p.add_argument("--points-stride", type=int, default=_default("points_stride"))
    p.add_argument("--points-organized", action="store_true")
    p.add_argument("--no-points-rgb", action="store_true", help="points without colour")
    p.add_argument("--fallback-hfov", type=float, default=_default("fallback_hfov_deg"),
                   help="horizontal FOV (deg) of the pinhole guess used without CameraInfo")
    p.add_argument("--max-frames", type=int, default=0, help="stop after N frames (0 = all)")
    bag = p.add_argument_group("bag input")
    bag.add_argument("--topic", "-t", help="image topic (sensor_msgs/Image or CompressedImage); "
                     "optional when the bag has only one")
    bag.add_argument("--camera-info-topic", help="CameraInfo topic (default: camera_info "
                     "beside the image topic)")
    bag.add_argument("--out-namespace", help="namespace of the output topics (default: the "
                     "image topic's, e.g. /camera for /camera/image_raw)")
    bag.add_argument("--bag-format", choices=("mcap", "sqlite3"), default="mcap",
                     help="storage of the output bag")
    bag.add_argument("--copy", choices=COPY_MODES, default="all", help="input topics copied "
                     "into the output bag: all, camera (image + CameraInfo) or none")
    p.add_argument("--verbose", "-v", action="store_true",
                   help="show what LiteRT prints while loading")
    p.set_defaults(func=cmd_process)

    i = sub.add_parser("info", help="what a model file is and how fast it runs here",
                       description="Show a model's kind, signature and size, and which backends "
                       "initialise here with their warm invoke time.")
    i.add_argument("model", help=".tflite model file")
    i.add_argument("--threads", type=int, default=-1, help="CPU threads; -1 = all cores")
    i.add_argument("--runs", type=int, default=5, help="timed invokes per backend")
    i.add_argument("--backends", default="cpu,gpu", help="backends to try (cpu,gpu)")
    i.add_argument("--json", action="store_true", help="print JSON")
    i.add_argument("--verbose", "-v", action="store_true",
                   help="show what LiteRT prints while loading")
    i.set_defaults(func=cmd_info)

    from ..export.export_da3 import add_export_da3_parser  # torch is imported only when it runs
    add_export_da3_parser(sub)
    return parser


def main(argv: list[str] | None = None, *,
         after_frame: Callable[[int], None] | None = None) -> int:
    """Console entry point. ``after_frame(n)`` (tests) runs after the n-th frame is inferred."""
    args = build_parser().parse_args(argv)
    try:
        if args.command == "process":
            return cmd_process(args, after_frame=after_frame)
        return args.func(args)
    except (CliError, ModelLoadError, ModelSignatureError) as exc:
        _error(exc)
        return EXIT_ERROR
    except KeyboardInterrupt:  # before any output exists
        print(f"{PROG}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def _error(exc: BaseException | str) -> None:
    from .bagio import one_line
    sys.stderr.write(f"{PROG}: error: {one_line(exc, 1000)}\n")
    sys.stderr.flush()


def parse_outputs(text: str, spec: ModelSpec) -> tuple[list[str], list[str]]:
    """(groups, output keys) for ``--outputs`` on this model; CliError when it cannot give one."""
    available = [g for g, (_, kind) in OUTPUT_GROUPS.items() if spec.output_index(kind) is not None]
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
    keys = [k for g in groups for k in OUTPUT_GROUPS[g][0]]
    return groups, keys


def request_for(groups: list[str], points_rgb: bool) -> Request:
    return Request(depth="depth" in groups, depth_colored="depth" in groups,
                   normals="normals" in groups, normals_colored="normals" in groups,
                   labels="seg" in groups, labels_colored="seg" in groups,
                   points="points" in groups, points_rgb="points" in groups and points_rgb)


# ---- process ------------------------------------------------------------------------------------
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


def cmd_process(args: argparse.Namespace,
                after_frame: Callable[[int], None] | None = None) -> int:
    from .bagio import BagError
    from .fileio import InputError
    try:
        return _process(args, after_frame)
    except (BagError, InputError) as exc:
        raise CliError(str(exc)) from None


def _process(args: argparse.Namespace, after_frame: Callable[[int], None] | None) -> int:
    from . import bagio
    from . import fileio

    config = PipelineConfig(
        fit=args.fit, output_resolution=args.output_resolution,
        relative_depth_scale=args.relative_depth_scale, max_depth=args.max_depth,
        points_stride=args.points_stride, points_organized=args.points_organized,
        fallback_hfov_deg=args.fallback_hfov)
    problem = config.problem()
    if problem:
        raise CliError(problem)
    if args.max_frames < 0:
        raise CliError(f"--max-frames must be >= 0, got {args.max_frames}")
    # The model file first: a missing or unsupported model fails before any input is opened.
    model_path = resolve_model_path(args.model)
    signature = check_model_file(model_path)
    spec = detect_model_spec(signature.input_shapes, signature.output_shapes, args.model_type,
                             source=f"model file '{model_path}'")
    groups, keys = parse_outputs(args.outputs, spec)
    request = request_for(groups, points_rgb=not args.no_points_rgb)

    in_path = Path(args.input)
    kind = input_kind(in_path)
    out_path = Path(args.out) if args.out else default_out(in_path)
    if out_path.resolve() == in_path.resolve():
        raise CliError(f"output '{out_path}' is the input; choose another --out")
    fileio.check_new_output(out_path)
    timer = StageTimer(window=TIMER_WINDOW)
    summary: dict[str, Any] = {"input": str(in_path), "input_kind": kind,
                               "output": str(out_path)}

    cleanup: list[Callable[[], None]] = []
    try:
        # ---- open the input (errors here leave nothing behind) ----
        if kind == "bag":
            bag = bagio.BagInput(in_path)
            cleanup.append(bag.close)
            image_conns = bag.image_connections(args.topic)
            image_topic = image_conns[0].topic
            info_conns, info_note = bag.camera_info_connections(args.camera_info_topic,
                                                                image_topic)
            namespace = args.out_namespace if args.out_namespace is not None \
                else bagio.namespace_of(image_topic)
            out_topics = {k: v for k, v in bagio.output_topic_names(namespace).items()
                          if k in keys}
            copy_conns = _copy_connections(bag, args.copy, image_conns, info_conns)
            clash = sorted({c.topic for c in copy_conns} & set(out_topics.values()))
            if clash:
                raise CliError(f"output topic {clash[0]} is already in the input bag; choose "
                               f"another --out-namespace or --copy camera/none")
            total = sum(int(c.msgcount) for c in image_conns)
            with timer.stage("camera_info_index"):
                info_index = bagio.CameraInfoIndex(bag, info_conns)
            if request.points and not info_index.count:
                warn(f"no CameraInfo for {image_topic} (camera info topic: {info_note}); points "
                     f"use a {args.fallback_hfov:g} deg pinhole guess (--camera-info-topic)")
            events = _bag_events(bag, image_conns, copy_conns, info_index, timer)
            summary.update(topic=image_topic, camera_info_topic=info_note,
                           camera_infos=info_index.count, output_topics=out_topics,
                           bag_format=args.bag_format, copy=args.copy)
            source_desc = f"{total} frames of {image_topic}"
        elif kind == "video":
            video = fileio.VideoInput(in_path)
            cleanup.append(video.close)
            total = video.frame_count
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
            total = len(paths)
            events = _image_events(paths, timer)
            source_desc = f"{total} image{'s' if total != 1 else ''}"
        if args.max_frames and total:
            total = min(total, args.max_frames)

        # ---- the model ----
        notes: list[str] = []
        failure = None
        with quiet_native_stderr(not args.verbose) as native:
            try:
                pipeline = load_pipeline(model_path, args.model_type, args.backend,
                                         args.threads, config, log=notes.append)
            except ModelLoadError as exc:
                failure = str(exc)
        if failure is not None:
            raise ModelLoadError(_with_gpu_reason(failure, native) if args.backend == "gpu"
                                 and not args.verbose else failure)
        pipeline.timer = timer
        runner = pipeline.runner
        fallback = getattr(runner, "fallback_note", "") or next(
            (n for n in notes if n.startswith("GPU unavailable")), "")
        if fallback and not args.verbose:
            fallback = _with_gpu_reason(fallback, native)
        summary.update(
            model={"path": model_path, "kind": spec.kind, "name": spec.display_name,
                   "metric_depth": spec.metric_depth},
            backend=runner.description, backend_note=fallback,
            litert=litert_version(), outputs=groups,
            config=dict(vars(config)),
            depth_format=args.depth_format)

        # ---- the output ----
        if kind == "bag":
            bag_out = bagio.BagOutput(out_path, args.bag_format)
            try:  # the input topics first, then the outputs (the order tools list them in)
                target: _Target = _BagTarget(bag_out, copy_conns, summary)
                target.sink = bagio.BagSink(
                    bag_out, namespace, keys,
                    depth_encoding="16UC1" if args.depth_format == "png16" else "32FC1")
            except BaseException:
                bag_out.close()
                raise
        else:
            target = _FolderTarget(fileio.FolderSink(out_path, keys, args.depth_format),
                                   summary)
        print(f"{PROG}: {spec.display_name} on {runner.description}"
              f"{' (GPU unavailable)' if fallback else ''}: {source_desc} -> {out_path}",
              flush=True)
        return _run(pipeline, request, events, target, total, args.max_frames, after_frame,
                    summary)
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
        yield Frame(index, stem, image)


def _video_events(video: Any, timer: StageTimer) -> Iterator[Frame]:
    frames = video.frames()
    index = 0
    while True:
        with timer.stage("read"):
            image = next(frames, None)
        if image is None:
            return
        yield Frame(index, f"frame_{index:06d}", image)
        index += 1


def _bag_events(bag: Any, image_conns: list[Any], copy_conns: list[Any], info_index: Any,
                timer: StageTimer) -> Iterator[Frame | Copy]:
    from .bagio import message_to_frame
    from ..core.conversions import BadImageError, camera_info_to_intrinsics
    image_ids = {c.id for c in image_conns}
    copy_ids = {c.id for c in copy_conns}
    wanted = list({c.id: c for c in list(image_conns) + list(copy_conns)}.values())
    index = 0
    for conn, log_time, data in bag.messages(wanted):
        if conn.id in copy_ids:
            yield Copy(conn, log_time, data)
        if conn.id not in image_ids:
            continue
        stem = f"{index:06d}"
        try:
            with timer.stage("read"):
                msg = bag.decode(conn, data)
                image, encoding = message_to_frame(conn.msgtype, msg)
                info, note = info_index.lookup(msg.header, log_time)
        except BadImageError as exc:
            yield Frame(index, stem, None, problem=str(exc), log_time=log_time)
        else:
            yield Frame(index, stem, image, encoding, header=msg.header, log_time=log_time,
                        camera_info=info, camera_info_note=note,
                        intrinsics=None if info is None else camera_info_to_intrinsics(info))
        index += 1


# ---- targets: where finished frames go --------------------------------------------------------
class _Target:
    def frame(self, frame: Frame, products: Any) -> None: ...
    def copy(self, item: Copy) -> None: ...
    def close(self, summary: dict[str, Any]) -> None: ...


class _FolderTarget(_Target):
    def __init__(self, sink: Any, summary: dict[str, Any]) -> None:
        self.sink = sink

    def frame(self, frame: Frame, products: Any) -> None:
        self.sink.write(frame.stem, products)

    def close(self, summary: dict[str, Any]) -> None:
        from .fileio import write_json
        summary["files"] = dict(self.sink.counts)
        write_json(self.sink.root / "summary.json", summary)


class _BagTarget(_Target):
    sink: Any  # bagio.BagSink, set once the copied connections are in

    def __init__(self, out: Any, copy_conns: list[Any], summary: dict[str, Any]) -> None:
        self.out = out
        self._copy: dict[int, Any] = {}
        skipped = []
        for conn in copy_conns:
            made = out.copy_connection(conn)
            if made is None:
                skipped.append(conn.topic)
            else:
                self._copy[conn.id] = made
        if skipped:
            warn(f"not copied (no message definition in the bag): {', '.join(sorted(skipped))}")
        summary["not_copied"] = sorted(skipped)

    def frame(self, frame: Frame, products: Any) -> None:
        self.sink.write(products, frame.header, frame.log_time, frame.camera_info)

    def copy(self, item: Copy) -> None:
        conn = self._copy.get(item.conn.id)
        if conn is not None:
            self.out.write_raw(conn, item.log_time, item.data)

    def close(self, summary: dict[str, Any]) -> None:
        from .fileio import write_json
        try:
            self.out.close()
        finally:
            summary["messages"] = dict(sorted(self.out.counts.items()))
            write_json(self.out.path / "summary.json", summary)


# ---- the loop -----------------------------------------------------------------------------------
class _Overlap:
    """Inference on a worker thread, everything else (reading, finishing, writing) on this one,
    so the next frame's inference overlaps finishing and writing this one, as in the node.
    (The writers are not thread-safe, and sqlite3 insists on its creating thread.)

    Items keep their input order: copied messages and frames are written in the order read.
    At most two frames are in flight (one inferring, one waiting).
    """

    def __init__(self, pipeline: DensePipeline, request: Request,
                 write_copy: Callable[[Copy], None],
                 write_frame: Callable[[Frame, Any], None],
                 reject: Callable[[Frame, str], None]) -> None:
        self._pipeline, self._request = pipeline, request
        self._write_copy, self._write_frame, self._reject = write_copy, write_frame, reject
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="dense-perception-infer")
        self._pending: deque[tuple[Any, Any]] = deque()
        self._in_flight = 0

    def add_copy(self, item: Copy) -> None:
        if self._pending:
            self._pending.append((item, None))
        else:
            self._write_copy(item)

    def add_frame(self, frame: Frame) -> None:
        future = self._pool.submit(self._pipeline.infer, frame.image, frame.encoding,
                                   self._request)
        self._pending.append((frame, future))
        self._in_flight += 1
        self._drain(keep_frames=1)

    def _drain(self, keep_frames: int) -> None:
        """Write items from the head until only ``keep_frames`` frames are in flight."""
        while self._pending:
            item, future = self._pending[0]
            if future is not None:
                if self._in_flight <= keep_frames:
                    return
                try:
                    raw = future.result()
                except ValueError as exc:  # a frame that does not match its encoding
                    self._pending.popleft()
                    self._in_flight -= 1
                    self._reject(item, str(exc))
                    continue
                self._pending.popleft()
                self._in_flight -= 1
                self._write_frame(item, raw)
            else:
                self._pending.popleft()
                self._write_copy(item)

    def finish(self) -> None:
        """Write everything still pending (frames whose inference was started)."""
        try:
            self._drain(keep_frames=0)
        finally:
            self.close()

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


def _run(pipeline: DensePipeline, request: Request, events: Iterable[Frame | Copy],
         target: _Target, total: int | None, max_frames: int,
         after_frame: Callable[[int], None] | None, summary: dict[str, Any]) -> int:
    from tqdm import tqdm

    from .fileio import timing_summary
    stats = RunStats()
    timer = pipeline.timer
    bar = tqdm(total=total, unit="frame", dynamic_ncols=True, disable=not _interactive(),
               file=sys.stderr, smoothing=0.1)

    def write_frame(frame: Frame, raw: Any) -> None:
        products = pipeline.finish(raw, frame.intrinsics)
        with timer.stage("write"):
            target.frame(frame, products)
        _record_intrinsics(stats, frame, products)
        stats.frames += 1
        bar.update(1)

    def reject(frame: Frame, reason: str) -> None:
        stats.rejected += 1
        if reason not in stats.reject_reasons:
            warn(f"frame {frame.index} skipped: {reason}")
        stats.reject_reasons[reason] = stats.reject_reasons.get(reason, 0) + 1
        bar.update(1)

    overlap = _Overlap(pipeline, request, target.copy, write_frame, reject)
    stop = _StopOnSigint()
    started = time.monotonic()
    interrupted, error = False, None
    submitted = 0
    iterator = iter(events)
    try:
        with stop:
            while not (max_frames and submitted >= max_frames) and not stop.requested:
                event = next(iterator, None)
                if event is None:
                    break
                if isinstance(event, Copy):
                    overlap.add_copy(event)
                elif event.image is None:
                    reject(event, event.problem)
                else:
                    overlap.add_frame(event)
                    submitted += 1
                    if after_frame is not None:
                        after_frame(submitted)
            # Frames already handed to inference are finished and written, also after Ctrl-C.
            overlap.finish()
    except KeyboardInterrupt:  # a second Ctrl-C (or a test's hook): stop at once
        interrupted = True
        with contextlib.suppress(BaseException):
            overlap.close()
    except Exception as exc:  # noqa: BLE001 - e.g. a bag damaged half-way: keep what was done
        error = exc
    finally:
        previous = _ignore_sigint()
        try:
            bar.close()
            elapsed = time.monotonic() - started
            summary.update(
                frames=stats.frames, rejected=stats.rejected,
                reject_reasons=stats.reject_reasons, total=total,
                interrupted=interrupted or stop.requested,
                error=None if error is None else _describe(error),
                seconds=round(elapsed, 3),
                fps=round(stats.frames / elapsed, 3) if elapsed > 0 else None,
                timing_ms=timing_summary(timer.stats()),
                intrinsics=stats.intrinsics, guessed_intrinsics_frames=stats.guessed_intrinsics)
            target.close(summary)
        finally:
            _restore_sigint(previous)
        _close_events(iterator)
    interrupted = interrupted or stop.requested
    out = summary["output"]
    if interrupted:
        print(f"{PROG}: interrupted after {stats.frames} frames; {out} is closed and holds "
              f"them", file=sys.stderr)
        return EXIT_INTERRUPTED
    if error is not None:
        if _is_user_error(error):
            _error(f"{_describe(error)} ({stats.frames} frames done are in {out})")
            return EXIT_ERROR
        raise error
    if stats.frames == 0 and stats.rejected:
        _error(f"no frame could be used: {next(iter(stats.reject_reasons))}")
        return EXIT_ERROR
    fps = summary["fps"] or 0.0
    extra = f", {stats.rejected} skipped" if stats.rejected else ""
    print(f"{PROG}: {stats.frames} frames{extra} in {summary['seconds']:.1f} s "
          f"({fps:.2f} fps) -> {out}", flush=True)
    return EXIT_OK


def _close_events(iterator: Iterator[Any]) -> None:
    close = getattr(iterator, "close", None)
    if close is not None:
        with contextlib.suppress(Exception):
            close()


def _is_user_error(exc: BaseException) -> bool:
    from .bagio import BagError
    from .fileio import InputError
    return isinstance(exc, (BagError, InputError, CliError, OSError))


def _describe(exc: BaseException) -> str:
    from .bagio import one_line
    return one_line(exc) if _is_user_error(exc) else f"{type(exc).__name__}: {one_line(exc)}"


class _StopOnSigint:
    """The first Ctrl-C asks the loop to stop after the frames in flight; a second one raises
    KeyboardInterrupt at once (the output is still closed, its last frame maybe incomplete)."""

    def __init__(self) -> None:
        self.requested = False
        self._previous: Any = None

    def __enter__(self) -> "_StopOnSigint":
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._handle)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)

    def _handle(self, signum: int, frame: Any) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True
        warn("stopping after the frames in flight (Ctrl-C again to stop at once)")


def _ignore_sigint() -> Any:
    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGINT, signal.SIG_IGN)


def _restore_sigint(previous: Any) -> None:
    if previous is not None:
        signal.signal(signal.SIGINT, previous)


def _record_intrinsics(stats: RunStats, frame: Frame, products: Any) -> None:
    if products.intrinsics_guessed:
        stats.guessed_intrinsics += 1
    image = frame.image
    key = f"{image.shape[1]}x{image.shape[0]}"
    if key not in stats.intrinsics and products.intrinsics is not None:
        k = products.intrinsics
        stats.intrinsics[key] = {
            "published": {"fx": k.fx, "fy": k.fy, "cx": k.cx, "cy": k.cy, "width": k.width,
                          "height": k.height},
            "guessed": products.intrinsics_guessed,
            "note": products.intrinsics_note or frame.camera_info_note}
        if products.intrinsics_guessed and frame.camera_info is not None:
            warn(products.intrinsics_note)


# ---- info ---------------------------------------------------------------------------------------
def cmd_info(args: argparse.Namespace) -> int:
    import json as _json
    path = resolve_model_path(args.model)
    signature = check_model_file(path)
    report: dict[str, Any] = {
        "path": path, "size_bytes": signature.file_size, "operators": signature.operator_count,
        "signature": format_signature(signature.input_shapes, signature.output_shapes),
        "litert": litert_version()}
    spec_error = None
    try:
        spec = detect_model_spec(signature.input_shapes, signature.output_shapes,
                                 source=f"model file '{path}'")
    except ModelSignatureError as exc:
        spec, spec_error = None, exc
    if spec is not None:
        report.update(kind=spec.kind, name=spec.display_name, metric_depth=spec.metric_depth,
                      input={"shape": list(spec.input_shape), "scale": spec.scale,
                             "mean": list(spec.mean), "std": list(spec.std)},
                      outputs=[{"name": o.name, "kind": o.kind, "shape": list(o.shape),
                                "description": o.description} for o in spec.outputs],
                      source=spec.source)
        backends = [b.strip() for b in args.backends.split(",") if b.strip()]
        bad = [b for b in backends if b not in ("cpu", "gpu")]
        if bad:
            raise CliError(f"--backends: '{bad[0]}' is unknown; use cpu and/or gpu")
        report["backends"] = {b: _time_backend(path, b, args.threads, max(1, args.runs),
                                               quiet=not args.verbose) for b in backends}
    if args.json:
        print(_json.dumps(report, indent=2))
    else:
        _print_info(report)
    if spec_error is not None:
        raise spec_error
    return EXIT_OK


def _time_backend(path: str, backend: str, threads: int, runs: int, quiet: bool
                  ) -> dict[str, Any]:
    from .bagio import one_line
    error = None
    with quiet_native_stderr(quiet) as native:
        try:
            runner = open_runner(path, backend, threads, log=lambda _: None, warmup=True)
            times = []
            for _ in range(runs):
                start = time.perf_counter()
                runner.run()
                times.append((time.perf_counter() - start) * 1000.0)
        except ModelLoadError as exc:
            error = one_line(exc)
    if error is not None:
        return {"ok": False, "error": _with_gpu_reason(error, native) if quiet and
                backend == "gpu" else error}
    return {"ok": True, "description": runner.description, "runs": runs,
            "median_ms": round(statistics.median(times), 3), "min_ms": round(min(times), 3)}


def _print_info(report: dict[str, Any]) -> None:
    size = report["size_bytes"]
    human = f"{size / 1e6:.1f} MB" if size >= 1e6 else f"{size / 1e3:.1f} kB"
    rows = [("file", f"{report['path']} ({human}, {report['operators']} operators)")]
    if "kind" in report:
        depth = "metric" if report["metric_depth"] else "relative"
        rows.append(("kind", f"{report['kind']}: {report['name']} ({depth} depth)"))
        inp = report["input"]
        rows.append(("input", "[" + ",".join(map(str, inp["shape"])) + "] float32 NCHW RGB, "
                     f"x / {inp['scale']:g}, mean {tuple(inp['mean'])}, std {tuple(inp['std'])}"))
        for n, out in enumerate(report["outputs"]):
            rows.append(("outputs" if n == 0 else "", f"{out['name']} ["
                         + ",".join(map(str, out["shape"])) + f"]: {out['description']}"))
        rows.append(("source", report["source"]))
    else:
        rows.append(("signature", report["signature"]))
    rows.append(("litert", f"ai-edge-litert {report['litert']}"))
    for n, (name, result) in enumerate(report.get("backends", {}).items()):
        if result["ok"]:
            text = (f"{name}: {result['description']}, warm invoke median "
                    f"{result['median_ms']:.1f} ms ({result['runs']} runs)")
        else:
            text = f"{name}: not available here: {result['error']}"
        rows.append(("backends" if n == 0 else "", text))
    for label, text in rows:
        print(f"{label:<10} {text}")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
