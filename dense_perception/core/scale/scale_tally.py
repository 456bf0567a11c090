# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The scale of every frame of a run, tallied: summary.json's ``depth`` record (``dense-perception
process``), the run's closing line, and the node's running count in /diagnostics.

Per frame: its input name and stamp, the scale and this frame's estimate, the error claimed
(2 sigma, in %, as /diagnostics says it), whether the depth came out in metres, and, where a
reason was given, its kind and its text. A reason's *kind* is its text with the numbers and
the parenthesised details taken out (:func:`reason_kind`), so that frames withheld for the
same cause are counted together."""

from __future__ import annotations

import re
import statistics

from .metric_scale import ESTIMATED_SOURCES, ScaleReport, withholds_depth

_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?")
_DETAIL = re.compile(r"\s*\([^()]*\)")


def _plain(text: str) -> str:
    """The first clause of ``text`` without parenthesised details, numbers as N."""
    return _NUMBER.sub("N", _DETAIL.sub("", text.split("; ")[0])).strip()


def reason_kind(reason: str) -> str:
    """What a scale's reason says, without its numbers: the first clause before a colon, and,
    for a scale withheld by ``max_scale_error``, the largest part of its error too ("" for
    no reason)."""
    if not reason:
        return ""
    head, _, rest = reason.partition(": ")
    kind = _plain(head)
    if "max_scale_error" in head and rest:
        kind = f"{kind}: {_plain(rest.partition(': ')[0])}"
    return kind


def error_2sigma_pct(report: ScaleReport) -> float | None:
    """The scale's claimed error as /diagnostics gives it: 2 sigma in %, one decimal."""
    return None if report.sigma is None else round(200.0 * report.sigma, 1)


class ScaleTally:
    """The scale of every frame of a run, for summary.json (offline), the closing line and
    the node's /diagnostics."""

    def __init__(self) -> None:
        self.reports: list[ScaleReport] = []
        self.names: list[str] = []
        self.stamps: list[float | None] = []
        self.metric = 0
        self.withheld: dict[str, int] = {}  # by reason kind
        self.keep = True  # False (the node): counts only, the reports are not kept

    def add(self, report: ScaleReport | None, name: str = "", stamp: float | None = None
            ) -> None:
        """One frame's report (``name``: its input, ``stamp``: its time in s)."""
        if report is None:
            return
        self.metric += report.metric
        if not report.metric:
            kind = reason_kind(report.reason) or report.units()
            self.withheld[kind] = self.withheld.get(kind, 0) + 1
        if self.keep:
            self.reports.append(report)
            self.names.append(name)
            self.stamps.append(stamp)
        else:
            self.reports[:] = [report]  # the last one: its source and units

    @property
    def frames(self) -> int:
        """Frames tallied."""
        return self.metric + sum(self.withheld.values())

    def estimated(self) -> bool:
        """Whether the run's depth was to come out in metres from an estimated scale (or a
        metric model checked by one)."""
        return bool(self.reports) and (self.reports[-1].source in ESTIMATED_SOURCES
                                       or self.reports[-1].metric_model)

    def claimed(self) -> float | None:
        """The median 2 sigma (%) the frames in metres claimed; None without one."""
        values = [error_2sigma_pct(r) for r in self.reports if r.metric]
        values = [v for v in values if v is not None]
        return round(statistics.median(values), 1) if values else None

    def summary(self) -> dict:
        """Units, source, frames in metres / relative / withheld and why, and every frame."""
        if not self.reports:
            return {"units": "none (no depth)"}
        last = self.reports[-1]
        units = last.units()
        if self.estimated() and 0 < self.metric < len(self.reports):
            # A run of both kinds: its units, not only the last frame's.
            metric = next(r for r in reversed(self.reports) if r.metric)
            units = (f"{metric.units()} for {self.metric} of {len(self.reports)} frames; the "
                     "others relative, their depth/image and points withheld (see "
                     "withheld_by_reason)")
        out = {"units": units, "source": last.source, "frames_metric": self.metric,
               "frames_relative": len(self.reports) - self.metric,
               "frames_withheld": sum(withholds_depth(r) for r in self.reports),
               "metric_model": last.metric_model or last.source == "model"}
        if not self.estimated():
            if last.scale is not None:
                out["scale"] = last.scale
            return out
        out.update(
            scale_filter=("none: each image its own estimate" if last.per_frame
                          else "temporal (depth_scale_time_constant, max age)"),
            error_unit="2 sigma, % of the scale (as /diagnostics)",
            error_2sigma_pct_median=self.claimed(),
            withheld_by_reason=dict(sorted(self.withheld.items(), key=lambda kv: -kv[1])),
            frames_not_sure_enough=sum(r.bounded_out for r in self.reports),
            frames_sources_disagree=sum(r.disagrees for r in self.reports),
            frames_guessed_camera=sum(r.guessed for r in self.reports),
            filter_restarts=sum(r.restarted for r in self.reports))
        if last.source == "motion":
            offsets = [r.clock_offset for r in self.reports if r.clock_offset is not None]
            out["pose_clock_offset_s"] = round(offsets[-1], 4) if offsets else None
        out["frames"] = [{
            "input": name, "stamp": None if stamp is None else round(stamp, 6),
            "in_metres": r.metric,
            "scale": None if r.scale is None else round(r.scale, 6),
            "estimate": None if r.estimate is None else round(r.estimate, 6),
            "error_2sigma_pct": error_2sigma_pct(r),
            "reason_kind": reason_kind(r.reason), "reason": r.reason}
            for r, name, stamp in zip(self.reports, self.names, self.stamps)]
        return out

    def closing_line(self) -> str:
        """What came out, in one line for the end of a run ("" where the scale is not
        estimated: the units are as set)."""
        if not self.estimated():
            return ""
        source = self.reports[-1].source
        if not self.metric:
            said = f"no frame came out in metres (depth_scale_source {source})"
        else:
            claimed = self.claimed()
            said = (f"{self.metric} of {self.frames} frames in metres from {source}"
                    + ("" if claimed is None else f", claiming a median 2 sigma of {claimed} %"))
        if self.withheld:
            top = sorted(self.withheld.items(), key=lambda kv: -kv[1])[:3]
            said += "; withheld: " + "; ".join(f"{n} x {kind}" for kind, n in top)
            if len(self.withheld) > 3:
                said += f"; {len(self.withheld) - 3} more kinds in summary.json"
        return said
