# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The DDS domain each test process takes, so that parallel test processes never meet."""


def dds_domain_for(pid: int, worker: str | None, parent_pid: int) -> int:
    """The DDS domain of one test process: 110-209, clear of the Makefile's 61 and of the
    ports a domain above 232 would need. A pytest-xdist worker (``gw0``, ``gw1``, ...) takes the
    domain after its run's base, the base chosen by the run's controller (its parent), so two
    workers of one run never meet and two runs at once rarely do."""
    if worker and worker.startswith("gw") and worker[2:].isdigit():
        return 110 + (parent_pid + int(worker[2:])) % 100
    return 110 + pid % 100
