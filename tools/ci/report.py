# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The timing table that closes ``.ci/run``: each target's wall seconds, share and result, its
tests as pytest counted them, and the slowest tests of ``make test``, so that the next slow
test names itself. Standard library only: it runs on the machine's own python3.

    python3 -m tools.ci.report LOG_DIR

``LOG_DIR`` holds ``steps.tsv`` (one ``target<TAB>seconds<TAB>exit status`` line per target, in
the order run) and ``TARGET.log`` (what the target printed). A target that cannot run on the
machine prints ``TARGET: skipped: WHY`` and exits 0; the table shows it as skipped, with why.
The exit status is 1 when any target failed.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

# (not "deselected": a serial run beside a parallel one deselects what the other ran)
COUNT_WORDS = ("passed", "failed", "skipped", "errors", "xfailed", "xpassed")
# pytest -q's closing line: "1176 passed, 30 skipped, 1 warning in 256.38s (0:04:16)"
SUMMARY = re.compile(r"^=*\s*((?:\d+ \w+(?:, )?)+) in [\d.]+s\b")
DURATION = re.compile(r"^([\d.]+)s (call|setup|teardown)\s+(\S+)")


@dataclass
class Step:
    """One target of the run: what it took and what it said."""

    name: str
    seconds: int
    status: int
    counts: dict[str, int] = field(default_factory=dict)
    skipped: str | None = None

    @property
    def result(self) -> str:
        if self.status != 0:
            return f"FAILED (exit {self.status})"
        return f"skipped: {self.skipped}" if self.skipped else "ok"


def pytest_counts(log: str) -> dict[str, int]:
    """The counts of every pytest run in a log, added up ("error" and "errors" as one)."""
    counts: dict[str, int] = {}
    for line in log.splitlines():
        match = SUMMARY.match(line.strip())
        if not match:
            continue
        for number, word in re.findall(r"(\d+) (\w+)", match.group(1)):
            word = "errors" if word == "error" else word
            if word in COUNT_WORDS:
                counts[word] = counts.get(word, 0) + int(number)
    return counts


def skip_reason(name: str, log: str) -> str | None:
    """What the target said when it could not run here (``NAME: skipped: WHY``), or None."""
    found = re.findall(rf"^{re.escape(name)}: skipped: (.+)$", log, re.M)
    return "; ".join(found) if found else None


def slowest_tests(log: str, count: int = 10) -> list[tuple[float, str]]:
    """The ``count`` slowest test phases of every ``--durations`` report in a log."""
    rows = [(float(m.group(1)), f"{m.group(2)} {m.group(3)}")
            for line in log.splitlines() if (m := DURATION.match(line.strip()))]
    return sorted(rows, reverse=True)[:count]


def read_steps(folder: Path) -> list[Step]:
    """Each target of ``steps.tsv`` with its log read."""
    steps = []
    for line in (folder / "steps.tsv").read_text().splitlines():
        name, seconds, status = line.split("\t")
        path = folder / f"{name}.log"
        log = path.read_text(errors="replace") if path.exists() else ""
        steps.append(Step(name, int(seconds), int(status), pytest_counts(log),
                          skip_reason(name, log)))
    return steps


def _counts_text(counts: dict[str, int]) -> str:
    return ", ".join(f"{counts[w]} {w}" for w in COUNT_WORDS if counts.get(w)) or "-"


def table(steps: list[Step], slowest: list[tuple[float, str]]) -> str:
    """The report: one row per target, the total, then the slowest tests."""
    total = sum(s.seconds for s in steps) or 1
    width = max([len(s.name) for s in steps] + [6])
    lines = [f"{'target':<{width}}  {'wall s':>7}  {'share':>5}  result / tests"]
    for s in steps:
        lines.append(f"{s.name:<{width}}  {s.seconds:>7}  {100 * s.seconds / total:>4.0f}%  "
                     f"{s.result}; {_counts_text(s.counts)}")
    lines.append(f"{'total':<{width}}  {total:>7}  100%  {total / 60:.1f} min")
    if slowest:
        lines += ["", "The ten slowest tests of make test:"]
        lines += [f"  {seconds:7.2f} s  {what}" for seconds, what in slowest]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    folder = Path(argv[0] if argv else "ci_out")
    steps = read_steps(folder)
    test_log = folder / "test.log"
    slowest = slowest_tests(test_log.read_text(errors="replace")) if test_log.exists() else []
    print(table(steps, slowest))
    summed: dict[str, int] = {}
    for s in steps:
        for word, n in s.counts.items():
            summed[word] = summed.get(word, 0) + n
    failed = [s.name for s in steps if s.status != 0]
    print(f"\nCI targets failed: {', '.join(failed)}" if failed else "\nCI: every target passed")
    # The closing line in the form CI reads: passed and failed over every target.
    print(f"all targets: {summed.get('passed', 0)} passed, "
          f"{summed.get('failed', 0) + summed.get('errors', 0)} failed, "
          f"{summed.get('skipped', 0)} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
