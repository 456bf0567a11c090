# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""``scale.png`` beside summary.json: an estimated scale over the run, to look at.

Drawn with OpenCV from summary.json's ``depth.frames``: time (the frames' stamps) across, the
scale in use up (a line), its claimed 2 sigma as a band around it, and each frame's own
estimate as a dot. A strip along the bottom marks every frame: green where its depth came
out in metres, red where it was withheld (one tick per frame: they can be counted up to
about 860 frames, a pixel apart).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import cv2
import numpy as np

WIDTH, HEIGHT = 960, 360
MARGIN = 50           # px left and right, and above the plot
STRIP = 16            # px: the bottom strip of per-frame ticks
PLOT_BOTTOM = HEIGHT - STRIP - 30
BAND = (235, 206, 180)     # BGR: the 2 sigma band
LINE = (140, 60, 20)       # the scale in use
DOT = (60, 60, 60)         # each frame's own estimate
IN_METRES = (60, 170, 60)  # green tick
WITHHELD = (40, 40, 220)   # red tick
TEXT = (30, 30, 30)


def scale_plot(frames: list[dict[str, Any]], source: str) -> np.ndarray | None:
    """The picture of ``frames`` (summary.json's ``depth.frames``); None when no frame had a
    scale or an estimate (nothing to draw)."""
    values = [v for f in frames for v in (f["scale"], f["estimate"]) if v]
    if not frames or not values:
        return None
    times = [f["stamp"] if f["stamp"] is not None else i for i, f in enumerate(frames)]
    t0, t1 = min(times), max(times)
    span = (t1 - t0) or 1.0
    low, high = min(values), max(values)
    for f in frames:  # the band's reach too
        if f["scale"] and f["error_2sigma_pct"] is not None:
            low = min(low, f["scale"] * math.exp(-f["error_2sigma_pct"] / 100))
            high = max(high, f["scale"] * math.exp(f["error_2sigma_pct"] / 100))
    low, high = math.log(low) - 0.02, math.log(high) + 0.02

    def x(t: float) -> int:
        return int(round(MARGIN + (t - t0) / span * (WIDTH - 2 * MARGIN)))

    def y(value: float) -> int:
        return int(round(PLOT_BOTTOM - (math.log(value) - low) / (high - low)
                         * (PLOT_BOTTOM - MARGIN)))

    image = np.full((HEIGHT, WIDTH, 3), 255, np.uint8)
    cv2.rectangle(image, (MARGIN, MARGIN), (WIDTH - MARGIN, PLOT_BOTTOM), (200, 200, 200), 1)
    held = [(x(t), f) for t, f in zip(times, frames) if f["scale"]]
    for (xa, a), (xb, b) in zip(held, held[1:]):  # the band, then the line over it
        if a["error_2sigma_pct"] is None or b["error_2sigma_pct"] is None:
            continue
        ea, eb = a["error_2sigma_pct"] / 100, b["error_2sigma_pct"] / 100
        quad = np.array([[xa, y(a["scale"] * math.exp(ea))], [xb, y(b["scale"] * math.exp(eb))],
                         [xb, y(b["scale"] * math.exp(-eb))], [xa, y(a["scale"] * math.exp(-ea))]],
                        np.int32)
        cv2.fillConvexPoly(image, quad, BAND)
    for (xa, a), (xb, b) in zip(held, held[1:]):
        cv2.line(image, (xa, y(a["scale"])), (xb, y(b["scale"])), LINE, 2, cv2.LINE_AA)
    for t, f in zip(times, frames):
        if f["estimate"]:
            cv2.circle(image, (x(t), y(f["estimate"])), 2, DOT, -1, cv2.LINE_AA)
    # One tick per frame in the bottom strip.
    for t, f in zip(times, frames):
        colour = IN_METRES if f["in_metres"] else WITHHELD
        cv2.line(image, (x(t), HEIGHT - STRIP), (x(t), HEIGHT - 2), colour, 1)
    metric = sum(f["in_metres"] for f in frames)
    cv2.putText(image, f"depth scale from {source} (m per unit), 2 sigma band; {metric} of "
                f"{len(frames)} frames in metres (green), withheld (red)", (MARGIN, 30),
                cv2.FONT_HERSHEY_SIMPLEX, 0.45, TEXT, 1, cv2.LINE_AA)
    for value in (math.exp(low + 0.02), math.exp(high - 0.02)):
        cv2.putText(image, f"{value:.4g}", (2, y(value) + 4), cv2.FONT_HERSHEY_SIMPLEX, 0.35,
                    TEXT, 1, cv2.LINE_AA)
    cv2.putText(image, f"{t0:.2f} s", (MARGIN, PLOT_BOTTOM + 16), cv2.FONT_HERSHEY_SIMPLEX,
                0.35, TEXT, 1, cv2.LINE_AA)
    cv2.putText(image, f"{t1:.2f} s", (WIDTH - MARGIN - 50, PLOT_BOTTOM + 16),
                cv2.FONT_HERSHEY_SIMPLEX, 0.35, TEXT, 1, cv2.LINE_AA)
    return image


def write_scale_plot(folder: Path, summary: dict[str, Any]) -> Path | None:
    """``folder/scale.png`` from ``summary``'s depth record, where the scale was estimated
    over a sequence (not unrelated photos); its path, or None when not written."""
    depth = summary.get("depth") or {}
    frames = depth.get("frames")
    if not frames or depth.get("scale_filter", "").startswith("none"):
        return None
    image = scale_plot(frames, depth.get("source", ""))
    if image is None:
        return None
    path = Path(folder) / "scale.png"
    cv2.imwrite(str(path), image)
    return path
