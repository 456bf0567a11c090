# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Items in stamp order, one per stamp: what the CameraInfo history
(:mod:`.geometry.camera_info_choice`) and the reference depth window
(:mod:`.scale.reference_window`) both keep. Each of them adds its own lock and its own rule for
what to drop; this holds the order and the lookups.
"""

from __future__ import annotations

import bisect
from typing import Generic, TypeVar

T = TypeVar("T")


class ByStamp(Generic[T]):
    """Items sorted by stamp (ns); a second item with a stamp already held replaces the first.
    Not thread-safe: its owner locks. ``stamps`` and ``items`` are read, never written, by
    the owner."""

    def __init__(self) -> None:
        self.stamps: list[int] = []
        self.items: list[T] = []

    def __len__(self) -> int:
        return len(self.items)

    def put(self, stamp: int, item: T) -> T | None:
        """Keep ``item`` stamped ``stamp``; the item it replaced (same stamp), or None."""
        i = bisect.bisect_left(self.stamps, stamp)
        if i < len(self.stamps) and self.stamps[i] == stamp:
            replaced, self.items[i] = self.items[i], item
            return replaced
        self.stamps.insert(i, stamp)
        self.items.insert(i, item)
        return None

    def pop_oldest(self) -> T:
        """Remove and return the item with the earliest stamp (there must be one)."""
        del self.stamps[0]
        return self.items.pop(0)

    def at_or_before(self, stamp: int) -> int:
        """The index of the latest item stamped at or before ``stamp``, or -1."""
        return bisect.bisect_right(self.stamps, stamp) - 1

    def nearest(self, stamp: int) -> int:
        """The index of the item stamped nearest ``stamp`` (the earlier of two as near), or -1
        when none is held."""
        i = bisect.bisect_left(self.stamps, stamp)
        near = [j for j in (i - 1, i) if 0 <= j < len(self.stamps)]
        return min(near, key=lambda j: abs(self.stamps[j] - stamp)) if near else -1
