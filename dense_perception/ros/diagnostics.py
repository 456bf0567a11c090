# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The node's health as a diagnostic_msgs/DiagnosticArray (per-stage timing, rates, drops)."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue

from ..core.timing import StageStats

ERROR_AFTER_FAILURES = 3  # consecutive failed frames before the level turns ERROR
# A stall: frames keep arriving, no output for this many frame times (WARN, then ERROR). A frame
# time is the measured mean (before the first frame: the model's warm-up), at least 0.2 s, so
# a hiccup of a fast model is not a stall.
STALL_WARN_PERIODS, STALL_ERROR_PERIODS, STALL_MIN_PERIOD_S = 5, 20, 0.2
# Falling behind: this many outputs in a row each older than two frame times (+ 0.1 s). One old
# output alone (the first frame on a busy host, a wait for CameraInfo) is no trend.
BEHIND_OUTPUTS = 3
STAGES = ("preprocess", "inference", "extract", "postprocess", "publish")
# Parts of a stage above (of postprocess, of extract): shown, not added to the frame time.
SUB_STAGES = ("scale", "labels_confidence", "compress")
HOST_STAGES = tuple(s for s in STAGES if s != "inference")  # the work around the model


def host_values(stages: dict[str, StageStats], threads: int,
                computed: tuple[str, ...]) -> dict[str, str]:
    """Diagnostics values on the host work: its ms per frame (every stage but inference),
    the host ceiling (1000 / that: the fastest model rate the host path allows), its threads,
    and what the last frame computed."""
    host_ms = sum(stages[s].mean_ms for s in HOST_STAGES if s in stages)
    return {"host (ms)": f"{host_ms:.2f}" if host_ms else "-",
            "host ceiling (Hz)": f"{1000.0 / host_ms:.1f}" if host_ms else "-",
            "host threads": str(threads),
            "products computed": ", ".join(computed) or "-"}


def bandwidth_values(rates: dict[str, float]) -> dict[str, str]:
    """Diagnostics values on what each output topic sends (kB/s, 1 kB = 1000 bytes) and
    their total, so a network link's budget can be checked."""
    values = {f"bandwidth {topic} (kB/s)": f"{rate / 1000:.1f}"
              for topic, rate in sorted(rates.items())}
    values["bandwidth total (kB/s)"] = f"{sum(rates.values()) / 1000:.1f}" if rates else "-"
    return values


@dataclass
class FrameStats:
    """Counters the worker thread updates and the diagnostics timer reads."""

    processed: int = 0
    rejected: int = 0
    failed: int = 0
    idle: int = 0  # frames skipped because no output had a subscriber
    consecutive_failures: int = 0
    last_error: str = ""
    recent_ages_s: tuple[float, ...] = ()  # receive -> published, the last BEHIND_OUTPUTS frames
    camera_info: str = "none received"
    intrinsics_guessed: bool = False
    camera_note: str = ""  # what of the CameraInfo is not honoured (e.g. unknown distortion)
    camera_model: str = "-"  # which camera case the last frame was (raw / rectified, model)
    input_size: tuple[int, int] | None = None
    frame_id: str = ""  # the camera frame of the last image: the diagnostics' hardware_id
    computed: tuple[str, ...] = ()  # the products the last frame computed (lazy: listened ones)
    ignored_settings: tuple[str, ...] = ()  # settings given that do nothing here (and why)
    waiting_since: float | None = None  # monotonic s: first frame received since the last output
    last_arrival: float | None = None  # monotonic s: the last frame received while active
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def frame_arrived(self, now: float) -> None:
        """A frame arrived whose output is due (starts the stall clock if not running)."""
        with self._lock:
            self.last_arrival = now
            if self.waiting_since is None:
                self.waiting_since = now

    def end_wait(self) -> None:
        """No output is due for what arrived (a bad frame, no subscriber, inactive)."""
        with self._lock:
            self.waiting_since = None

    def stalled_s(self, now: float) -> float:
        """How long frames have kept arriving with no output: 0 unless another frame arrived
        after the one that started the wait (one frame in progress is no stall yet)."""
        with self._lock:
            since, last = self.waiting_since, self.last_arrival
        if since is None or last is None or last <= since:
            return 0.0
        return max(0.0, now - since)

    @property
    def last_age_s(self) -> float:
        """Receive -> published (s) for the last frame output (0 before any)."""
        ages = self.recent_ages_s
        return ages[-1] if ages else 0.0

    def record_failure(self, error: str) -> None:
        with self._lock:
            self.failed += 1
            self.consecutive_failures += 1
            self.last_error = error

    def record_success(self, age_s: float) -> None:
        with self._lock:
            self.processed += 1
            self.consecutive_failures = 0
            self.recent_ages_s = (self.recent_ages_s + (age_s,))[-BEHIND_OUTPUTS:]
            self.waiting_since = None


def stall_periods(stats: FrameStats, frame_ms: float | None, now: float,
                  expected_frame_ms: float | None = None,
                  turns: int = 1) -> tuple[float, float, float]:
    """(seconds frames have waited with no output, how many frame times that is, the frame
    time in ms): ``frame_ms``, else ``expected_frame_ms`` (warm-up), else 1 s; at least 0.2 s;
    times ``turns``, the cameras taking turns on the model (each waits for the others')."""
    stalled = stats.stalled_s(now)
    period_ms = max(frame_ms or expected_frame_ms or 1000.0, STALL_MIN_PERIOD_S * 1000.0)
    period_ms *= max(1, turns)
    return stalled, stalled * 1000.0 / period_ms, period_ms


def health(stats: FrameStats, frame_ms: float | None,
           scale_warning: str = "", now: float | None = None,
           expected_frame_ms: float | None = None, turns: int = 1) -> tuple[bytes, str]:
    """Diagnostic level and summary message; ``frame_ms`` is the mean time to handle a frame.

    With a one-slot buffer an output is at most about two frame times old (one waiting, one
    being handled); BEHIND_OUTPUTS outputs in a row older than that mean the worker is starved
    or blocked: falling behind. Frames that keep arriving with no output for
    STALL_WARN_PERIODS frame times are a stall (WARN), for STALL_ERROR_PERIODS an ERROR,
    whatever the backend (``now``: monotonic s). With several
    cameras on one model, ``turns`` of them taking turns, a camera's frame time is ``turns``
    model frame times (round robin: its next turn comes after every other camera's).
    """
    stalled, periods, period_ms = stall_periods(
        stats, frame_ms, time.monotonic() if now is None else now, expected_frame_ms, turns)
    ring = f": {turns} cameras take turns" if turns > 1 else ""
    stall = (f"stalled: no output for {stalled:.1f} s while frames arrive ({periods:.0f} frame "
             f"times of {period_ms:.0f} ms{ring})")
    if stats.consecutive_failures >= ERROR_AFTER_FAILURES:
        return DiagnosticStatus.ERROR, (f"{stats.consecutive_failures} frames failed in a row: "
                                        f"{stats.last_error}")
    if periods >= STALL_ERROR_PERIODS:
        return DiagnosticStatus.ERROR, stall
    if periods >= STALL_WARN_PERIODS:
        return DiagnosticStatus.WARN, stall
    if stats.consecutive_failures:
        return DiagnosticStatus.WARN, f"last frame failed: {stats.last_error}"
    ages = stats.recent_ages_s
    if frame_ms and len(ages) == BEHIND_OUTPUTS and min(ages) * 1000.0 > 2.0 * frame_ms + 100.0:
        return DiagnosticStatus.WARN, (f"falling behind: outputs are {stats.last_age_s:.2f} s "
                                       f"old, a frame takes {frame_ms:.0f} ms")
    if scale_warning:
        return DiagnosticStatus.WARN, scale_warning
    if stats.intrinsics_guessed:
        return DiagnosticStatus.WARN, f"point cloud geometry is a guess ({stats.camera_info})"
    if stats.camera_note:
        return DiagnosticStatus.WARN, f"point cloud geometry is approximate ({stats.camera_note})"
    if stats.ignored_settings:
        names = ", ".join(why.split(" ", 1)[0] for why in stats.ignored_settings)
        return DiagnosticStatus.WARN, f"settings ignored here: {names} (see 'ignored settings')"
    if not stats.processed:
        return DiagnosticStatus.OK, "waiting for images (or for subscribers)"
    return DiagnosticStatus.OK, "running"


def build_diagnostics(*, name: str, stamp, backend: str, model_kind: str, model_size: str,
                      fit: str, stats: FrameStats, stages: dict[str, StageStats],
                      input_hz: float, output_hz: float, received: int,
                      dropped: int, backend_note: str = "", state: str = "",
                      input_qos: str = "-",
                      depth_scale: tuple[dict[str, str], str] = ({}, ""),
                      backend_details: dict[str, str] | None = None,
                      expected_frame_ms: float | None = None,
                      host_threads: int = 1, turns: int = 1,
                      bandwidth: dict[str, float] | None = None) -> DiagnosticArray:
    """One DiagnosticStatus named ``name`` (the node's fully qualified name, so two cameras'
    nodes differ) whose ``hardware_id`` is the camera frame, with every figure a user tunes the
    node by. ``state``, when given, is the lifecycle state and leads the message.

    ``depth_scale``: the depth's unit and scale (values) and a warning while there is none;
    ``backend_details`` (e.g. the GPU adapter) follow the backend's keys;
    ``expected_frame_ms`` (the warm-up) stands for the frame time before one is measured.
    The host figures are the frame's stages but inference (:data:`HOST_STAGES`) and the model
    rate they allow (the host ceiling), computed with ``host_threads`` threads. ``turns``:
    the cameras taking turns on the model now (see :func:`health`). ``bandwidth``: bytes per
    second published on each output topic (raw and compressed).
    """
    frame_ms = sum(stages[s].mean_ms for s in STAGES if s in stages)
    now = time.monotonic()
    # The backend note ('auto' found no GPU it should use and runs on the CPU, as it is meant
    # to: a CPU-only robot is well) is in the values, not a warning.
    level, message = health(stats, frame_ms, depth_scale[1], now,
                            expected_frame_ms, turns)
    if state:
        message = f"{state}: {message}"
    size = f"{stats.input_size[0]}x{stats.input_size[1]}" if stats.input_size else "-"
    values = {
        "backend": backend,
        "backend note": backend_note or "-",
        **(backend_details or {}),  # the GPU adapter, when on the GPU
        "model kind": model_kind,
        "input size -> model size": f"{size} -> {model_size}",
        "fit": fit,
        "camera_info": stats.camera_info,
        "input QoS": input_qos,
        "camera model": stats.camera_model,
        "input rate (Hz)": f"{input_hz:.2f}",
        "output rate (Hz)": f"{output_hz:.2f}",
        "frames received": str(received),
        "frames processed": str(stats.processed),
        "frames dropped": str(dropped),
        "frames rejected": str(stats.rejected),
        "frames failed": str(stats.failed),
        "frames idle (no subscribers)": str(stats.idle),
        "output age (s)": f"{stats.last_age_s:.3f}",
        "no output for (s)": f"{stats.stalled_s(now):.1f}",
        "last error": stats.last_error or "-",
        "ignored settings": "; ".join(stats.ignored_settings) or "-",
        **depth_scale[0],
        **host_values(stages, host_threads, stats.computed),
        **bandwidth_values(bandwidth or {}),
    }
    for stage in STAGES + SUB_STAGES:
        s = stages.get(stage)
        values[f"{stage} mean (ms)"] = f"{s.mean_ms:.2f}" if s else "-"
        values[f"{stage} p95 (ms)"] = f"{s.p95_ms:.2f}" if s else "-"
    status = DiagnosticStatus(level=level, name=name, message=message,
                              hardware_id=stats.frame_id or "-",
                              values=[KeyValue(key=k, value=v) for k, v in values.items()])
    array = DiagnosticArray()
    array.header.stamp = stamp
    array.status = [status]
    return array


def model_status(name: str, *, backend: str, model: str, stages: dict[str, StageStats],
                 seconds: dict[str, float]) -> DiagnosticStatus:
    """The shared model's status when several cameras use it: backend, inference time, and each
    camera's share of the model's time (``seconds``: inference seconds spent per camera)."""
    total = sum(seconds.values())
    inference = stages.get("inference")
    values = {"backend": backend, "model": model,
              "inference mean (ms)": f"{inference.mean_ms:.2f}" if inference else "-",
              "inference p95 (ms)": f"{inference.p95_ms:.2f}" if inference else "-",
              "cameras": ", ".join(seconds)}
    for camera, spent in seconds.items():
        values[f"share of model time: {camera}"] = f"{spent / total:.2f}" if total else "-"
    return DiagnosticStatus(level=DiagnosticStatus.OK, name=name,
                            message=f"shared by {len(seconds)} cameras", hardware_id=model,
                            values=[KeyValue(key=k, value=v) for k, v in values.items()])
