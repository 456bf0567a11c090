# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Helpers for the node tests over DDS: diagnostic levels, header checks, a hooked runner."""

import time

OK, WARN, ERROR = 0, 1, 2


class HookedRunner:
    """Wraps the node's runner: counts runs, adds a delay, or raises on demand."""

    def __init__(self, inner, delay: float = 0.0):
        self.inner, self.delay, self.runs, self.fail = inner, delay, 0, False

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def run(self):
        self.runs += 1
        if self.fail:
            raise RuntimeError("injected invoke failure")
        if self.delay:
            time.sleep(self.delay)
        return self.inner.run()


def same_header(msg, header):
    """Whether ``msg`` carries ``header``'s stamp and frame."""
    return msg.header.stamp == header.stamp and msg.header.frame_id == header.frame_id

