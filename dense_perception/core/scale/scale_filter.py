# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The temporal filter of the metric scale: robust, in log space, with a time constant and a
maximum age."""

from __future__ import annotations

import math
from collections import deque

import numpy as np

from .estimators import robust_spread

STEP_MIN_LOG = 0.05           # smallest change the step detector takes over at once (about 5 %)
JUMP_MIN_LOG = math.log(1.25)  # an estimate this far off the filtered scale (25 %) is not used
WINDOW_MAX = 256              # estimates kept at most (stamps that do not advance never expire)
STEP_MIN_COUNT = 3            # estimates that make a step: kept in the window whatever their age
DRIFT_PER_S = 0.03            # log scale per sqrt(s): how fast the scale in use may go wrong
CORRELATION_S = 1.0           # s: estimates closer than this share their errors (same partner,
                              # same view): together they count as one


class ScaleFilter:
    """Robust exponential filter of the scale in log space, with a time constant in seconds.

    * Each good estimate moves the log scale by ``alpha = 1 - exp(-dt / time_constant)`` of its
      residual (by 1/n for the n-th estimate while that is larger: a running mean at first),
      the residual clipped to 3 robust standard deviations of the window (Huber-like: one wild
      frame moves it little). ``dt`` comes from the frames' own stamps, so the result
      does not depend on how fast frames are processed.
    * A step (a new scene): when every estimate of the last third of the time constant (at
      least the last 3, however long they took) lies on the same side, farther than 3 standard
      deviations of the window (and 5 %), the filter jumps to their median. Smaller changes are
      followed exponentially.
    * A jump: an estimate farther than 3 standard deviations and 25 % from the filtered scale
      (a desk taken for the floor in one frame) is not used (:attr:`note` says so); it still
      counts for the step rule, which takes it over if it persists.
    * A frame without a trustworthy estimate leaves the scale as it is (held), for at most
      ``max_age`` seconds of frame stamps since the last good estimate (0: forever); older, the
      scale is forgotten (:attr:`scale` None) and the next good estimate starts afresh.
    * Its error: the filter also keeps the variance of its log scale, as a Kalman filter does.
      Each estimate with its own relative error ``sigma`` adds information 1 / sigma^2, in
      proportion to the time it covers (estimates within :data:`CORRELATION_S` of each other
      share their errors: a stream of them counts as one per :data:`CORRELATION_S`); time
      adds :data:`DRIFT_PER_S` ^2 per second of variance. An estimate's ``systematic`` part
      (a camera height, a floor that is two surfaces, a registration) is the same in the next
      frame of the same view and never averages out: the filter keeps the weighted mean of its
      estimates' (the log scale's own weights) and its error never drops below it.
      :attr:`sigma` is the scale's relative standard error, so a held scale loses its claim as
      time passes and a steady view never claims more than one frame of it can know. An
      estimate farther from the scale than 3 standard errors of both is a disagreement
      (:attr:`disagrees`).
    * The window holds the estimates of the last time constant (and at least the last 3, so
      that a slow camera can still make a step), at most :data:`WINDOW_MAX` (zero or repeated
      stamps never age out).
    """

    def __init__(self, time_constant: float, max_age: float = 0.0) -> None:
        self.time_constant = time_constant
        self.max_age = max_age
        self._log: float | None = None
        self._window: deque[tuple[float, float]] = deque(maxlen=WINDOW_MAX)  # (t, log scale)
        self._last_t: float | None = None
        self._count = 0  # good estimates since the last reset
        self.last_good_t: float | None = None
        self.note = ""  # why this frame's estimate was not used, "" when it was (or had none)
        self._variance: float | None = None  # of the log scale (None: no error known)
        self._variance_t: float | None = None
        self._systematic = 0.0  # the estimates' systematic part (log scale), weighted as the log
        self.disagrees = False  # this frame's estimate is beyond both errors from the scale

    @property
    def scale(self) -> float | None:
        """The filtered scale; None until the first good estimate, and once expired."""
        return None if self._log is None else math.exp(self._log)

    @property
    def expired(self) -> bool:
        """True when a scale was found but has been forgotten for its age (``max_age``)."""
        return self._log is None and self.last_good_t is not None

    @property
    def sigma(self) -> float | None:
        """The scale's relative standard error (log scale) at the last update; None without a
        scale or when its estimates carried no error."""
        if self._log is None or self._variance is None:
            return None
        return math.sqrt(max(self._variance, self._systematic ** 2))

    def _age_variance(self, t: float) -> None:
        """Time adds drift to the variance (frame stamps; never backwards)."""
        if self._variance is not None and self._variance_t is not None and t > self._variance_t:
            self._variance += DRIFT_PER_S ** 2 * (t - self._variance_t)
        if self._variance_t is None or t > self._variance_t:
            self._variance_t = t

    def _add_information(self, t: float, sigma: float | None) -> None:
        """Fuse one estimate's error into the variance (see the class docstring)."""
        if sigma is None or not sigma > 0:
            return
        since = CORRELATION_S if self._last_t is None else max(t - self._last_t, 1e-3)
        variance = sigma ** 2 * max(1.0, CORRELATION_S / since)
        if self._variance is None:
            self._variance = variance
            return
        self._variance = self._variance * variance / (self._variance + variance)

    def _disagrees(self, x: float, sigma: float | None) -> bool:
        """Whether the log estimate ``x`` lies beyond 3 standard errors of both it and the
        scale in use (both errors known)."""
        if sigma is None or self._variance is None or self._log is None:
            return False
        return (x - self._log) ** 2 > 9.0 * (self.sigma ** 2 + sigma ** 2)

    def spread(self) -> float:
        """Robust relative spread (1.4826 x MAD of log scale) of the estimates in the window."""
        if len(self._window) < 2:
            return 0.0
        return robust_spread(np.array([s for _, s in self._window]))

    def update(self, t: float, estimate: float | None, sigma: float | None = None,
               systematic: float = 0.0) -> float | None:
        """Feed the estimate of the frame stamped ``t`` (s); None = no trustworthy estimate.
        ``sigma``: the estimate's relative standard error (log scale), when its source knows
        it; ``systematic``: the part of ``sigma`` that does not average out over frames."""
        systematic = min(max(systematic, 0.0), sigma or 0.0)
        self.note = ""
        self.disagrees = False
        if self._last_t is not None and t < self._last_t - self.time_constant:
            self.reset()  # time went back (a bag replayed from the start): a new sequence
        elif (self.max_age > 0 and self._log is not None
              and t - self.last_good_t > self.max_age):
            self._forget()  # too old to stand for this scene
        self._age_variance(t)
        if estimate is None or not (estimate > 0 and math.isfinite(estimate)):
            return self.scale
        x = math.log(estimate)
        self._window.append((t, x))
        while (len(self._window) > STEP_MIN_COUNT
               and self._window[0][0] < t - self.time_constant):
            self._window.popleft()
        dt = 0.0 if self._last_t is None else max(t - self._last_t, 0.0)
        alpha = 1.0 - math.exp(-dt / self.time_constant)
        if self._log is None:
            self._log, self._count, self._systematic = x, 1, systematic
            self._variance = None
            self._add_information(t, sigma)
        else:
            sigma_in, sigma = sigma, self.spread()
            self.disagrees = self._disagrees(x, sigma_in)
            bound = max(3.0 * sigma, STEP_MIN_LOG)
            recent = [s for ts, s in self._window if ts >= t - self.time_constant / 3.0]
            if len(recent) < STEP_MIN_COUNT:  # a slow camera: its last few estimates
                recent = [s for _, s in list(self._window)[-STEP_MIN_COUNT:]]
            offsets = np.array(recent) - self._log
            step = float(np.median(offsets))
            if (len(recent) >= STEP_MIN_COUNT and (np.all(offsets > 0) or np.all(offsets < 0))
                    and abs(step) > bound):
                self._log += step
                self._variance = None  # a new scene: its error starts from its own estimates
                self._systematic = systematic
                self._add_information(t, sigma_in)
                self._count = len(recent)  # as if the new scene's estimates were averaged
                while self._window and self._window[0][0] < t - self.time_constant / 3.0:
                    self._window.popleft()  # the old scene's estimates no longer count
            elif abs(x - self._log) > max(3.0 * sigma, JUMP_MIN_LOG):
                self.note = (f"this frame's estimate {estimate:.4g} is "
                             f"{estimate / self.scale:.2f}x the filtered scale "
                             f"{self.scale:.4g}: not used unless it persists for a third of "
                             "the time constant (a scene change)")
                return self.scale
            else:
                # A running mean at first (1/n), then the exponential filter (alpha).
                self._add_information(t, sigma_in)
                self._count += 1
                weight = max(alpha, 1.0 / self._count)
                self._log += weight * min(max(x - self._log, -bound), bound)
                self._systematic += weight * (systematic - self._systematic)
        self._last_t = t
        self.last_good_t = t
        return self.scale

    def _forget(self) -> None:
        """Drop the scale and the window but keep ``last_good_t`` (reports give the age)."""
        self._log, self._last_t, self._count = None, None, 0
        self._variance = self._variance_t = None
        self._systematic = 0.0
        self._window.clear()

    def reset(self) -> None:
        """Forget everything (no scale until the next good estimate)."""
        self._forget()
        self.last_good_t = None
