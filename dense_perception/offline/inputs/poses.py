# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""``--poses FILE``: a camera trajectory (TUM, camera-to-world of the optical frame) for a folder
of images or a video, so that the frames are a sequence with known motion (temporal alignment,
``--depth-scale-source motion``). Bags carry their motion as odometry instead.

A folder with poses is one camera's stream, not unrelated photos: its frames share a scale
filter and take the trajectory's stamps as their times. Frames named by their stamps
(``1305031102.175304.png``) are matched by stamp, never by line order: each takes the pose at
its own stamp, and a trajectory on another clock (no frame within it) is refused. In a folder
laid out as RGB-D datasets ship (``frame-000000.color.jpg`` beside ``frame-000000.depth.png``),
the depth images beside the colour ones are the dataset's measurements, not frames.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Iterator

from ...core.motion.trajectory import MAX_GAP_S, Trajectory, TrajectoryError, read_tum
from ..console import warn
from .events import Frame
from ..options.scale_options import ScaleOptionError

COMPANION = re.compile(r"^(?P<stem>.+)\.(?P<kind>depth|color|rgb)\.[^.]+$", re.IGNORECASE)


def load_poses(path: str | None) -> Trajectory | None:
    """The trajectory of ``--poses`` (None without one); ScaleOptionError (exit 2, one line)
    for a file that cannot be used."""
    if not path:
        return None
    try:
        return read_tum(path)
    except TrajectoryError as exc:
        raise ScaleOptionError(str(exc)) from None


def colour_frames(paths: list[Path]) -> list[Path]:
    """``paths`` without the ``<stem>.depth.<ext>`` files that sit beside a
    ``<stem>.color.<ext>`` (or ``.rgb.``) one: an RGB-D dataset's measured depth, not frames."""
    colour = {m["stem"] for p in paths if (m := COMPANION.match(p.name))
              and m["kind"].lower() != "depth"}
    return [p for p in paths if not ((m := COMPANION.match(p.name))
                                     and m["kind"].lower() == "depth" and m["stem"] in colour)]


def posed_frames(events: Iterator[Frame], trajectory: Trajectory, total: int | None,
                 times: list[float] | None = None, tally: dict | None = None,
                 stamps: list[float] | None = None, notes: list[str] | None = None
                 ) -> Iterator[Frame]:
    """The frames with their pose and its stamp as their time. ``stamps``, the stamps that
    name a folder's frames (``file_io.name_stamps``): each frame takes the trajectory's pose at
    its own stamp (``Trajectory.at_stamps``); the frames without one keep their stamp as
    their time, and are said once on stderr and in ``notes`` (summary.json's "warnings").
    Else one line per frame, in order, when the counts agree, or by stamp to ``times`` (a
    video's frame times). ScaleOptionError, before any frame, when the trajectory does not
    fit the input. ``tally`` (summary.json's "motion") counts the frames with a pose and
    those without one, as a bag's odometry does."""
    tally = {} if tally is None else tally
    tally.update(frames_with_motion=0, frames_without_motion={})
    try:
        matched = trajectory.at_stamps(stamps) if stamps is not None else \
            trajectory.for_frames(total, times)
    except TrajectoryError as exc:
        raise ScaleOptionError(str(exc)) from None
    missing = [i for i, m in enumerate(matched) if m is None]
    if stamps is not None and missing:
        note = (f"--poses: {len(missing)} of {len(stamps)} frames have no pose at their stamp "
                f"(the first at {stamps[missing[0]]:.3f} s; {trajectory.path} covers "
                f"{trajectory.stamps[0]:.3f}-{trajectory.stamps[-1]:.3f} s, lines at most "
                f"{MAX_GAP_S:g} s apart interpolated): they are processed without motion")
        warn(note)
        if notes is not None:
            notes.append(note)

    def frames() -> Iterator[Frame]:
        for frame in events:
            if frame.index < len(matched) and matched[frame.index] is not None:
                stamp, pose = matched[frame.index]
                frame = replace(frame, time=stamp, pose=pose)
                tally["frames_with_motion"] += 1
            else:
                if stamps is not None and frame.index < len(stamps):
                    frame = replace(frame, time=stamps[frame.index])  # one clock for all
                without = tally["frames_without_motion"]
                without["no trajectory line"] = without.get("no trajectory line", 0) + 1
            yield frame
    return frames()
