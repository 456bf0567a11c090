# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Reference depth messages kept by stamp over a time window, bounded in count and bytes.

The node's ``reference_depth`` source matches each image with the reference depth stamped
nearest to it (within ``reference_depth_slop``). A 30 Hz depth sensor and a model that takes
seconds per frame are an ordinary pair, so the messages are kept by time, not by count: the
window reaches back ``span_s`` seconds of stamps from the newest one (``depth_scale_max_age``,
at least the slop), and memory stays bounded by a cap on the count and on the bytes kept (the
oldest go first). The image's reference is looked up when the image arrives (and kept with the
frame), and again after inference for one that arrived after the image.
"""

from __future__ import annotations

import threading
from typing import Generic, Iterator, TypeVar

from ..by_stamp import ByStamp

T = TypeVar("T")

KEEP_COUNT = 1024             # references kept at most per camera
KEEP_BYTES = 64 * 1024 * 1024  # bytes of reference data kept at most per camera (64 MiB)


class ReferenceWindow(Generic[T]):
    """Items (reference depth messages) by stamp (ns); thread-safe (added on the executor,
    looked up on a worker too)."""

    def __init__(self, span_s: float, max_count: int = KEEP_COUNT,
                 max_bytes: int = KEEP_BYTES) -> None:
        """``span_s``: stamps older than the newest by more than this are dropped (0: no limit
        by time, only by ``max_count`` and ``max_bytes``)."""
        self.span_s = span_s
        self.max_count, self.max_bytes = max_count, max_bytes
        self._held: ByStamp[tuple[T, int]] = ByStamp()  # (item, its size in bytes)
        self._bytes = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._held)

    def __iter__(self) -> Iterator[T]:
        """The items held now, oldest stamp first (a snapshot)."""
        with self._lock:
            return iter([item for item, _ in self._held.items])

    @property
    def nbytes(self) -> int:
        """Bytes of the items held (as given to :meth:`add`)."""
        return self._bytes

    def add(self, stamp: int, item: T, nbytes: int) -> None:
        """Keep ``item`` stamped ``stamp`` (ns), ``nbytes`` large; a second one with the same
        stamp replaces it. Then drop what is beyond the window or the caps, oldest first."""
        with self._lock:
            held = self._held
            replaced = held.put(stamp, (item, nbytes))
            self._bytes += nbytes - (replaced[1] if replaced is not None else 0)
            oldest = held.stamps[-1] - int(self.span_s * 1e9) if self.span_s > 0 else None
            while len(held) > 1 and (
                    len(held) > self.max_count or self._bytes > self.max_bytes
                    or (oldest is not None and held.stamps[0] < oldest)):
                self._bytes -= held.pop_oldest()[1]

    def nearest(self, stamp: int, slop: int) -> tuple[T | None, int]:
        """(the item stamped nearest ``stamp`` within ``slop`` ns, or None; its distance in ns)."""
        with self._lock:
            i = self._held.nearest(stamp)
            dt = abs(self._held.stamps[i] - stamp) if i >= 0 else slop + 1
            return (self._held.items[i][0], dt) if dt <= slop else (None, 0)
