"""Per-stage timing and event rates over a sliding window (feeds the diagnostics)."""

from __future__ import annotations

import threading
import time
from collections import deque
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

import numpy as np


@dataclass(frozen=True)
class StageStats:
    """Summary of one stage's recent durations in milliseconds."""

    count: int
    mean_ms: float
    p95_ms: float
    last_ms: float


class StageTimer:
    """Keeps the last ``window`` durations of each named stage; thread-safe."""

    def __init__(self, window: int = 100) -> None:
        self._window = window
        self._samples: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        """Time the body of a ``with`` block as stage ``name``."""
        start = time.perf_counter()
        try:
            yield
        finally:
            self.add(name, (time.perf_counter() - start) * 1000.0)

    def add(self, name: str, ms: float) -> None:
        """Record one duration for ``name``."""
        with self._lock:
            self._samples.setdefault(name, deque(maxlen=self._window)).append(ms)

    def clear(self) -> None:
        """Forget every sample (e.g. after a warm-up)."""
        with self._lock:
            self._samples.clear()

    def stats(self) -> dict[str, StageStats]:
        """Mean / p95 / last per stage, in the order stages were first seen."""
        with self._lock:
            snapshot = {k: np.fromiter(v, float) for k, v in self._samples.items() if v}
        return {k: StageStats(len(a), float(a.mean()), float(np.percentile(a, 95)), float(a[-1]))
                for k, a in snapshot.items()}


class RateMeter:
    """Events per second over the last ``window_s`` seconds; thread-safe."""

    def __init__(self, window_s: float = 5.0) -> None:
        self._window_s = window_s
        self._stamps: deque[float] = deque()
        self._lock = threading.Lock()
        self.total = 0

    def tick(self, now: float | None = None) -> None:
        """Record one event."""
        now = time.monotonic() if now is None else now
        with self._lock:
            self._stamps.append(now)
            self.total += 1
            self._trim(now)

    def rate(self, now: float | None = None) -> float:
        """Events per second in the window (0 with fewer than two events)."""
        now = time.monotonic() if now is None else now
        with self._lock:
            self._trim(now)
            if len(self._stamps) < 2:
                return 0.0
            first, last, gaps = self._stamps[0], self._stamps[-1], len(self._stamps) - 1
            # Between events the rate is the events' own; once they are late, it decays.
            span = max(last - first, now - first - (last - first) / gaps)
            return gaps / span if span > 0 else 0.0

    def _trim(self, now: float) -> None:
        while self._stamps and now - self._stamps[0] > self._window_s:
            self._stamps.popleft()


class ByteRateMeter:
    """Bytes per second over the last ``window_s`` seconds (a topic's bandwidth); thread-safe."""

    def __init__(self, window_s: float = 5.0) -> None:
        self._window_s = window_s
        self._events: deque[tuple[float, int]] = deque()
        self._lock = threading.Lock()
        self.total = 0  # bytes since the start

    def add(self, size: int, now: float | None = None) -> None:
        """Record one message of ``size`` bytes."""
        now = time.monotonic() if now is None else now
        with self._lock:
            self._events.append((now, size))
            self.total += size
            self._trim(now)

    def rate(self, now: float | None = None) -> float:
        """Bytes per second: the messages' rate as :class:`RateMeter` gives it times their
        mean size after the first (0 with fewer than two messages; decays once they stop)."""
        now = time.monotonic() if now is None else now
        with self._lock:
            self._trim(now)
            if len(self._events) < 2:
                return 0.0
            first, last, gaps = self._events[0][0], self._events[-1][0], len(self._events) - 1
            span = max(last - first, now - first - (last - first) / gaps)
            sent = sum(size for _, size in list(self._events)[1:])
            return sent / span if span > 0 else 0.0

    def _trim(self, now: float) -> None:
        while self._events and now - self._events[0][0] > self._window_s:
            self._events.popleft()
