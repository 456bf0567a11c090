# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Give back the model file's pages once XNNPACK has packed its weights.

The Interpreter maps the .tflite file into memory; XNNPACK reads every weight from it once, to
pack it into its own buffers, and the mapped pages then stay resident: counted in the node's
RSS although nothing reads them again (318 MB for the TIPSv2 file). ``madvise(MADV_DONTNEED)``
on that read-only, file-backed mapping drops them from the process: a page that is read again
(a constant of an op XNNPACK does not run) comes back from the file. The pages stay in the
kernel's page cache, which it reclaims under memory pressure. Linux only; a no-op elsewhere.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys

MADV_DONTNEED = 4


def release_file_pages(path: str) -> int:
    """Drop the resident pages of every read-only mapping of ``path`` in this process; the
    bytes advised (0 where nothing is mapped or this is not Linux)."""
    if not sys.platform.startswith("linux"):
        return 0
    real = os.path.realpath(path)
    ranges = []
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                parts = line.split(maxsplit=5)
                # read-only mappings only: a writable private one may hold changed pages
                if len(parts) == 6 and parts[5].strip() == real and "w" not in parts[1]:
                    start, end = (int(x, 16) for x in parts[0].split("-"))
                    ranges.append((start, end))
    except OSError:
        return 0
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    released = 0
    for start, end in ranges:
        if libc.madvise(start, end - start, MADV_DONTNEED) == 0:
            released += end - start
    return released
