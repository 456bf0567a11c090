# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The fleet summary: its totals over the inputs' rows, the row of an input whose result never
came back, ``fleet_summary.json`` and ``.csv`` written beside the outputs, and each row's
console line."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path
from typing import Any

from ..console import PROG
from .jobs import frame_counts, job_row, made_by_run

FLEET_JSON, FLEET_CSV = "fleet_summary.json", "fleet_summary.csv"
CSV_COLUMNS = ("input", "output", "status", "frames", "skipped_frames", "fps", "seconds",
               "retries", "worker", "error")


def tally(table: list[dict[str, Any]], seconds: float, interrupted: bool) -> dict[str, Any]:
    """The fleet summary's totals over its rows (``table``, in input order) and the rows."""
    frames = sum(r["frames"] for r in table if r["status"] != "skipped")
    return {"inputs_total": len(table), "seconds": round(seconds, 3), "frames": frames,
            "fps": round(frames / seconds, 3) if seconds > 0 else None,
            "interrupted": interrupted,
            "counts": {s: sum(r["status"] == s for r in table)
                       for s in ("done", "skipped", "failed", "interrupted")},
            "inputs": table}


def row_of_unreported(job: dict[str, Any]) -> dict[str, Any]:
    """The row of an input whose result never reached this process (Ctrl-C): ``done`` when
    an attempt of this run completed its output (renamed into place), else ``interrupted``."""
    row = job_row(job, "interrupted")
    summary = made_by_run(Path(job["final"]), job)
    if summary is not None:
        row.update(frame_counts(summary), status="done", seconds=summary.get("seconds"))
    return row


def write_fleet_summary(out_dir: Path, report: dict[str, Any]) -> None:
    """fleet_summary.json (everything) and fleet_summary.csv (one row per input), each written
    to a temporary file and renamed."""
    tmp = out_dir / f".{FLEET_JSON}.tmp"
    tmp.write_text(json.dumps(report, indent=2) + "\n")
    os.replace(tmp, out_dir / FLEET_JSON)
    tmp = out_dir / f".{FLEET_CSV}.tmp"
    with open(tmp, "w", newline="") as f:
        writer = csv.DictWriter(f, CSV_COLUMNS, extrasaction="ignore")
        writer.writeheader()
        for row in report["inputs"]:
            writer.writerow({k: "" if row.get(k) is None else row[k] for k in CSV_COLUMNS})
    os.replace(tmp, out_dir / FLEET_CSV)


def row_line(row: dict[str, Any], n: int, total: int) -> str:
    """The console line of an input's row, the ``n``-th of ``total`` to finish."""
    name = Path(row["input"]).name
    retry = f" (retried {row['retries']}x)" if row["retries"] else ""
    if row["status"] == "done":
        extra = f", {row['skipped_frames']} skipped" if row["skipped_frames"] else ""
        return (f"{PROG}: [{n}/{total}] {name}: {row['frames']} frames{extra} in "
                f"{row['seconds']:.1f} s ({row['fps'] or 0:.2f} fps){retry} -> {row['output']}")
    return f"{PROG}: [{n}/{total}] {name}: {row['status']}{retry}: {row['error'] or 'stopped'}"
