"""A one-slot, newest-wins hand-over between the subscription callback and the worker thread."""

from __future__ import annotations

import threading
from typing import Generic, TypeVar

T = TypeVar("T")


class FrameSlot(Generic[T]):
    """Holds at most one item; putting a new one replaces (drops) the unconsumed old one."""

    def __init__(self) -> None:
        self._item: T | None = None
        self._cond = threading.Condition()
        self.dropped = 0

    def put(self, item: T) -> bool:
        """Store ``item``; True when an unconsumed item was dropped to make room."""
        with self._cond:
            dropped = self._item is not None
            self.dropped += dropped
            self._item = item
            self._cond.notify()
            return dropped

    def take(self, timeout: float) -> T | None:
        """Remove and return the item, waiting up to ``timeout`` seconds; None if none came."""
        with self._cond:
            if self._item is None:
                self._cond.wait(timeout)
            item, self._item = self._item, None
            return item
