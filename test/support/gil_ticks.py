# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Whether Python threads run while a runner infers: a 2 ms ticker thread beside the runs.

A runner that keeps its model in a worker process waits on a pipe, which releases the GIL; an
in-process CompiledModel (or OpenVINO dispatch) holds it for the whole run, and the ticker then
gets (almost) no time slice.
"""

from __future__ import annotations

import threading
import time
from typing import Callable

TICK_S = 0.002  # the ticker's sleep
FREE_TICK_S = 0.003  # a free GIL gives a tick every ~2-3 ms


class Ticker:
    """``with Ticker() as ticker: got, spent = ticker.ticks_during(runner.run)``."""

    def __init__(self) -> None:
        self._ticks: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._tick, daemon=True)

    def _tick(self) -> None:
        while not self._stop.is_set():
            time.sleep(TICK_S)
            self._ticks.append(time.perf_counter())

    def __enter__(self) -> "Ticker":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def ticks_during(self, run: Callable[[], object], rounds: int) -> tuple[int, float]:
        """(ticks counted inside the calls, seconds spent in them) over ``rounds`` calls."""
        counted, spent = 0, 0.0
        for _ in range(rounds):
            start = time.perf_counter()
            run()
            end = time.perf_counter()
            counted += sum(1 for t in self._ticks if start < t < end)
            spent += end - start
        return counted, spent


def gil_was_free(got: int, spent: float) -> bool:
    """At least a quarter of the ticks a free GIL gives (a busy CI machine)."""
    return got >= 0.25 * spent / FREE_TICK_S
