# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Raw model outputs -> depth, normals and segmentation products, plus their colour views."""

from __future__ import annotations

import math
import time
from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING

import cv2
import numpy as np

if TYPE_CHECKING:
    from .scheduling.host_threads import HostThreads

INVALID_LABEL = 255  # mono8 label for pixels the model did not see (outside the crop)


def depth_from_output(raw: np.ndarray, scale: float = 1.0, inverse: bool = False) -> np.ndarray:
    """H x W float32 depth from a one-plane output ([1,1,H,W], [1,H,W,1], [1,H,W] or [H,W]);
    non-finite or <= 0 becomes NaN (REP 117).

    ``scale`` converts relative depth to the caller's units; it is never normalised per frame.
    ``inverse``: the output is inverse depth (disparity-like): depth = scale / x, and a
    non-positive x (infinitely far or nonsense) is invalid too.
    """
    plane = _plane(raw)
    if inverse:
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            depth = np.divide(np.float32(scale), plane, dtype=np.float32)
    else:
        depth = np.multiply(plane, np.float32(scale), dtype=np.float32)
    depth[~(depth > 0) | ~np.isfinite(depth)] = np.nan
    return depth


def _plane(raw: np.ndarray) -> np.ndarray:
    """The H x W plane of a one-plane output (a view)."""
    if raw.ndim == 4:
        return raw[0, 0] if raw.shape[1] == 1 else raw[0, :, :, 0]
    return raw[0] if raw.ndim == 3 else raw


def confidence_from_output(raw: np.ndarray) -> np.ndarray:
    """H x W float32 confidence from a [1,1,H,W] output, values as the model gives them
    (DA3: >= 1, larger = more sure); non-finite becomes NaN."""
    confidence = np.array(raw[0, 0], np.float32)  # a copy: the runner reuses its buffer
    confidence[~np.isfinite(confidence)] = np.nan
    return confidence


def depth_to_millimetres(depth: np.ndarray) -> np.ndarray:
    """16UC1 millimetres (REP 118), the one conversion of every 16UC1 and png16 image: 0 =
    invalid, and so is depth 16 bits cannot hold (NaN, <= 0, under 0.5 mm or past 65.535 m):
    a clamped value would be a wrong distance."""
    with np.errstate(invalid="ignore", over="ignore"):
        mm = np.rint(depth * 1000.0)
        valid = (mm >= 1) & (mm <= 65535)  # NaN compares false
    out = np.zeros(depth.shape, np.uint16)
    out[valid] = mm[valid]
    return out


def colorize_depth(depth: np.ndarray, low_pct: float = 2.0, high_pct: float = 98.0) -> np.ndarray:
    """bgr8 view of depth, near = warm, over a robust percentile range; invalid pixels black.

    The colour index is floor(255 (hi - d) / (hi - lo)) clipped to 0..255, computed in float32
    (a subtract and a clamp, then one OpenCV scale-add-saturate); a value within float32's
    rounding of an integer can land one index off the float64 formula of before. Invalid
    pixels are masked in one pass after the colour map.
    """
    valid = np.isfinite(depth)
    if not valid.any():
        return np.zeros(depth.shape + (3,), np.uint8)
    # A quarter of the pixels gives the same robust range at a quarter of the cost.
    sample = depth[::2, ::2]
    sample = sample[np.isfinite(sample)]
    # Both are fresh copies (boolean indexing), so they may be partitioned in place.
    lo, hi = percentile_pair(sample if sample.size else depth[valid], low_pct, high_pct)
    span = max(float(hi - lo), 1e-6)
    # Near is bright: index 255 at lo, 0 at hi and beyond. hi - d is clamped at 0 first (the
    # next step takes an absolute value); x - 0.5 rounded is floor(x) but at exact integers.
    # NaN stays NaN here and is masked below.
    behind = np.subtract(np.float32(hi), depth, dtype=np.float32)
    cv2.max(behind, 0.0, dst=behind)
    index = cv2.convertScaleAbs(behind, alpha=255.0 / span, beta=-0.5)
    colours = cv2.applyColorMap(index, cv2.COLORMAP_TURBO)
    return cv2.bitwise_and(colours, colours, mask=valid.view(np.uint8))


def percentile_pair(values: np.ndarray, low_pct: float, high_pct: float) -> tuple[float, float]:
    """``np.percentile(values, (low_pct, high_pct))`` (its default 'linear' method) of a 1-D
    float32 array without NaN, which is partitioned in place (pass a copy); low <= high.

    numpy partitions at six ranks, the ends included (to find NaN), with its NaN-aware float
    comparison. Here: two ranks, and where no value is negative, on the int32 view of the bits
    (IEEE 754 bit patterns of non-negative floats order as the floats do, and the integer
    partition is faster; figures in docs/performance.md). The order statistics and the
    interpolation are numpy's.
    """
    n = values.size
    ranks = [(n - 1) * (low_pct / 100.0), (n - 1) * (high_pct / 100.0)]  # numpy's order
    below = [min(int(math.floor(r)), n - 1) for r in ranks]
    keys = values.view(np.int32) if values.dtype == np.float32 and values.min() >= 0 else values
    keys.partition(below)
    result = []
    for j, (rank, i) in enumerate(zip(ranks, below)):
        a, gamma = values[i], rank - i
        if gamma == 0.0 or i + 1 >= n:
            result.append(float(a))
            continue
        # The next order statistic is the smallest value above rank i, up to the next rank.
        end = below[1] + 1 if j == 0 and below[1] > i else n
        b = values[i + 1:end].min()
        # numpy's lerp: the difference in float32 (the values' type), then float64 from the
        # nearer end
        step = float(b - a)
        result.append(float(a) + step * gamma if gamma < 0.5 else float(b) - step * (1.0 - gamma))
    return result[0], result[1]


def normals_from_output(raw: np.ndarray) -> np.ndarray:
    """H x W x 3 float32 unit normals from a [1,3,H,W] output (renormalised; zero -> NaN).

    Normalised plane by plane (the output's planes are contiguous), then interleaved once by
    ``cv2.merge``: a third of the time of transposing first. numpy does the arithmetic, so every
    pixel gets the same rounding (OpenCV's vector code fuses multiply-adds that its scalar tail
    does not, which made the last pixels of a frame depend on where its buffer lay).
    """
    x, y, z = (np.asarray(raw[0, c], np.float32) for c in range(3))
    norm = np.multiply(x, x)
    norm += y * y
    norm += z * z
    np.sqrt(norm, out=norm)
    bad = ~(norm > 1e-12) | ~np.isfinite(norm)
    norm[bad] = np.nan
    return cv2.merge([np.divide(x, norm), np.divide(y, norm), np.divide(z, norm)])


def normalize_vectors(n: np.ndarray) -> np.ndarray:
    """Scale H x W x 3 vectors to unit length in place; zero or non-finite vectors become NaN."""
    norm = np.sqrt(np.einsum("hwc,hwc->hw", n, n))
    bad = ~(norm > 1e-12) | ~np.isfinite(norm)
    norm[bad] = np.nan
    n /= norm[:, :, None]
    return n


def colorize_normals(normals: np.ndarray) -> np.ndarray:
    """rgb8 view: (n + 1) / 2 per component, rounded; invalid pixels black.

    One OpenCV pass: |127.5 n + 127.5| saturated to uint8 (the absolute value changes nothing
    for unit vectors), then NaN components set to 0. OpenCV rounds halves to even, so a
    component exactly on a half level can be one level below the round-half-up of before.
    """
    out = cv2.convertScaleAbs(normals, alpha=127.5, beta=127.5)
    out[np.isnan(normals)] = 0
    return out


def labels_from_logits(logits: np.ndarray) -> np.ndarray:
    """uint8 labels: argmax over the class axis of a [1,C,H,W] output, at its own grid (the
    node's labels-only pass, :func:`labels_and_probability`)."""
    return labels_and_probability(logits, False)[0]


def labels_and_max(logits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(uint8 labels, the top logit) of a [1,C,H,W] output: argmax and max over the class axis.

    Read straight from the output buffer, one class plane at a time, with OpenCV's vectorised
    compare and masked copies (the GIL is released in each): several times faster than numpy's
    ``copyto(where=)`` loop or ``np.argmax(axis=0)``, which walks the class axis with a large
    stride. Ties go to the lower class id, as with
    argmax: only a strictly greater logit takes a pixel over, so a NaN logit never does
    (``cv2.max`` is not used: its vector and scalar code treat NaN differently). The max skips
    NaN logits, so it is not the ``top`` that :func:`top_class_probability` takes. The node
    and ``process`` use :func:`labels_and_probability`.
    """
    planes = logits[0]
    best = planes[0].copy()
    labels = np.zeros(best.shape, np.uint8)
    higher = np.empty(best.shape, np.uint8)
    class_id = np.empty(best.shape, np.uint8)
    for k in range(1, planes.shape[0]):
        cv2.compare(planes[k], best, cv2.CMP_GT, dst=higher)
        cv2.copyTo(planes[k], higher, dst=best)
        class_id.fill(k)
        cv2.copyTo(class_id, higher, dst=labels)
    return labels, best


# exp(-80) = 1.8e-35 is still a normal float32; below about -87 exp gives subnormals, whose
# arithmetic is 10-20 times slower on x86 and ARM. A class 80 logits below the top adds less than
# 1e-34 to the sum, so clamping there changes no probability by more than float32's rounding.
_EXP_FLOOR = -80.0


def top_class_probability(logits: np.ndarray, top: np.ndarray | None = None) -> np.ndarray:
    """H x W float32: the softmax probability of the top class of a [1,C,H,W] logits output.

    softmax_max = exp(l_max) / sum_k exp(l_k) = 1 / sum_k exp(l_k - l_max): every term is
    at most 1, so nothing overflows. ``top`` is numpy's max over the classes (computed here
    when not given; NaN wherever a logit is NaN, which :func:`labels_and_max`'s max is not).
    A pixel with a NaN or +inf logit gets NaN (unknown). The node and ``process`` use
    :func:`labels_and_probability`, which makes the labels in the same pass.

    Used for ``segmentation/confidence`` (as mono8: :func:`confidence_to_mono8`) and for
    TIPSv2's ``points_min_confidence`` filter (points whose top-class probability is under it).
    """
    planes = logits[0]
    if top is None:
        top = planes.max(axis=0)
    total = np.zeros(top.shape, np.float32)
    term = np.empty(top.shape, np.float32)
    # One plane at a time stays in cache (the whole C x H x W difference would not); OpenCV's
    # exp is about a quarter faster than numpy's here. The floor keeps exp out of subnormals
    # (the TIPSv2 test model's logits lie thousands apart: subnormal arithmetic is slow).
    for plane in planes:
        _add_softmax_term(plane, top, term, total)
    return _probability(total, top)


# The pass splits the classes, not the rows, between threads: each OpenCV call then covers a whole
# class plane, so every thread makes half as many calls for the same work. Its calls take and give
# back the GIL: with row bands (a thousand calls a band, on half planes) two bands gained little
# over one, and past two the threads queued for it (docs/performance.md has the figures).
LOGITS_PARTS_MAX = 2


def labels_and_probability(logits: np.ndarray, probability: bool,
                           threads: HostThreads | None = None
                           ) -> tuple[np.ndarray, np.ndarray | None, float]:
    """uint8 labels and, if ``probability``, the top class's softmax probability (H x W
    float32) of a [1,C,H,W] output, and the milliseconds the pass took with the probability
    (0 without it).

    First the max over the classes (numpy's, which propagates NaN; rows split between the
    threads). Then one pass over the class planes: each plane gives its pixels' label (lowest
    class id among equal maxima, as argmax) and, with the probability, its term of the softmax
    sum while it is in cache, so the logits are read twice. A pixel with a NaN logit gets label
    :data:`INVALID_LABEL` (and probability NaN). The classes are split between at most
    :data:`LOGITS_PARTS_MAX` host threads (at least 16 classes each); their labels are merged by
    their minimum (a part's invalid 255 is above every class id) and their sums added.
    """
    if threads is None:  # one part of each, in this thread (no pool is started)
        from .scheduling.host_threads import HostThreads
        threads = HostThreads(1)
    planes = logits[0]
    start = time.perf_counter()
    top = np.empty(planes.shape[1:], np.float32)
    threads.run([lambda y0=y0, y1=y1: np.max(planes[:, y0:y1], axis=0, out=top[y0:y1])
                 for y0, y1 in threads.bands(planes.shape[1], most=LOGITS_PARTS_MAX)])
    parts = threads.run([lambda k0=k0, k1=k1: _labels_and_softmax_sum(
        planes, k0, k1, top, probability)
        for k0, k1 in threads.bands(planes.shape[0], most=LOGITS_PARTS_MAX)])
    labels, total = parts[0]
    for part_labels, part_total in parts[1:]:
        cv2.min(labels, part_labels, dst=labels)
        if total is not None:
            cv2.add(total, part_total, dst=total)
    if total is None:
        return labels, None, 0.0
    prob = _probability(total, top)
    return labels, prob, (time.perf_counter() - start) * 1000.0


def _labels_and_softmax_sum(planes: np.ndarray, k0: int, k1: int, top: np.ndarray,
                            softmax: bool) -> tuple[np.ndarray, np.ndarray | None]:
    """Over classes ``k0``..``k1 - 1``: each pixel's lowest class id whose logit equals ``top``
    (:data:`INVALID_LABEL` where none does) and, if ``softmax``, sum_k exp(l_k - top)."""
    labels = np.full(top.shape, INVALID_LABEL, np.uint8)
    equal = np.empty(top.shape, np.uint8)
    class_id = np.empty(top.shape, np.uint8)
    total = np.zeros(top.shape, np.float32) if softmax else None
    term = np.empty(top.shape, np.float32) if softmax else None
    for k in range(k1 - 1, k0 - 1, -1):  # downwards: the lowest id is written last
        plane = planes[k]
        cv2.compare(plane, top, cv2.CMP_EQ, dst=equal)  # NaN equals nothing: stays invalid
        class_id.fill(k)
        cv2.copyTo(class_id, equal, dst=labels)
        if softmax:
            _add_softmax_term(plane, top, term, total)
    return labels, total


def _add_softmax_term(plane: np.ndarray, top: np.ndarray, term: np.ndarray,
                      total: np.ndarray) -> None:
    """total += exp(max(plane - top, floor)), in place (``term`` is scratch). A NaN or
    infinite top is marked by :func:`_probability` afterwards."""
    cv2.subtract(plane, top, dst=term)
    cv2.max(term, _EXP_FLOOR, dst=term)
    cv2.exp(term, dst=term)
    cv2.add(total, term, dst=total)


def _probability(total: np.ndarray, top: np.ndarray) -> np.ndarray:
    """1 / the softmax sum, NaN where the top logit is NaN or infinite (one NaN logit makes
    numpy's max NaN): OpenCV's max may turn such a pixel's NaN terms into the floor, so the
    pixel is marked here once instead of being carried through every plane."""
    prob = np.reciprocal(total, out=total)
    prob[~np.isfinite(top)] = np.nan
    return prob


def confidence_to_mono8(probability: np.ndarray) -> np.ndarray:
    """mono8 of a probability in [0, 1]: round(p x 255); NaN (unknown) becomes 0."""
    scaled = np.nan_to_num(probability * np.float32(255.0), nan=0.0)
    return np.rint(np.clip(scaled, 0.0, 255.0)).astype(np.uint8)


def _model_data(name: str) -> str:
    """A data file of the models (``core/model/data/``): the segmentation head's class names and colours."""
    return resources.files("dense_perception.core.model").joinpath("data", name).read_text()


@lru_cache(maxsize=1)
def ade20k_class_names() -> tuple[str, ...]:
    """The 150 ADE20K class names, index = label id."""
    text = _model_data("ade20k_classes.txt")
    return tuple(line.strip() for line in text.splitlines() if line.strip())


@lru_cache(maxsize=1)
def ade20k_palette() -> np.ndarray:
    """256 x 3 uint8 RGB palette: the standard ADE20K colours, black for unused ids (255)."""
    text = _model_data("ade20k_palette.csv")
    rows = [tuple(int(v) for v in line.split(",")) for line in text.splitlines() if line.strip()]
    palette = np.zeros((256, 3), np.uint8)
    palette[:len(rows)] = rows
    return palette


def colorize_labels(labels: np.ndarray) -> np.ndarray:
    """rgb8 view of a label image with the ADE20K palette (one ``cv2.LUT`` pass)."""
    return cv2.LUT(cv2.cvtColor(labels, cv2.COLOR_GRAY2RGB), _palette_lut())


@lru_cache(maxsize=1)
def _palette_lut() -> np.ndarray:
    return np.ascontiguousarray(ade20k_palette().reshape(1, 256, 3))


def overlay(rgb: np.ndarray, colours: np.ndarray, alpha: float = 0.5) -> np.ndarray:
    """Blend a colour view over the camera image (same size, both rgb8)."""
    return cv2.addWeighted(rgb, 1.0 - alpha, colours, alpha, 0.0)
