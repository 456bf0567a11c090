# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""What an input gives the frame loop (its frames, and the bag messages it copies through) and
where the finished frames go (a folder of files or a new bag): the types the inputs and the
loop (:mod:`dense_perception.offline.run.loop`) share.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..console import warn


@dataclass
class Frame:
    """One input frame (``image`` None when it cannot be used; ``problem`` says why)."""

    index: int
    stem: str
    image: np.ndarray | None
    encoding: str = "bgr8"
    problem: str = ""
    header: Any = None          # bag input: the image message's header (outputs carry it)
    log_time: int = 0           # bag input: the image message's log time (ns)
    camera_info: Any = None     # bag input: the CameraInfo used
    camera_info_note: str = ""
    time: float = 0.0           # s: the header stamp (bag), frame time (video), index (images)
    reference: Any = None       # metric reference depth for this frame (bag, reference_depth)
    camera: str = ""            # bag input: the image topic (several --topic: the camera)
    pose: Any = None            # 4x4 world_from_camera (optical frame) when the motion is known


@dataclass
class Copy:
    """An input bag message to copy unchanged into the output bag."""

    conn: Any
    log_time: int
    data: bytes


# ---- targets: where finished frames go --------------------------------------------------------
class Target:
    """Where finished frames go."""

    def frame(self, frame: Frame, products: Any) -> None: ...
    def copy(self, item: Copy) -> None: ...
    def close(self, summary: dict[str, Any]) -> None: ...


class FolderTarget(Target):
    """A folder of files per product (``file_io.FolderSink``) and summary.json."""

    def __init__(self, sink: Any, summary: dict[str, Any]) -> None:
        self.sink = sink

    def frame(self, frame: Frame, products: Any) -> None:
        self.sink.write(frame.stem, products)

    def close(self, summary: dict[str, Any]) -> None:
        from .file_io import write_json
        from .scale_plot import write_scale_plot
        summary["files"] = dict(self.sink.counts)
        plot = write_scale_plot(self.sink.root, summary)
        summary["scale_plot"] = None if plot is None else plot.name
        write_json(self.sink.root / "summary.json", summary)


class BagTarget(Target):
    """A new bag: copied input topics, the node's output topics, and summary.json beside it."""

    sink: Any  # bag_write.BagSink, set once the copied connections are in
    record: Any = None  # bag_record.RunRecord: /diagnostics and /tf of the run
    ply: Path | None = None  # --ply: each frame's cloud as <ply>/<frame>_<stamp>.ply

    def __init__(self, out: Any, copy_conns: list[Any], summary: dict[str, Any]) -> None:
        self.out = out
        self._camera_frame: str | None = None
        self._copy: dict[int, Any] = {}
        skipped = []
        for conn in copy_conns:
            made = out.copy_connection(conn)
            if made is None:
                skipped.append(conn.topic)
            else:
                self._copy[conn.id] = made
        if skipped:
            warn(f"not copied (no message definition in the bag): {', '.join(sorted(skipped))}")
        summary["not_copied"] = sorted(skipped)

    def frame(self, frame: Frame, products: Any) -> None:
        if self._camera_frame is None and frame.header is not None:
            self._camera_frame = frame.header.frame_id  # the layout's 3D panel follows it
        write_frame = getattr(self.sink, "write_frame", None)  # several cameras: theirs
        if write_frame is not None:
            write_frame(frame.camera, products, frame.header, frame.log_time)
        else:
            self.sink.write(products, frame.header, frame.log_time)
        if self.ply is not None and products.points is not None:
            from .file_io import write_ply
            stamp = f"{frame.header.stamp.sec}.{frame.header.stamp.nanosec:09d}"
            camera = "_" + frame.camera.strip("/").replace("/", "_") \
                if write_frame is not None else ""
            write_ply(self.ply / f"{frame.stem}{camera}_{stamp}.ply", products.points)
        if self.record is not None:
            self.record.frame(products, frame.header, frame.log_time,
                              f": {frame.camera}" if write_frame is not None else "")

    def copy(self, item: Copy) -> None:
        conn = self._copy.get(item.conn.id)
        if conn is not None:
            self.out.write_raw(conn, item.log_time, item.data)
            if self.record is not None:
                self.record.copied(conn.topic, conn.msgtype, item.data, item.log_time)

    def close(self, summary: dict[str, Any]) -> None:
        from .file_io import write_json
        try:
            self.out.close()
        finally:
            from .scale_plot import write_scale_plot
            summary["messages"] = dict(sorted(self.out.counts.items()))
            plot = write_scale_plot(self.out.path, summary)
            summary["scale_plot"] = None if plot is None else plot.name
            summary["foxglove_layout"] = self._write_layout(summary["messages"])
            write_json(self.out.path / "summary.json", summary)

    def _write_layout(self, counts: dict[str, int]) -> str | None:
        """foxglove_layout.json beside the bag: the views, cloud and /diagnostics it holds
        (the first camera's, for several), the cloud accumulating in the odometry's frame
        where the bag has /tf; its name, or None when no frame was written."""
        from ...core.foxglove_layout import foxglove_layout
        from .file_io import write_json
        sink = getattr(self, "sink", None)
        sink = next(iter(sink.sinks.values()), None) if hasattr(sink, "sinks") else sink
        if sink is None or self._camera_frame is None:
            return None
        odometry_frame = getattr(self.record, "odometry_frame", None)
        layout = foxglove_layout(sink.namespace, self._camera_frame,
                                 {t for t, n in counts.items() if n},
                                 odometry_frame if counts.get("/tf") else None)
        write_json(self.out.path / "foxglove_layout.json", layout)
        return "foxglove_layout.json"
