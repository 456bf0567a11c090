# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Reference depths kept by time, bounded in count and bytes (the node's reference_depth)."""

import pytest

from dense_perception.core.scale.reference_window import ReferenceWindow

pytestmark = [pytest.mark.numerics, pytest.mark.timeout(10)]
S = 1_000_000_000  # ns per second


def test_a_30hz_sensor_is_kept_for_the_whole_span():
    window = ReferenceWindow(span_s=5.0, max_count=10_000, max_bytes=10**12)
    for n in range(300):  # 10 s at 30 Hz
        window.add(n * S // 30, f"ref{n}", 100)
    # 5 s back from the newest stamp (9.967 s): 151 messages, the oldest at 4.967 s
    assert len(window) == 151 and next(iter(window)) == "ref149"
    # a frame 1.5 s old finds its own reference; one stamped 0.01 s off is within a 0.02 s slop
    assert window.nearest(255 * S // 30, slop=S // 50) == ("ref255", 0)
    item, dt = window.nearest(255 * S // 30 + S // 100, slop=S // 50)
    assert item == "ref255" and dt == S // 100
    assert window.nearest(255 * S // 30 + S // 60, slop=S // 100) == (None, 0)  # beyond


def test_memory_is_bounded_by_count_and_bytes_oldest_first():
    window = ReferenceWindow(span_s=0.0, max_count=5, max_bytes=1000)  # no limit by time
    for n in range(20):
        window.add(n * S, n, 100)
    assert list(window) == [15, 16, 17, 18, 19] and window.nbytes == 500
    for n in range(20, 24):
        window.add(n * S, n, 400)  # larger messages: the byte cap bites first
    assert list(window) == [22, 23] and window.nbytes == 800
    window.add(23 * S, "again", 100)  # the same stamp replaces
    assert list(window) == [22, "again"] and window.nbytes == 500
    window.add(30 * S, "huge", 5000)  # one larger than the cap is still kept alone
    assert list(window) == ["huge"]
