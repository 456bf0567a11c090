# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""ByStamp (core/by_stamp.py), the ordered store under the CameraInfo history and the reference
depth window, against a brute force over a plain dict: the same order, the same replacement of
an equal stamp, and the same latest-before and nearest answers."""

import random

import pytest

from dense_perception.core.by_stamp import ByStamp

pytestmark = pytest.mark.numerics


@pytest.mark.timeout(30)
def test_matches_a_brute_force_over_random_stamps():
    rng = random.Random(7)
    held, truth = ByStamp(), {}
    for n in range(400):
        stamp = rng.randrange(0, 200)
        replaced = held.put(stamp, n)
        assert replaced == truth.get(stamp)
        truth[stamp] = n
        if rng.random() < 0.1:
            oldest = min(truth)
            assert held.pop_oldest() == truth.pop(oldest)
        assert held.stamps == sorted(truth) and held.items == [truth[s] for s in sorted(truth)]
        probe = rng.randrange(-10, 210)
        before = [s for s in truth if s <= probe]
        i = held.at_or_before(probe)
        assert (held.stamps[i] if i >= 0 else None) == (max(before) if before else None)
        j = held.nearest(probe)
        # nearest: the smallest distance, the earlier stamp of two as near
        want = min(sorted(truth), key=lambda s: abs(s - probe)) if truth else None
        assert (held.stamps[j] if j >= 0 else None) == want


def test_empty():
    held = ByStamp()
    assert len(held) == 0 and held.at_or_before(5) == -1 and held.nearest(5) == -1
