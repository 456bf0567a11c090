# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The node as its own process: start it, watch its log, stop it with SIGINT (one copy, for the
demo, the load generator, the measurements and the start-up/shutdown tests)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


class NodeProcess:
    """``python -m dense_perception.ros.node --ros-args <ros_args>`` (or ``script``) from
    ``repo``; stdout and stderr go to ``log_path`` (a temporary file if not given), so reading
    them never blocks and a chatty node never fills a pipe."""

    def __init__(self, ros_args: list[str], *, script: list[str] | None = None,
                 repo: Path = REPO, log_path: Path | None = None,
                 env: dict[str, str] | None = None) -> None:
        self.cmd = [sys.executable] + (script or ["-m", "dense_perception.ros.node"]) \
            + ["--ros-args", *ros_args]
        env = dict(os.environ if env is None else env)
        env.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
        env["PYTHONPATH"] = str(repo) + os.pathsep + env.get("PYTHONPATH", "")
        self.env, self.repo = env, repo
        if log_path is None:
            handle, name = tempfile.mkstemp(prefix="dense_perception_node_", suffix=".log")
            os.close(handle)
            log_path = Path(name)
        self.log_path = log_path
        self.proc: subprocess.Popen | None = None

    def start(self) -> "NodeProcess":
        with self.log_path.open("w") as log:
            self.proc = subprocess.Popen(self.cmd, env=self.env, cwd=self.repo, stdout=log,
                                         stderr=subprocess.STDOUT, text=True)
        return self

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def output(self) -> str:
        """Everything the node wrote so far (stdout and stderr interleaved)."""
        return self.log_path.read_text(errors="replace")

    def output_tail(self, chars: int = 2000) -> str:
        return self.output()[-chars:]

    def last_line(self) -> str:
        """The last non-empty line of the log (a FATAL reason when start-up failed)."""
        lines = [ln.strip() for ln in self.output().splitlines() if ln.strip()]
        return lines[-1] if lines else f"no output (see {self.log_path})"

    def wait_for_line(self, text: str, timeout: float, count: int = 1) -> None:
        """Wait until ``text`` appears ``count`` times in the log; TimeoutError otherwise, or
        RuntimeError when the node exits first."""
        deadline = time.monotonic() + timeout
        while self.output().count(text) < count:
            if not self.alive():
                raise RuntimeError(f"node exited with {self.proc.returncode} before printing "
                                   f"{text!r}: {self.output_tail()}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"no {text!r} from the node within {timeout:.0f} s")
            time.sleep(0.05)

    def wait(self, timeout: float) -> int:
        """Wait for the node to exit by itself (e.g. a start-up error); its exit code."""
        return self.proc.wait(timeout=timeout)

    def stop(self, timeout: float = 5.0) -> tuple[int, bool]:
        """SIGINT, then SIGKILL after ``timeout`` s: (exit code, whether it stopped in time)."""
        if self.proc is None:
            return 0, True
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        try:
            return self.proc.wait(timeout=timeout), True
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait(), False
