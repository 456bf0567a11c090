# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Two-stage overlap: stage one of frame N+1 (inference) runs while stage two of frame N
(post-processing, publishing or writing) runs. One module for the live node and the offline
command; they differ only in what happens when stage one is faster than the input or slower:

* :class:`LiveTwoStage` (the node): newest wins. Each stage has its own thread and a one-slot
  hand-over (:class:`~.newest_slots.NewestSlots`); a frame that arrives while one waits
  replaces it, so a slow model never builds a backlog behind a 30 fps camera. Stage two may run
  at a lower priority.
* :class:`OrderedTwoStage` (the offline command): nothing is dropped and order is kept. Stage
  one runs on one worker thread; results come back to the caller's thread in input order (the
  bag and video writers are not thread-safe, and sqlite3 insists on its creating thread), with
  at most ``in_flight`` items started at once. Pass-through items (e.g. messages copied to the
  output bag) keep their place between frames.

LiteRT, OpenCV and numpy release the GIL, so the two stages really overlap.
"""

from __future__ import annotations

import os
import threading
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Callable, Generic, Iterator, TypeVar

from .newest_slots import NewestSlots

A = TypeVar("A")
B = TypeVar("B")


def lower_thread_priority(increment: int) -> None:
    """Raise the calling thread's nice value (Linux: nice is per thread); no-op elsewhere."""
    try:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, os.getpriority(os.PRIO_PROCESS, tid) + increment)
    except (AttributeError, OSError):
        pass


class LiveTwoStage(Generic[A, B]):
    """``first(item) -> B | None`` then ``second(B)``, each on its own daemon thread, newest wins.

    ``first`` returning None ends the item there (e.g. nobody listens, or a bad frame).
    ``on_error(exc)`` is called for an exception from either stage; the threads live on.
    ``second_nice`` lowers stage two's priority, so on a machine whose cores are all busy with
    inference threads it only delays its own frame a little, never the model.
    ``slots`` makes each stage's hand-over (default: one newest-wins slot).
    """

    def __init__(self, first: Callable[[A], B | None], second: Callable[[B], None], *,
                 on_error: Callable[[Exception], None], name: str = "two_stage",
                 second_nice: int = 0, slots: Callable[[], Any] = NewestSlots) -> None:
        self._first, self._second, self._on_error = first, second, on_error
        # slots: the hand-over's factory; several cameras pass one slot per camera taken in
        # turn (``NewestSlots`` keyed by camera), so each stage serves the cameras fairly.
        self._in: NewestSlots[A] = slots()
        self._mid: NewestSlots[B] = slots()
        self._stop = threading.Event()
        self.threads = [
            threading.Thread(target=self._run, args=(self._in, self._first_then_hand_over, 0),
                             name=f"{name}_first", daemon=True),
            threading.Thread(target=self._run, args=(self._mid, self._second, second_nice),
                             name=f"{name}_second", daemon=True)]
        for thread in self.threads:
            thread.start()

    def put(self, item: A) -> bool:
        """Hand ``item`` to stage one; True when a waiting item was dropped for it."""
        return self._in.put(item)

    @property
    def dropped(self) -> int:
        """Items replaced by newer ones before stage one or before stage two."""
        return self._in.dropped + self._mid.dropped

    def dropped_for(self, key: Any) -> int:
        """Items of ``key`` (a camera) dropped, where the slots are kept per key."""
        return sum(getattr(slot, "dropped_by_key", {}).get(key, 0)
                   for slot in (self._in, self._mid))

    def alive(self) -> bool:
        return all(thread.is_alive() for thread in self.threads)

    def stop(self, join_s: float = 0.5) -> None:
        """Stop both threads (an item in progress is not waited for beyond ``join_s``)."""
        self._stop.set()
        for thread in self.threads:
            thread.join(timeout=join_s)

    def _first_then_hand_over(self, item: A) -> None:
        result = self._first(item)
        if result is not None:
            self._mid.put(result)

    def _run(self, slot: NewestSlots, handle: Callable[[Any], None], nice: int) -> None:
        if nice:
            lower_thread_priority(nice)
        while not self._stop.is_set():
            item = slot.take(timeout=0.1)
            if item is not None and not self._stop.is_set():
                try:
                    handle(item)
                except Exception as exc:  # noqa: BLE001 - a failing frame must never stop us
                    self._on_error(exc)


class OrderedTwoStage(Generic[A, B]):
    """``first(item)`` on a worker thread; the caller gets ``(item, result or exception)`` back
    in input order, with at most ``in_flight`` items whose stage one was started.

    Use: ``for item, result in stage.add(frame): write(item, result)``; ``add_passthrough``
    for items that skip stage one (result None); ``drain()`` at the end; ``close()`` always.
    Exceptions of the types in ``catch`` come back as the result; others are raised.
    """

    def __init__(self, first: Callable[[A], B], *, in_flight: int = 2,
                 catch: tuple[type[Exception], ...] = (),
                 name: str = "two_stage") -> None:
        self._first, self._in_flight, self._catch = first, in_flight, catch
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
        self._pending: deque[tuple[A, Future | None]] = deque()
        self._started = 0

    def add(self, item: A) -> Iterator[tuple[A, Any]]:
        """Start stage one of ``item``; yield the items now due, in order."""
        self._pending.append((item, self._pool.submit(self._first, item)))
        self._started += 1
        return self._due(keep=self._in_flight - 1)

    def add_passthrough(self, item: A) -> Iterator[tuple[A, Any]]:
        """Queue ``item`` without stage one; yield the items now due (it too, if none wait)."""
        self._pending.append((item, None))
        return self._due(keep=self._in_flight - 1)

    def drain(self) -> Iterator[tuple[A, Any]]:
        """Yield everything still pending, waiting for the stage ones in progress."""
        return self._due(keep=0)

    def close(self) -> None:
        """Stop the worker: stage ones not yet started are cancelled, the one in progress is
        waited for. It may share state with whoever comes next (the offline command runs every
        input of a fleet on one pipeline, whose runner has one input buffer): a stage one left
        running would preprocess into that buffer while the next input's frame does (seen:
        a band of wrong depth after a failed input). At most one inference (bounded by
        gpu_timeout on the GPU)."""
        self._pool.shutdown(wait=True, cancel_futures=True)

    def _due(self, keep: int) -> Iterator[tuple[A, Any]]:
        while self._pending:
            item, future = self._pending[0]
            if future is None:
                self._pending.popleft()
                yield item, None
                continue
            if self._started <= keep:
                return
            try:
                result = future.result()
            except self._catch as exc:
                result = exc
            finally:
                self._pending.popleft()
                self._started -= 1
            yield item, result
