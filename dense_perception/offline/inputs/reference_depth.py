# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""A bag's reference depth topic (LiDAR projection, ToF, stereo), read in step with its images.

A second reader walks the reference topic alongside the image topic, reading ahead only as far
as the image's stamp plus the slop, so a reference logged a little after its image is still
found and memory stays at a few images whatever the bag's length.
"""

from __future__ import annotations

from collections import deque
from pathlib import Path
from typing import Any

import numpy as np

from ...core.conversions import image_msg_to_array
from ...core.scale.metric_scale import ScaleConfig
from ...core.scale.estimators import reference_to_metres
from .bag_io import BagError, BagReader

IMAGE_TYPE = "sensor_msgs/msg/Image"


def _stamp(msg: Any) -> float:
    return int(msg.header.stamp.sec) + int(msg.header.stamp.nanosec) * 1e-9


class ReferenceDepthStream:
    """``lookup(stamp)``: the reference depth (metres) nearest ``stamp`` within ``slop`` s."""

    def __init__(self, path: str | Path, topic: str, slop: float) -> None:
        self._bag = BagReader(path)
        conns = [c for c in self._bag.connections if c.topic == topic]
        if not conns:
            depth_topics = sorted({c.topic for c in self._bag.connections
                                   if c.msgtype == IMAGE_TYPE})
            self._bag.close()
            raise BagError(f"reference depth topic '{topic}' is not in the bag; its Image "
                           f"topics: {', '.join(depth_topics) or 'none'}")
        if conns[0].msgtype != IMAGE_TYPE:
            self._bag.close()
            raise BagError(f"reference depth topic '{topic}' is {conns[0].msgtype}; it must be "
                           f"{IMAGE_TYPE} (16UC1 mm or 32FC1 m)")
        self.topic, self.slop = topic, slop
        self._messages = self._bag.decoded(conns)
        self._ahead: deque[tuple[float, Any]] = deque()
        self._done = False
        self.used = 0
        self.problems: dict[str, int] = {}

    def lookup(self, stamp: float) -> np.ndarray | None:
        """Metres (NaN invalid) registered to the camera, or None when none is close enough."""
        while not self._done and (not self._ahead or self._ahead[-1][0] <= stamp + self.slop):
            item = next(self._messages, None)
            if item is None:
                self._done = True
                break
            msg, problem = item
            if msg is None:  # a bad reference is skipped, counted
                self._count(problem)
                continue
            self._ahead.append((_stamp(msg), msg))
        while self._ahead and self._ahead[0][0] < stamp - self.slop:
            self._ahead.popleft()  # images come in stamp order: older ones are not needed
        near = [(abs(t - stamp), msg) for t, msg in self._ahead if abs(t - stamp) <= self.slop]
        if not near:
            return None
        msg = min(near, key=lambda x: x[0])[1]
        try:
            metres = reference_to_metres(image_msg_to_array(msg), msg.encoding)
        except (KeyError, ValueError) as exc:
            self._count(f"unsupported reference encoding '{msg.encoding}' ({exc})")
            return None
        self.used += 1
        return metres

    def _count(self, problem: str) -> None:
        self.problems[problem] = self.problems.get(problem, 0) + 1

    def close(self) -> None:
        self._bag.close()


def reference_stream(bag_path: Path, scale: ScaleConfig | None, topic: str | None,
                     slop: float) -> ReferenceDepthStream | None:
    """The bag's reference depth reader (``topic``, matched within ``slop`` s) when the scale
    (``scale``: its configuration, None when not estimated) needs one, else None."""
    if scale is None or scale.source != "reference_depth":
        return None
    return ReferenceDepthStream(bag_path, topic, slop)
