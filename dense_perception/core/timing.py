# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
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
    """Events per second over the last ``window_s`` seconds, or an amount per second (a
    topic's bytes: :meth:`tick` with ``amount``); thread-safe."""

    def __init__(self, window_s: float = 5.0) -> None:
        self._window_s = window_s
        self._events: deque[tuple[float, int]] = deque()  # (monotonic s, amount)
        self._lock = threading.Lock()
        self.total = 0  # the amounts since the start (events, with the default amount 1)

    def tick(self, now: float | None = None, amount: int = 1) -> None:
        """Record one event (of ``amount``: a message's bytes)."""
        now = time.monotonic() if now is None else now
        with self._lock:
            self._events.append((now, amount))
            self.total += amount
            self._trim(now)

    def rate(self, now: float | None = None) -> float:
        """The amount per second in the window, counted after the first event (events per
        second with the default amount; 0 with fewer than two events)."""
        now = time.monotonic() if now is None else now
        with self._lock:
            self._trim(now)
            if len(self._events) < 2:
                return 0.0
            first, last, gaps = self._events[0][0], self._events[-1][0], len(self._events) - 1
            # Between events the rate is the events' own; once they are late, it decays.
            span = max(last - first, now - first - (last - first) / gaps)
            amount = sum(a for _, a in self._events) - self._events[0][1]
            return amount / span if span > 0 else 0.0

    def _trim(self, now: float) -> None:
        while self._events and now - self._events[0][0] > self._window_s:
            self._events.popleft()
