# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Keep freed memory for reuse, so that a frame's large arrays do not cost page faults.

glibc serves allocations above its mmap threshold (128 KiB, rising to at most 32 MiB as it
sees them freed) with fresh ``mmap`` pages and gives them back on ``free``: every frame's
depth map, colour views and point cloud (0.5-7 MB each at 1280x720) were then new pages, zeroed
by the kernel on first touch, which more than doubled the CPU of post-processing (figures in
docs/performance.md). Raising the mmap and trim thresholds keeps freed blocks in the heap for
the next frame; the cost is that the process keeps its high-water mark of such blocks (tens
of MB), which it reaches within the first frames anyway.
"""

from __future__ import annotations

import ctypes
import ctypes.util

# mallopt(3) parameters (glibc's malloc.h).
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 64 << 20   # blocks up to 64 MiB come from the heap and are reused
TRIM_THRESHOLD = 256 << 20  # free memory at the heap's top is kept up to this much


def keep_freed_memory() -> str:
    """Raise glibc's mmap and trim thresholds for this process; what was done, in words
    (``""`` where the C library is not glibc, e.g. musl or macOS: nothing changes there)."""
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else ctypes.CDLL(None)
        mallopt = libc.mallopt
        gnu_version = libc.gnu_get_libc_version
    except (OSError, AttributeError):
        return ""
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    gnu_version.restype = ctypes.c_char_p
    ok = mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1
    ok = mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD) == 1 and ok
    if not ok:
        return ""
    return (f"glibc {gnu_version().decode()}: freed blocks up to {MMAP_THRESHOLD >> 20} MiB "
            "are kept for reuse")
