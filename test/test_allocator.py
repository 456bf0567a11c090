# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""keep_freed_memory: after it, a frame-sized array comes from the heap (where freed blocks
are kept for the next frame) instead of fresh mmap pages that the kernel zeroes on first touch;
read from the process's own memory map, in a fresh interpreter each time."""

import subprocess
import sys

import pytest

PROBE = """
import sys
import numpy as np
if sys.argv[1] == "keep":
    from dense_perception.core.allocator import keep_freed_memory
    assert keep_freed_memory().startswith("glibc"), "not glibc"
a = np.empty((720, 1280), np.float32)  # 3.7 MB, like a 1280x720 depth map
address = a.ctypes.data
for line in open("/proc/self/maps"):
    span, *rest = line.split()
    low, high = (int(x, 16) for x in span.split("-"))
    if low <= address < high:
        print(rest[-1] if len(rest) >= 5 else "anonymous")
        break
"""


def _mapping(mode: str) -> str:
    out = subprocess.run([sys.executable, "-c", PROBE, mode], capture_output=True, text=True,
                         timeout=60, check=True)
    return out.stdout.strip()


@pytest.mark.timeout(120)
def test_frame_sized_arrays_come_from_the_heap():
    if not sys.platform.startswith("linux"):
        pytest.skip("glibc's mallopt and /proc/self/maps: Linux only")
    # glibc's default: above 128 KiB, a fresh anonymous mmap (given back on free).
    assert _mapping("default") == "anonymous"
    assert _mapping("keep") == "[heap]"
