# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""A metric network's own metres as one more scale source: its depth says the scale is 1 with a
relative error (``metric_depth_error``), and an estimated source (motion, the floor, a
reference) measures the factor its metres need. The two are fused by their errors before the
scale filter; where they disagree beyond both errors the measurement wins (a metric network is
right on the cameras and rooms it was trained on and off elsewhere), and the report says so.

The network's error widens where it is out of its depth: :class:`ModelMetres` keeps, per
camera, the mean square of the measurements' disagreement with the network beyond their own
errors (over the last :data:`GAP_MEMORY` measurements), and adds it to the network's error. A
network a steady 15 % off on this camera thus claims about 15 %, not its training error."""

from __future__ import annotations

import math
from dataclasses import replace

from .estimators import Estimate, fuse_measurements, fused_systematic, measured

GAP_MEMORY = 30  # measurements: the disagreement's running mean (1/n at first)


def with_model_metres(est: Estimate, source: str, model_error: float
                      ) -> tuple[Estimate, bool]:
    """The frame's estimate of the factor a metric network's metres need: ``est`` (from
    ``source``) fused with the network's own claim (1, ``model_error``), and whether the two
    disagree beyond 3 standard errors of both (then ``est`` alone, with the reason). Without a
    measurement, or one without an error, the network's own metres stand."""
    # The network's error is its bias on this camera and room: all systematic.
    if not measured(est):
        return replace(est, scale=1.0, sigma=model_error, systematic=model_error), False
    fused = fuse_measurements(est.scale, est.sigma, 1.0, model_error)
    if fused is None:
        return replace(est, reason=(
            f"the network's metres are {1.0 / est.scale:.2f}x what {source} measures, beyond "
            f"both errors ({200.0 * model_error:.0f} % and {200.0 * est.sigma:.0f} %, 2 "
            f"sigma): corrected by {source}")), True
    return replace(est, scale=fused[0], sigma=fused[1], systematic=fused_systematic(
        est.sigma, est.systematic, model_error, model_error)), False


class ModelMetres:
    """Per camera: the network's error as this camera's measurements find it."""

    def __init__(self) -> None:
        self._gap2 = 0.0
        self._count = 0

    def reset(self) -> None:
        """Forget the measurements (another camera, or another source)."""
        self._gap2, self._count = 0.0, 0

    def error(self, model_error: float) -> float:
        """The network's relative error: ``model_error`` and the disagreement seen, in
        quadrature."""
        return math.sqrt(model_error ** 2 + self._gap2)

    def fuse(self, est: Estimate, source: str, model_error: float) -> tuple[Estimate, bool]:
        """:func:`with_model_metres` with the error widened by the measurements before this one;
        then this measurement is remembered (its square log beyond its own variance)."""
        fused = with_model_metres(est, source, self.error(model_error))
        if measured(est):
            excess = max(math.log(est.scale) ** 2 - est.sigma ** 2, 0.0)
            self._count = min(self._count + 1, GAP_MEMORY)
            self._gap2 += (excess - self._gap2) / self._count
        return fused
