# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Which CameraInfo describes a frame: one rule for the node and the offline command.

The rule: the CameraInfo whose header stamp equals the image's, else the latest one stamped
before the image, else (when none is stamped at or before it) the first one stamped at most
``slop`` after it, else none (the caller then uses its pinhole guess and says so). A later
CameraInfo never replaces an earlier one: a camera that changes its calibration (zoom, binning)
does so from that stamp on. The slop is for drivers that stamp CameraInfo on another clock than
the image, or a moment after it: without it their first frames (or all of them) would get the
guess although the real calibration is at hand.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Generic, TypeVar

from ..by_stamp import ByStamp

T = TypeVar("T")

MATCHED = "matched image stamp"
LATEST_BEFORE = "latest before the image (no stamp match)"
NONE_RECEIVED = "none received"
NONE_BEFORE = "none stamped at or before the image"
AFTER_WITHIN_SLOP = "first after the image, within camera_info_slop"


def stamp_ns(stamp: Any) -> int:
    """A builtin_interfaces/Time (rclpy or rosbags) as integer nanoseconds."""
    return int(stamp.sec) * 1_000_000_000 + int(stamp.nanosec)


class CameraInfoHistory(Generic[T]):
    """CameraInfos (or anything standing for one) by stamp; the newest ``limit`` are kept.

    The node adds them as they arrive; the offline command adds every one of a bag up front,
    so a frame finds its own even when the CameraInfo was logged after the image.
    """

    def __init__(self, limit: int | None = None) -> None:
        self._held: ByStamp[T] = ByStamp()
        self._limit = limit
        # The node adds on its executor and chooses on a worker (which may wait for an add).
        self._lock = threading.Condition()
        self._waited_in_vain = False  # a wait for the first CameraInfo ended with none

    def __len__(self) -> int:
        return len(self._held)

    def add(self, stamp: int, item: T) -> None:
        """Keep ``item`` stamped ``stamp`` (ns); a second one with the same stamp replaces it."""
        with self._lock:
            self._add(stamp, item)
            self._lock.notify_all()

    def _add(self, stamp: int, item: T) -> None:
        self._held.put(stamp, item)
        if self._limit is not None and len(self._held) > self._limit:
            self._held.pop_oldest()

    def choose(self, stamp: int, slop: int = 0, wait_s: float = 0.0) -> tuple[T | None, str]:
        """(the item for an image stamped ``stamp``, or None; how it was chosen).

        ``slop`` (ns): when none is stamped at or before the image, the first one stamped at
        most this much after it describes it. ``wait_s``: while none has been received yet,
        wait up to this long for one (a driver may publish a frame's CameraInfo just after the
        frame). Only the first such wait is made: once one has ended with none, no CameraInfo
        follows the frames promptly and waiting again would only delay them.
        """
        with self._lock:
            held = self._held
            if not held and wait_s > 0 and not self._waited_in_vain:
                deadline = time.monotonic() + wait_s
                while not held and self._lock.wait(deadline - time.monotonic()):
                    pass
                self._waited_in_vain = not held
            if not held:
                return None, NONE_RECEIVED
            i = held.at_or_before(stamp)
            if i >= 0:
                return held.items[i], MATCHED if held.stamps[i] == stamp else LATEST_BEFORE
            if held.stamps[0] - stamp <= slop:
                return held.items[0], AFTER_WITHIN_SLOP
            return None, NONE_BEFORE
