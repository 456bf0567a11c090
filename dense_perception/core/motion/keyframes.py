# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The motion scale off the frame path: keyframes, measured in a worker of their own.

The flows, the pose clock's offset and the scale map (:mod:`.motion_scale`) cost more than a
small network's inference. As PTAM split tracking (every frame) from mapping (keyframes, in a
thread of its own), the frame path here only *applies* a scale; the measurement runs on
keyframes in one worker thread per camera:

* A posed frame is a keyframe when at least :data:`KEYFRAME_S` of stamps have passed since the
  last one (or time went back): chosen by stamps alone, so the same input gives the same
  keyframes on any machine.
* The worker measures each keyframe against the past keyframes (the newest partner that fits
  the baseline, :meth:`.motion_scale.MotionScale.estimate`) while the frame path goes on.
* ``wait=True`` (offline, deterministic): a keyframe's measurement is collected
  :data:`LANDING_LAG` keyframes later, waiting for it there if the worker is still busy (the
  keyframes in between queue); so every keyframe is measured and its result lands on the same
  frame whatever the machine's speed, while the frames in between run beside the worker.
* ``wait=False`` (the node, real time): a frame never waits. A result is collected by the
  first frame after it finished; a keyframe that arrives while the worker is busy replaces
  the one waiting (newest wins, as the node's frame slots do), so the worker never queues.

A result is the keyframe's estimate (metres per unit of the keyframe's relative depth) with
the keyframe's serial number: the caller knows what it published on that frame and how far the
output has been carried since (:mod:`.camera_motion`).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass

import numpy as np

from ..geometry.intrinsics import Intrinsics
from ..scale.estimators import Estimate
from .motion_scale import MotionScale, Pair

KEYFRAME_S = 0.0  # s of stamps between keyframes (0: every posed frame is offered)
LANDING_LAG = 1   # offline: a measurement lands this many keyframes after its own


@dataclass(frozen=True)
class Keyframe:
    """One keyframe's inputs, owned by the worker once submitted."""

    serial: int
    pair: Pair            # the keyframe and its partner (:meth:`.motion_scale.MotionScale.pair`)
    relative: np.ndarray  # the keyframe's relative depth on the published grid
    k: Intrinsics


@dataclass(frozen=True)
class Measured:
    """A keyframe's measurement, as the frame path collects it."""

    serial: int
    t: float
    estimate: Estimate
    epoch: int  # the worker's epoch when submitted: results of an older epoch are dropped


class KeyframeWorker:
    """One camera's keyframe measurements, in a thread started on the first keyframe."""

    def __init__(self, scale: MotionScale, wait: bool = True, lag: int = LANDING_LAG) -> None:
        self.scale = scale
        self.wait = wait
        self.lag = lag  # with ``wait``: keyframes between a measurement's own and its landing
        self._lock = threading.Condition()
        self._waiting: deque[Keyframe] = deque()  # submitted, not started (one without wait)
        self._busy = False                        # the worker is measuring one
        self._done: deque[Measured] = deque()     # finished, not collected (the newest only
                                                  # without wait)
        self._epoch = 0
        self._reset_due = False                 # the worker resets the scale before its next
        self._last_t: float | None = None       # the last keyframe's stamp
        self._serial = 0
        self._thread: threading.Thread | None = None
        self._closed = False
        self.dropped = 0  # keyframes replaced before the worker took them (newest wins)
        self.measured = 0  # keyframes measured
        self.last_ms: float | None = None  # the last measurement's time (the worker's)

    def keyframe(self, t: float) -> bool:
        """Whether the posed frame stamped ``t`` is a keyframe (then it is the last one)."""
        last = self._last_t
        if last is None or t < last or t - last >= KEYFRAME_S - 1e-6:
            self._last_t = t
            return True
        return False

    def measure_next(self) -> None:
        """Make the next posed frame a keyframe whatever its stamp (a setting changed)."""
        self._last_t = None

    def submit(self, pair: Pair, relative: np.ndarray, k: Intrinsics) -> int:
        """Hand a keyframe's ``pair`` (with its ``relative`` depth on the grid of
        intrinsics ``k``) to the worker; its serial number."""
        self._serial += 1
        job = Keyframe(self._serial, pair, relative.copy(), k)
        with self._lock:
            if not self.wait:  # newest wins: the one not started yet is dropped
                self.dropped += len(self._waiting)
                self._waiting.clear()
            self._waiting.append(job)
            self._closed = False  # a closed worker starts again
            self._start()
            self._lock.notify_all()
        return job.serial

    def collect(self) -> Measured | None:
        """The measurement that lands on this frame, if any: with ``wait`` (called on each
        keyframe before its own :meth:`submit`), the oldest outstanding one once ``lag``
        are (waiting for it); without, the last finished one."""
        with self._lock:
            if self.wait:
                if len(self._waiting) + self._busy + len(self._done) < self.lag:
                    return None
                while not self._done and (self._waiting or self._busy):
                    self._lock.wait()
            done = self._done.popleft() if self._done else None
        return done if done is not None and done.epoch == self._epoch else None

    def reset(self) -> None:
        """Forget the past measurements (a new sequence): the worker resets its recent pairs
        and the clock offset before it measures the next one, and nothing measured before
        lands. (The partners and poses are the frame path's: ``MotionScale.forget``.)"""
        with self._lock:
            self._epoch += 1
            self._waiting.clear()
            self._done.clear()
            self._reset_due = True
        self._last_t = None

    def close(self, timeout: float = 5.0) -> None:
        """Stop the worker: it finishes the keyframe in hand, waited for (at most
        ``timeout`` s), so no flow is running when the process exits; a later keyframe starts
        it again."""
        with self._lock:
            self._closed = True
            self._waiting.clear()
            thread = self._thread
            self._lock.notify_all()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def _start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="keyframe-worker",
                                            daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while True:
            with self._lock:
                while not self._waiting and not self._closed:
                    self._lock.wait()
                if self._closed:
                    self._thread = None  # under the lock: the next submit starts another
                    return
                job, self._busy = self._waiting.popleft(), True
                epoch, reset, self._reset_due = self._epoch, self._reset_due, False
            started = time.perf_counter()
            try:
                if reset:
                    self.scale.reset_measures()
                estimate = self.scale.measure(job.pair, job.relative, job.k)
            except Exception as error:  # noqa: BLE001 - a bad frame must not stop the worker
                estimate = Estimate(None, reason=f"the motion scale failed: {error}")
            with self._lock:
                self._busy = False
                self.measured += 1
                self.last_ms = 1000.0 * (time.perf_counter() - started)
                if epoch == self._epoch:
                    if not self.wait:  # the newest only
                        self._done.clear()
                    self._done.append(Measured(job.serial, job.pair.t, estimate, epoch))
                self._lock.notify_all()
