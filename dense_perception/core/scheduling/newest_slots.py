# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Newest-wins hand-over between the subscription callbacks and the worker: one slot per source,
taken in turn.

A newer frame replaces its source's waiting one (a slow model always gets the latest frame, not a
queue of old ones). With several cameras sharing one model each camera is a source and
:meth:`NewestSlots.take` serves the sources with a waiting frame in turn, so a 30 fps camera
cannot starve a 5 fps one; with one camera there is one slot.
"""

from __future__ import annotations

import threading
from typing import Callable, Generic, Hashable, TypeVar

T = TypeVar("T")


class NewestSlots(Generic[T]):
    """A one-slot buffer per key (``key_of(item)``; without ``key_of``, one slot for all),
    taken round robin over the keys that have an item."""

    def __init__(self, key_of: Callable[[T], Hashable] | None = None) -> None:
        self._key_of = key_of or (lambda item: None)
        self._items: dict[Hashable, T] = {}
        self._order: list[Hashable] = []  # keys in the order they were first seen
        self._next = 0  # index in _order of the key served first on the next take
        self._cond = threading.Condition()
        self.dropped = 0
        self.dropped_by_key: dict[Hashable, int] = {}

    def put(self, item: T) -> bool:
        """Store ``item`` in its key's slot; True when that key's unconsumed item was dropped."""
        key = self._key_of(item)
        with self._cond:
            if key not in self._order:
                self._order.append(key)
            dropped = key in self._items
            if dropped:
                self.dropped += 1
                self.dropped_by_key[key] = self.dropped_by_key.get(key, 0) + 1
            self._items[key] = item
            self._cond.notify()
            return dropped

    def take(self, timeout: float) -> T | None:
        """The waiting item of the next key in turn (waiting up to ``timeout`` s); None if none."""
        with self._cond:
            if not self._items:
                self._cond.wait(timeout)
            if not self._items:
                return None
            count = len(self._order)
            for step in range(count):
                index = (self._next + step) % count
                key = self._order[index]
                if key in self._items:
                    self._next = (index + 1) % count  # the next take starts after this key
                    return self._items.pop(key)
            return None  # unreachable: _items holds only keys in _order
