# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""What native libraries (LiteRT, Dawn, the Vulkan driver) print on file descriptor 2.

LiteRT reports which GPU adapter it selected, and why no GPU could be used, only on its native
stderr, outside Python's logging. :func:`capture_native_stderr` collects that text around a call
so the node and the offline command can parse it (:class:`NativeLog`) and show the adapter and
the reason in their own words. One mechanism for both.
"""

from __future__ import annotations

import contextlib
import gc
import os
import re
import sys
import tempfile
from dataclasses import dataclass
from typing import Iterator

# "Selected adapter: llvmpipe (LLVM 15.0.6, 256 bits), arch=software, vendor=mesa,
#  backend=Vulkan, adapterType=CPU / Software" (LiteRT's environment.cc, Dawn's adapter info)
_ADAPTER_RE = re.compile(r"Selected adapter:\s*(?P<name>.*?),\s*arch=(?P<arch>[^,]*),\s*"
                         r"vendor=(?P<vendor>[^,]*),\s*backend=(?P<backend>[^,]*),\s*"
                         r"adapterType=(?P<type>.*)$")
# Dawn's adapter types; the first two are a CPU pretending to be a GPU.
SOFTWARE_ADAPTER_TYPES = ("CPU / Software", "CPU")


@dataclass(frozen=True)
class Adapter:
    """The GPU adapter LiteRT's WebGPU accelerator selected, as its log names it."""

    name: str      # e.g. "llvmpipe (LLVM 15.0.6, 256 bits)" or "NVIDIA H200"
    backend: str   # e.g. "Vulkan"
    type: str      # "Discrete GPU", "Integrated GPU", "CPU / Software", ...
    vendor: str = ""
    arch: str = ""

    @property
    def is_software(self) -> bool:
        """True for a CPU emulation (Mesa's llvmpipe/lavapipe, SwiftShader)."""
        return (self.type.strip() in SOFTWARE_ADAPTER_TYPES or self.arch.strip() == "software"
                or bool(re.search(r"llvmpipe|lavapipe|swiftshader", self.name, re.I)))

    def describe(self) -> str:
        """One line: ``llvmpipe (...) (Vulkan, CPU / Software)``."""
        return f"{self.name} ({self.backend}, {self.type})"


@dataclass
class NativeLog:
    """What native code printed on stderr while it was captured."""

    text: str = ""

    def adapter(self) -> Adapter | None:
        """The last adapter LiteRT selected in this log, or None."""
        found = None
        for line in self.text.splitlines():
            match = _ADAPTER_RE.search(line.strip())
            if match:
                found = Adapter(name=match["name"].strip(), backend=match["backend"].strip(),
                                type=match["type"].strip(), vendor=match["vendor"].strip(),
                                arch=match["arch"].strip())
        return found

    def gpu_reason(self) -> str:
        """The lines of a LiteRT log that say why no GPU could be used (one line)."""
        picked: list[str] = []
        for line in self.text.splitlines():
            if not re.search(r"Vulkan|vkCreate|WebGPU|adapter|\bGPU\b|OpenCL", line, re.I):
                continue
            if not re.search(r"fail|couldn't|cannot|no |not found|unavailable|required", line,
                             re.I):
                continue
            # Not the reason: the NPU/compiler-plugin probes, OpenCL (the WebGPU path probes it
            # too) and lines naming files (paths, source locations).
            if re.search(r"plugin|NPU|OpenCL library|/", line):
                continue
            line = re.sub(r"^(\S+: )?(\[[^\]]*\] )?", "", line.strip()).strip("└ ")
            if line and line not in picked:
                picked.append(line)
        return "; ".join(picked[:3])


@contextlib.contextmanager
def capture_native_stderr(echo: bool = False) -> Iterator[NativeLog]:
    """Collect what native libraries write to fd 2 meanwhile into the yielded NativeLog.

    ``echo`` writes the collected text back to stderr afterwards (the user still sees LiteRT's
    log, just after the call). Nested captures work: the inner one echoes into the outer one.
    Python's own ``sys.stderr`` writes from other threads land in the capture too.
    """
    log = NativeLog()
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):  # no fd 2 (e.g. a daemon with stderr closed)
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
            if echo and log.text:
                with contextlib.suppress(OSError):
                    os.write(2, log.text.encode("utf-8", "replace"))


def quiet_native_stderr(enabled: bool = True) -> contextlib.AbstractContextManager[NativeLog]:
    """:func:`capture_native_stderr` when ``enabled`` (the offline command hides LiteRT's log
    unless ``--verbose``); otherwise the log goes through and an empty NativeLog is yielded."""
    return capture_native_stderr() if enabled else contextlib.nullcontext(NativeLog())


def with_gpu_reason(message: str, log: NativeLog) -> str:
    """``message`` with the reason from LiteRT's captured log (which the user did not see)."""
    reason = log.gpu_reason()
    seen = "LiteRT's log above says why"  # runner.py's wording for a log the user saw
    if not reason:
        return message.replace(seen, "--verbose shows LiteRT's log")
    if seen in message:
        return message.replace(seen, f"LiteRT: {reason}")
    if reason in message:  # the runner quoted LiteRT's log already
        return message
    return f"{message} LiteRT: {reason}."
