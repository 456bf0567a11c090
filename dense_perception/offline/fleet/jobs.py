# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""One input of a many-input run: whether its output is complete already (skipped), its
summary row, its attempt folder, the frames it should give, and ``run_one``, the function every
worker calls (in this process or in a Ray actor).

Apart from :mod:`.plan` (which plans the run) and :mod:`.run` (which runs it) so that
:mod:`.ray_workers` imports it without importing the module that imports it.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import socket
import time
from pathlib import Path
from typing import Any, Callable

from ..console import EXIT_INTERRUPTED, EXIT_OK, PROG, describe, say
from ..options.process_options import ProcessOptions
from ..run.session import ModelSession, input_kind


def with_attempt(job: dict[str, Any], attempt: int) -> dict[str, Any]:
    """``job`` as its attempt number ``attempt``, with a temporary folder of its own: a retried
    Ray task may start while the attempt it replaces is still running (a node cut off, not
    dead), and the two must never write into one folder."""
    final = Path(job["final"])
    partial = final.with_name(f".{final.name}.partial-{job['run']}-{attempt}")
    return {**job, "attempt": attempt, "partial": str(partial)}


def finished_summary(out: Path, key: dict[str, Any]) -> dict[str, Any] | None:
    """The summary of a complete output made with ``key`` (a job's: model, options and input),
    else None."""
    try:
        summary = json.loads((out / "summary.json").read_text())
    except (OSError, ValueError):
        return None
    if (summary.get("fleet_job") != key or summary.get("error") is not None
            or summary.get("interrupted") or not summary.get("frames")):
        return None
    return summary


def job_row(job: dict[str, Any], status: str, *, worker: str = "",
            error: str | None = None) -> dict[str, Any]:
    """A fleet summary row (the CSV_COLUMNS) for ``job`` with no frames done yet."""
    return {"input": job["input"], "output": job["final"], "status": status, "frames": 0,
            "skipped_frames": 0, "fps": None, "seconds": None,
            "retries": job.get("attempt", 0), "worker": worker, "error": error}


def frame_counts(summary: dict[str, Any]) -> dict[str, Any]:
    """The row fields an output's summary.json gives: frames done and skipped, fps."""
    return {"frames": summary.get("frames", 0), "skipped_frames": summary.get("rejected", 0),
            "fps": summary.get("fps")}


def frame_count(path: Path, options: ProcessOptions) -> int:
    """Frames an input should give, for the progress bar (0 when not known cheaply)."""
    from ..inputs import bag_io
    from ..inputs import file_io
    try:
        kind = input_kind(path)
        if kind == "bag":
            bag = bag_io.BagReader(path)
            try:
                count = sum(int(c.msgcount) for topic in (options.topics or (None,))
                            for c in bag.image_connections(topic))
            finally:
                bag.close()
        elif kind == "images":
            count = len(file_io.list_images(path))
        else:
            count = 1 if kind == "image" else 0
    except Exception:  # noqa: BLE001 - a damaged input is reported when it is processed
        return 0
    return min(count, options.max_frames) if options.max_frames else count


def skipped_and_to_do(jobs: list[dict[str, Any]], options: ProcessOptions
                       ) -> tuple[dict[int, dict[str, Any]], list[dict[str, Any]]]:
    """(the summary rows of the inputs whose output is complete for this key, said as
    skipped; the jobs still to do, each with the frames it should give for the progress bar)."""
    rows: dict[int, dict[str, Any]] = {}
    to_do: list[dict[str, Any]] = []
    for job in jobs:
        done = None if options.force else finished_summary(Path(job["final"]), job["key"])
        if done is not None:
            rows[job["index"]] = {**job_row(job, "skipped"), **frame_counts(done),
                                  "seconds": 0.0}
        else:
            job["frames"] = frame_count(Path(job["input"]), options)
            to_do.append(job)
    for index in sorted(rows):
        say(f"{PROG}: {Path(rows[index]['input']).name}: skipped, {rows[index]['output']} is "
            f"complete (--force redoes it)")
    return rows, to_do


# ---- one input: the function every worker calls ---------------------------------------------
def run_one(session: ModelSession, job: dict[str, Any],
            progress: Callable[[int], None] | None = None) -> dict[str, Any]:
    """Process one input of a fleet into its temporary folder, rename it into place when
    complete, and return its summary row. Never raises for a bad input (the row says why);
    KeyboardInterrupt still stops it."""
    started = time.monotonic()
    final, partial = Path(job["final"]), Path(job["partial"])
    row = job_row(job, "failed", worker=f"{socket.gethostname()}:{os.getpid()}")
    shutil.rmtree(partial, ignore_errors=True)  # this attempt's own folder: never another's
    try:
        code, summary = session.process_input(Path(job["input"]), partial, progress=progress,
                                              quiet=True, final_out=final,
                                              extra_summary={"fleet_job": job["key"],
                                                             "fleet_run": job["run"]})
    except Exception as exc:  # noqa: BLE001 - a bad input fails alone
        row["error"] = describe(exc)
    else:
        row.update(frame_counts(summary), error=summary.get("error"))
        if code == EXIT_OK:
            _publish(job, partial, final)
            row["status"] = "done"
        elif code == EXIT_INTERRUPTED:
            row["status"] = "interrupted"
        elif row["error"] is None:
            reasons = summary.get("reject_reasons") or {"no frame": 0}
            row["error"] = f"no frame could be used: {next(iter(reasons))}"
    row["seconds"] = round(time.monotonic() - started, 3)
    return row


def _publish(job: dict[str, Any], partial: Path, final: Path) -> bool:
    """Move a complete output into place with renames only, replacing an older one (other
    options, an older recording). The rename decides between two attempts of one job: when
    the other got there first, its output (the same) stays and this one's is removed; returns
    whether this attempt's output is the one in place."""
    aside = final.with_name(f".{final.name}.old-{job['run']}-{job['attempt']}")
    shutil.rmtree(aside, ignore_errors=True)
    while True:
        try:
            os.rename(partial, final)  # fails while anything (but an empty folder) is there
            return True
        except OSError as exc:
            if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY, errno.ENOTDIR):
                raise
        if made_by_run(final, job):  # another attempt of this job won
            shutil.rmtree(partial, ignore_errors=True)
            return False
        try:
            os.rename(final, aside)
        except FileNotFoundError:  # moved meanwhile (by the other attempt): look again
            continue
        shutil.rmtree(aside, ignore_errors=True)


def made_by_run(final: Path, job: dict[str, Any]) -> dict[str, Any] | None:
    """The summary of ``final`` when it is a complete output of ``job`` made by ``job``'s run
    (by any attempt), else None."""
    summary = finished_summary(final, job["key"])
    return summary if summary is not None and summary.get("fleet_run") == job["run"] else None
