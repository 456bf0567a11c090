"""A runner wrapper that makes every inference slower: the model becomes the bottleneck on any
machine (several cameras sharing it, a slow board's model)."""

from __future__ import annotations

import time


class SlowRunner:
    """Wraps the node's runner: each inference takes ``delay`` s more."""

    def __init__(self, inner, delay: float) -> None:
        self.inner, self.delay = inner, delay

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def run(self):
        time.sleep(self.delay)
        return self.inner.run()
