# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The scale of every frame of a run, tallied for summary.json (``dense-perception process``):
units and source, the frames in metres, relative and withheld, and, for an estimated source,
the scale, estimate and error of each frame and why frames had none."""

from __future__ import annotations

from .metric_scale import ESTIMATED_SOURCES, ScaleReport, withholds_depth


class ScaleTally:
    """The scale of every frame of a run, for summary.json (offline) and the bench."""

    def __init__(self) -> None:
        self.reports: list[ScaleReport] = []

    def add(self, report: ScaleReport | None) -> None:
        if report is not None:
            self.reports.append(report)

    def summary(self) -> dict:
        """Units, source, frames in metres / relative / withheld, and the scale per frame."""
        if not self.reports:
            return {"units": "none (no depth)"}
        last = self.reports[-1]
        metric = sum(r.metric for r in self.reports)
        out = {"units": last.units(), "source": last.source, "frames_metric": metric,
               "frames_relative": len(self.reports) - metric,
               "frames_withheld": sum(withholds_depth(r) for r in self.reports)}
        if last.source in ESTIMATED_SOURCES:
            out["scale_filter"] = ("none: each image its own estimate" if last.per_frame
                                   else "temporal (depth_scale_time_constant, max age)")
            out["scale_per_frame"] = [None if r.scale is None else round(r.scale, 6)
                                      for r in self.reports]
            out["estimate_per_frame"] = [None if r.estimate is None else round(r.estimate, 6)
                                         for r in self.reports]
            out["sigma_per_frame"] = [None if r.sigma is None else round(r.sigma, 5)
                                      for r in self.reports]
            out["frames_not_sure_enough"] = sum(r.bounded_out for r in self.reports)
            out["frames_sources_disagree"] = sum(r.disagrees for r in self.reports)
            if last.source == "motion":
                offsets = [r.clock_offset for r in self.reports if r.clock_offset is not None]
                out["pose_clock_offset_s"] = round(offsets[-1], 4) if offsets else None
            reasons: dict[str, int] = {}
            for r in self.reports:
                if r.reason:
                    reasons[r.reason] = reasons.get(r.reason, 0) + 1
            out["no_estimate_reasons"] = reasons
            out["frames_guessed_camera"] = sum(r.guessed for r in self.reports)
            out["filter_restarts"] = sum(r.restarted for r in self.reports)
        elif last.scale is not None:
            out["scale"] = last.scale
        return out
