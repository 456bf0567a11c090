# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The frame loop of ``dense-perception process``: input events in, finished frames out.

Every frame goes through :class:`DensePipeline` (``infer`` then ``finish``), the node's code
path; finishing and writing frame N overlaps the inference of frame N+1, as in the node. A
target (a folder of files or a new bag) takes the finished frames and, when closed, writes
``summary.json``. Ctrl-C stops after the frames in flight and leaves the output closed and valid.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator


from ...core.camera_track import CameraTrack
from ...core.product_table import skipped
from ...core.scale.scale_tally import ScaleTally
from ...core.pipeline import DensePipeline
from ...core.frame_data import Request
from ...core.scheduling.two_stage import OrderedTwoStage
from .. import console
from ..inputs.events import Copy, Frame, Target
from ..console import (EXIT_ERROR, EXIT_INTERRUPTED, EXIT_OK, PROG, describe, interactive,
                      is_user_error, warn)


@dataclass
class RunStats:
    """What one run did (for summary.json)."""

    frames: int = 0
    rejected: int = 0
    guessed_intrinsics: int = 0
    intrinsics: dict[str, dict[str, Any]] = field(default_factory=dict)
    reject_reasons: dict[str, int] = field(default_factory=dict)
    # added products (product_table.register) left out of frames: frames per key, and per
    # "key: reason" (the first frame's words for each kind of fault)
    skipped_products: dict[str, int] = field(default_factory=dict)
    skip_reasons: dict[str, int] = field(default_factory=dict)
    skip_kinds: dict[tuple[str, str], str] = field(default_factory=dict)

    def skip(self, key: str, kind: str, text: str) -> None:
        """Count added product ``key`` left out of one frame; say why, once per reason."""
        first = self.skip_kinds.get((key, kind))
        if first is None:
            first = self.skip_kinds[(key, kind)] = f"{key}: {text}"
            warn(f"product '{key}' skipped: {text} (the frame's other products are written; "
                 f"summary.json counts the frames)")
        self.skipped_products[key] = self.skipped_products.get(key, 0) + 1
        self.skip_reasons[first] = self.skip_reasons.get(first, 0) + 1


# ---- the loop -----------------------------------------------------------------------------------
def run_frames(pipeline: DensePipeline, request: Request, events: Iterable[Frame | Copy],
               target: Target, total: int | None, max_frames: int,
               after_frame: Callable[[int], None] | None, summary: dict[str, Any],
               track_of: Callable[[Frame], CameraTrack], *,
               progress: Callable[[int], None] | None = None,
               quiet: bool = False, overlap: bool = True, require_metres: bool = False) -> int:
    """Run every event through the pipeline into ``target``, close it (writing summary.json
    from ``summary``) and return the exit status.

    ``progress(n)`` (many inputs) is told of every frame instead of this run's own bar;
    ``quiet`` leaves the closing line and error to the caller (they are in ``summary``);
    ``overlap=False`` runs each frame's stages one after another (one core's worth of work);
    ``require_metres``: a run whose scale was to be estimated and that gave no frame in metres
    exits :data:`EXIT_ERROR`.
    ``track_of(frame)``: the track of the camera the frame came from (its scale filter and
    motion state; frames with poses carry them in ``Frame.pose``).
    """
    from tqdm import tqdm
    bar = tqdm(total=total, unit="frame", dynamic_ncols=True,
               disable=progress is not None or not interactive(), file=sys.stderr, smoothing=0.1)
    if progress is not None:
        bar.update = progress  # type: ignore[method-assign]
    writer = _FrameWriter(pipeline, target, bar, track_of)
    # Inference on a worker thread, everything else (reading, finishing, writing) on this one,
    # so the next frame's inference overlaps finishing and writing this one, as in the node.
    # (The writers are not thread-safe, and sqlite3 insists on its creating thread.)
    stages: OrderedTwoStage[Frame | Copy, Any] = OrderedTwoStage(
        lambda f: pipeline.infer(f.image, f.encoding, request,
                                 pipeline.camera_from_info(f.camera_info)),
        in_flight=2 if overlap else 1, catch=(ValueError,), name="dense-perception-infer")
    stop = _StopOnSigint()
    started = time.monotonic()
    interrupted, error = False, None
    iterator = iter(events)
    try:
        with stop:
            _feed(iterator, stages, writer, max_frames, after_frame, stop)
            # Frames already handed to inference are finished and written, also after Ctrl-C.
            writer.handle(stages.drain())
    except KeyboardInterrupt:  # a second Ctrl-C (or a test's hook): stop at once
        interrupted = True
        with contextlib.suppress(BaseException):
            stages.close()
    except Exception as exc:  # noqa: BLE001 - e.g. a bag damaged half-way: keep what was done
        error = exc
    finally:
        stages.close()
        _close_run(writer, summary, total, time.monotonic() - started,
                   interrupted or stop.requested, error)
        _close_events(iterator)
    return _exit_status(summary, writer, error, interrupted or stop.requested, quiet,
                        require_metres)


class _FrameWriter:
    """Finishes the frames the overlap hands back and writes them, in input order; counts
    them, the rejected ones and their scales."""

    def __init__(self, pipeline: DensePipeline, target: Target, bar: Any,
                 track_of: Callable[[Frame], CameraTrack]) -> None:
        self.pipeline, self.target, self.bar, self.track_of = pipeline, target, bar, track_of
        self.stats = RunStats()
        self.scales = ScaleTally()

    def handle(self, due: Iterable[tuple[Frame | Copy, Any]]) -> None:
        for item, result in due:
            if isinstance(item, Copy):
                self.target.copy(item)
            elif isinstance(result, ValueError):  # a frame that does not match its encoding
                self.reject(item, str(result))
            else:
                self.write(item, result)

    def write(self, frame: Frame, raw: Any) -> None:
        products = self.track_of(frame).finish(self.pipeline, raw, frame.time,
                                               pose=frame.pose, reference=frame.reference)
        self.scales.add(products.scale, frame.stem, frame.time)
        with self.pipeline.timer.stage("write"):
            self.target.frame(frame, products)
        for key, skip in skipped(products).items():
            self.stats.skip(key, skip.kind, skip.text)
        _record_intrinsics(self.stats, frame, products)
        self.stats.frames += 1
        self.bar.update(1)

    def reject(self, frame: Frame, reason: str) -> None:
        stats = self.stats
        stats.rejected += 1
        if reason not in stats.reject_reasons:
            warn(f"frame {frame.index} skipped: {reason}")
        stats.reject_reasons[reason] = stats.reject_reasons.get(reason, 0) + 1
        self.bar.update(1)


def _feed(iterator: Iterator[Frame | Copy], stages: OrderedTwoStage, writer: _FrameWriter,
          max_frames: int, after_frame: Callable[[int], None] | None,
          stop: "_StopOnSigint") -> None:
    """Hand the events to the overlap (at most ``max_frames`` frames, until Ctrl-C)."""
    submitted = 0
    while not (max_frames and submitted >= max_frames) and not stop.requested:
        event = next(iterator, None)
        if event is None:
            return
        if isinstance(event, Copy):
            writer.handle(stages.add_passthrough(event))
        elif event.image is None:
            writer.reject(event, event.problem)
        else:
            writer.handle(stages.add(event))
            submitted += 1
            if after_frame is not None:
                after_frame(submitted)


def _close_run(writer: _FrameWriter, summary: dict[str, Any], total: int | None,
               elapsed: float, interrupted: bool, error: Exception | None) -> None:
    """Complete ``summary`` and close the target (which writes it), Ctrl-C held off."""
    from ..inputs.file_io import timing_summary
    stats = writer.stats
    previous = _ignore_sigint()
    try:
        writer.bar.close()
        summary.update(
            frames=stats.frames, rejected=stats.rejected,
            reject_reasons=stats.reject_reasons, skipped_products=stats.skipped_products,
            skip_reasons=stats.skip_reasons, total=total, interrupted=interrupted,
            error=None if error is None else describe(error),
            seconds=round(elapsed, 3),
            fps=round(stats.frames / elapsed, 3) if elapsed > 0 else None,
            timing_ms=timing_summary(writer.pipeline.timer.stats()),
            intrinsics=stats.intrinsics, guessed_intrinsics_frames=stats.guessed_intrinsics,
            depth=writer.scales.summary())
        writer.target.close(summary)
    finally:
        _restore_sigint(previous)


def _exit_status(summary: dict[str, Any], writer: _FrameWriter, error: Exception | None,
                 interrupted: bool, quiet: bool, require_metres: bool = False) -> int:
    """The run's exit status; unless ``quiet``, its closing lines or error on the console."""
    out, stats, scales = summary["output"], writer.stats, writer.scales
    never = _never_made(stats)
    no_metres = require_metres and scales.estimated() and not scales.metric
    if quiet:
        if error is not None and not is_user_error(error):
            raise error
        return EXIT_INTERRUPTED if interrupted else EXIT_ERROR if error is not None or never or (
            stats.frames == 0 and stats.rejected) or no_metres else EXIT_OK
    if interrupted:
        print(f"{PROG}: interrupted after {stats.frames} frames; {out} is closed and holds "
              f"them", file=sys.stderr)
        return EXIT_INTERRUPTED
    if error is not None:
        if is_user_error(error):
            console.error(f"{describe(error)} ({stats.frames} frames done are in {out})")
            return EXIT_ERROR
        raise error
    if stats.frames == 0 and stats.rejected:
        console.error(f"no frame could be used: {next(iter(stats.reject_reasons))}")
        return EXIT_ERROR
    fps = summary["fps"] or 0.0
    extra = f", {stats.rejected} skipped" if stats.rejected else ""
    if stats.skipped_products:
        extra += " (" + ", ".join(f"{key} left out of {count}" for key, count in
                                  stats.skipped_products.items()) + ")"
    print(f"{PROG}: {stats.frames} frames{extra} in {summary['seconds']:.1f} s "
          f"({fps:.2f} fps) -> {out}", flush=True)
    said = scales.closing_line()
    if said:  # what came out of an estimated scale, the last line a user reads
        print(f"{PROG}: depth: {said}", flush=True)
    if no_metres:
        console.error("no frame came out in metres and --require-metres was given (why: "
                      "summary.json's depth.withheld_by_reason)")
        return EXIT_ERROR
    if never:
        # A product asked for and made on no frame is a failed run, not a warning to scroll past.
        console.error("; ".join(never) + f" (the other products are in {out})")
        return EXIT_ERROR
    return EXIT_OK


def _never_made(stats: RunStats) -> list[str]:
    """An added product left out of every frame of the run, each with the first reason."""
    if stats.frames == 0:
        return []
    return [f"product '{key}' was left out of all {count} frames: "
            + next((r.split(": ", 1)[1] for r in stats.skip_reasons if r.startswith(f"{key}: ")),
                   "see the warning above")
            for key, count in stats.skipped_products.items() if count >= stats.frames]


def _close_events(iterator: Iterator[Any]) -> None:
    close = getattr(iterator, "close", None)
    if close is not None:
        with contextlib.suppress(Exception):
            close()


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
            "note": products.intrinsics_note or products.camera_note or frame.camera_info_note}
        if products.intrinsics_guessed and frame.camera_info is not None:
            warn(products.intrinsics_note)
        if products.camera_note:
            warn(products.camera_note)


