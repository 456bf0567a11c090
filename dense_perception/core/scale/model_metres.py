# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""A metric network's own metres as one more scale source: its depth says the scale is 1 with a
relative error (``metric_depth_error``), and an estimated source (motion, the floor, a
reference) measures the factor its metres need. The two are fused by their errors before the
scale filter; where they disagree beyond both errors the measurement wins (a metric network is
right on the cameras and rooms it was trained on and off elsewhere), and the report says so."""

from __future__ import annotations

import math
from dataclasses import replace

from .estimators import Estimate


def with_model_metres(est: Estimate, source: str, model_error: float
                      ) -> tuple[Estimate, bool]:
    """The frame's estimate of the factor a metric network's metres need: ``est`` (from
    ``source``) fused with the network's own claim (1, ``model_error``), and whether the two
    disagree beyond 3 standard errors of both (then ``est`` alone, with the reason). Without a
    measurement, or one without an error, the network's own metres stand."""
    if est.scale is None or est.sigma is None or not est.sigma > 0:
        return replace(est, scale=1.0, sigma=model_error), False
    x, var_e, var_m = math.log(est.scale), est.sigma ** 2, model_error ** 2
    if x * x > 9.0 * (var_e + var_m):
        return replace(est, reason=(
            f"the network's metres are {1.0 / est.scale:.2f}x what {source} measures, beyond "
            f"both errors ({200.0 * model_error:.0f} % and {200.0 * est.sigma:.0f} %, 2 "
            f"sigma): corrected by {source}")), True
    weight = var_m / (var_m + var_e)  # of the measurement, against the network's 1
    return replace(est, scale=math.exp(weight * x),
                   sigma=math.sqrt(var_m * var_e / (var_m + var_e))), False
