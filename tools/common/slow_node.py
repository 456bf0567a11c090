# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The real node with each inference padded to at least SECONDS (a slow model stand-in).

    python tools/common/slow_node.py SECONDS --ros-args -p model_path:=...

Prints INFERENCE_STARTED on stdout as each inference begins. Used by the shutdown tests
(mid-inference signals) and by ``make soak`` (a ~1 s model).
"""

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from dense_perception.ros import node  # noqa: E402


class PaddedRunner:
    """The loaded runner, each ``run`` padded to at least ``seconds``."""

    def __init__(self, inner, seconds: float):
        self.inner, self.seconds = inner, seconds

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def run(self):
        print("INFERENCE_STARTED", flush=True)
        start = time.monotonic()
        outputs = self.inner.run()
        time.sleep(max(0.0, self.seconds - (time.monotonic() - start)))
        return outputs


if __name__ == "__main__":
    seconds = float(sys.argv.pop(1))
    sys.exit(node.main(runner_hook=lambda runner: PaddedRunner(runner, seconds)))
