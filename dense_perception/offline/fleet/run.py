# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Many inputs run: :func:`run_fleet` takes the plan (:mod:`.plan`), skips what is complete,
runs the rest one after another in this process or on Ray workers (:mod:`.ray_workers`), each
through :func:`~.jobs.run_one`, and writes the fleet summary (:mod:`.tally`)."""

from __future__ import annotations

import sys
import time
import uuid
from pathlib import Path
from typing import Any, Callable

from ..console import EXIT_ERROR, EXIT_INTERRUPTED, EXIT_OK, PROG, interactive, say
from ..run.session import ModelSession
from .jobs import run_one, skipped_and_to_do
from .plan import job_key, make_jobs, remove_leftovers
from .tally import FLEET_JSON, row_line, row_of_unreported, tally, write_fleet_summary


def run_fleet(session: ModelSession, paths: list[Path],
              watch: Callable[[dict[str, Any]], None] | None = None) -> int:
    """``process`` over many inputs (``paths``: ``ProcessOptions.paths``) with the session
    cli.py made (its plan goes to Ray workers): returns the exit status (see the module
    docstring)."""
    from tqdm import tqdm
    plan = session.plan
    options = plan.options
    out_dir = Path(options.out)
    key = job_key(plan.settings, options, plan.model_path, list(plan.groups))
    out_dir.mkdir(parents=True, exist_ok=True)
    run = uuid.uuid4().hex[:12]  # names this run's temporary folders and finished summaries
    removed = remove_leftovers(out_dir, run)
    if removed:
        say(f"{PROG}: removed {len(removed)} unfinished output(s) of earlier runs from {out_dir}")

    rows, jobs = skipped_and_to_do(make_jobs(paths, out_dir, key, run), options)
    where = "Ray" if options.ray is not None else "this process"
    say(f"{PROG}: {len(paths)} inputs, {len(jobs)} to do on {where} -> {out_dir}")

    bar = tqdm(total=sum(j["frames"] for j in jobs), unit="frame", dynamic_ncols=True,
               disable=not interactive(), file=sys.stderr, smoothing=0.1)
    started = time.monotonic()
    interrupted = False
    meta: dict[str, Any] = {"ray": None, "workers": 1,
                            "threads_per_worker": plan.settings.num_threads}

    def finished(row: dict[str, Any], index: int) -> None:
        rows[index] = row
        say(row_line(row, len(rows), len(paths)))

    try:
        if options.ray is not None and jobs:
            from .ray_workers import run_on_ray
            meta = run_on_ray(plan, jobs, bar.update, finished, watch)
        else:
            for job in jobs:
                row = run_one(session, job, bar.update)
                finished(row, job["index"])
                if row["status"] == "interrupted":
                    interrupted = True
                    break
    except KeyboardInterrupt:
        interrupted = True
    finally:
        bar.close()
        seconds = time.monotonic() - started
        for job in jobs:
            if job["index"] not in rows:  # not reported back: finished meanwhile, or not
                rows[job["index"]] = row_of_unreported(job)
        report = {"model": plan.model_path, "model_sha256": key["model_sha256"],
                  "options": key["options"], "run": run, **meta,
                  **tally([rows[i] for i in sorted(rows)], seconds, interrupted)}
        write_fleet_summary(out_dir, report)
    counts = report["counts"]
    say(f"{PROG}: {report['inputs_total']} inputs: {counts['done']} done, {counts['skipped']} "
        f"skipped, {counts['failed']} failed{', interrupted' if interrupted else ''}; "
        f"{report['frames']} frames in {seconds:.1f} s ({report['fps'] or 0:.2f} fps) -> "
        f"{out_dir / FLEET_JSON}")
    if interrupted:
        return EXIT_INTERRUPTED
    return EXIT_ERROR if counts["failed"] else EXIT_OK

