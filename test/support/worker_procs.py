# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Processes seen through /proc (Linux): the GPU worker processes of a process, to hang one for
real (SIGSTOP: as its parent sees it, a genuine hang) and to check that none is left behind."""

from __future__ import annotations

import os
import time

WORKER_MODULE = "dense_perception.core.backends.gpu_worker"


def state_and_parent(pid: int) -> tuple[str, int] | None:
    """(state letter, parent pid) of ``pid``, or None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            text = f.read()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()  # after "pid (comm) "
    return fields[0], int(fields[1])


def alive(pid: int) -> bool:
    """Running or stopped, not gone and not a zombie (a killed orphan init has not reaped)."""
    found = state_and_parent(pid)
    return found is not None and found[0] not in ("Z", "X")


def gpu_workers(parent: int) -> list[int]:
    """The live GPU worker processes whose parent is ``parent``, oldest first."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                command = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        found = state_and_parent(int(entry))
        if WORKER_MODULE in command and found and found[1] == parent and alive(int(entry)):
            pids.append(int(entry))
    return sorted(pids)


def wait_for_worker(parent: int, timeout: float, other_than: tuple[int, ...] = ()) -> int:
    """The pid of a live GPU worker of ``parent`` that is not one of ``other_than``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        fresh = [p for p in gpu_workers(parent) if p not in other_than]
        if fresh:
            return fresh[-1]
        time.sleep(0.02)
    raise TimeoutError(f"no new GPU worker of process {parent} within {timeout:.0f} s")


def wait_gone(pid: int, timeout: float) -> bool:
    """Whether ``pid`` is gone (or a zombie) within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def shm_entries(prefix: str = "dense_perception") -> set[str]:
    """Our files in /dev/shm (by name)."""
    try:
        return {name for name in os.listdir("/dev/shm") if name.startswith(prefix)}
    except FileNotFoundError:
        return set()
