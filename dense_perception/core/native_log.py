"""What native libraries (LiteRT and its GPU probes) print on stderr, captured and summarised.

LiteRT logs from C++ straight to file descriptor 2, so Python's ``sys.stderr`` cannot hide it.
:func:`quiet_native_stderr` points fd 2 at a temporary file meanwhile and hands back the text;
:meth:`NativeLog.gpu_reason` picks out the lines that say why no GPU could be used, so a one-line
error can carry them. Used by the offline command (and meant for the node's GPU logging).
"""

from __future__ import annotations

import contextlib
import gc
import os
import re
import sys
import tempfile
from typing import Iterator


class NativeLog:
    """What native code printed on stderr while it was captured."""

    text: str = ""

    def gpu_reason(self) -> str:
        """The lines of a LiteRT log that say why no GPU could be used (one line)."""
        picked: list[str] = []
        for line in self.text.splitlines():
            if not re.search(r"GPU|OpenCL|Vulkan|WebGPU|adapter", line, re.I):
                continue
            if not re.search(r"fail|couldn't|cannot|no |not found|unavailable", line, re.I):
                continue
            line = re.sub(r"^(\S+: )?(\[[^\]]*\] )?", "", line.strip()).strip("└ ")
            if line and line not in picked:
                picked.append(line)
        return "; ".join(picked[:2])


@contextlib.contextmanager
def quiet_native_stderr(enabled: bool = True) -> Iterator[NativeLog]:
    """Capture what native libraries (LiteRT and its GPU probes) print on fd 2 meanwhile."""
    log = NativeLog()
    if not enabled:
        yield log
        return
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):
        yield log
        return
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield log
            gc.collect()  # LiteRT logs again when a failed GPU probe's objects are freed
        finally:
            with contextlib.suppress(Exception):
                sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            log.text = sink.read().decode("utf-8", "replace")


def with_gpu_reason(message: str, log: NativeLog) -> str:
    """``message`` with the reason from LiteRT's captured log (which the user did not see)."""
    reason = log.gpu_reason()
    seen = "LiteRT's log above says why"  # runner.py's wording for a log the user saw
    if not reason:
        return message.replace(seen, "--verbose shows LiteRT's log")
    if seen in message:
        return message.replace(seen, f"LiteRT: {reason}")
    return f"{message} LiteRT: {reason}."

