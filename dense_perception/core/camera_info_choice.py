"""Which CameraInfo describes a frame: one rule for the node and the offline command.

The rule: the CameraInfo whose header stamp equals the image's, else the latest one stamped
before the image, else none (the caller then uses its pinhole guess and says so). A CameraInfo
stamped after the image never describes it: a camera that changes its calibration (zoom,
binning) does so from that stamp on.
"""

from __future__ import annotations

import bisect
import threading
from typing import Any, Generic, TypeVar

T = TypeVar("T")

MATCHED = "matched image stamp"
LATEST_BEFORE = "latest before the image (no stamp match)"
NONE_RECEIVED = "none received"
NONE_BEFORE = "none stamped at or before the image"


def stamp_ns(stamp: Any) -> int:
    """A builtin_interfaces/Time (rclpy or rosbags) as integer nanoseconds."""
    return int(stamp.sec) * 1_000_000_000 + int(stamp.nanosec)


class CameraInfoHistory(Generic[T]):
    """CameraInfos (or anything standing for one) by stamp; the newest ``limit`` are kept.

    The node adds them as they arrive; the offline command adds every one of a bag up front,
    so a frame finds its own even when the CameraInfo was logged after the image.
    """

    def __init__(self, limit: int | None = None) -> None:
        self._stamps: list[int] = []
        self._items: list[T] = []
        self._limit = limit
        self._lock = threading.Lock()  # the node adds on its executor, chooses on a worker

    def __len__(self) -> int:
        return len(self._items)

    def add(self, stamp: int, item: T) -> None:
        """Keep ``item`` stamped ``stamp`` (ns); a second one with the same stamp replaces it."""
        with self._lock:
            self._add(stamp, item)

    def _add(self, stamp: int, item: T) -> None:
        i = bisect.bisect_left(self._stamps, stamp)
        if i < len(self._stamps) and self._stamps[i] == stamp:
            self._items[i] = item
        else:
            self._stamps.insert(i, stamp)
            self._items.insert(i, item)
        if self._limit is not None and len(self._items) > self._limit:
            del self._stamps[0], self._items[0]

    def choose(self, stamp: int) -> tuple[T | None, str]:
        """(the item for an image stamped ``stamp``, or None; how it was chosen)."""
        with self._lock:
            if not self._items:
                return None, NONE_RECEIVED
            i = bisect.bisect_right(self._stamps, stamp) - 1
            if i < 0:
                return None, NONE_BEFORE
            return self._items[i], MATCHED if self._stamps[i] == stamp else LATEST_BEFORE
