# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""A small pool of threads for the host work around inference (numpy and OpenCV release the
GIL), so one frame's independent pieces use several cores.

The pool is the pipeline's own: at most ``host_threads`` pieces run at once. ``host_threads``
0 (auto) is the cores this process may use, at most :data:`AUTO_MAX`: the host work runs
between inferences (or beside the next one, in bursts of a few milliseconds), so on a CPU
backend it borrows XNNPACK's cores only for those bursts, and on a GPU or NPU it is what sets
the frame rate.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from typing import Callable, TypeVar

from ..backends.runner_base import default_num_threads

AUTO_MAX = 4  # more bands than this buy nothing at these image sizes (and a Pi 5 has 4 cores)
T = TypeVar("T")


def resolve_host_threads(host_threads: int) -> int:
    """The number of host threads for a ``host_threads`` setting (0 = auto)."""
    if host_threads < 0:
        raise ValueError(f"host_threads must be >= 0 (0 = auto), got {host_threads}")
    return host_threads or min(AUTO_MAX, default_num_threads())


class HostThreads:
    """Runs independent pieces of one frame's host work side by side."""

    def __init__(self, threads: int) -> None:
        self.threads = max(1, threads)
        self._pool = ThreadPoolExecutor(self.threads - 1, thread_name_prefix="host") \
            if self.threads > 1 else None

    def bands(self, height: int, most: int | None = None) -> list[tuple[int, int]]:
        """Ranges splitting ``height`` rows (or classes) into one band per thread (at least 16
        each), at most ``most`` bands."""
        count = max(1, min(self.threads, height // 16, most or self.threads))
        edges = [height * i // count for i in range(count + 1)]
        return [(edges[i], edges[i + 1]) for i in range(count)]

    def run(self, jobs: list[Callable[[], T]]) -> list[T]:
        """Run ``jobs`` at once (the last one in the calling thread); their results in order.
        An exception in any job is raised here after all have finished."""
        if self._pool is None or len(jobs) < 2:
            return [job() for job in jobs]
        futures: list[Future] = [self._pool.submit(job) for job in jobs[:-1]]
        results: list = []
        error: BaseException | None = None
        try:
            last = jobs[-1]()
        except BaseException as exc:  # noqa: BLE001 - re-raised below, after the others
            error, last = exc, None
        for future in futures:
            try:
                results.append(future.result())
            except BaseException as exc:  # noqa: BLE001
                error = error or exc
                results.append(None)
        if error is not None:
            raise error
        return results + [last]

    def close(self) -> None:
        """Stop the threads (idle ones exit at once)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
