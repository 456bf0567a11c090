"""Many inputs to one ``process`` command: a fleet's bags, one output each, one summary.

    dense-perception process 'bags/*.mcap' day2/run7 @more.txt --model M --out OUT [--ray]

Each input gets ``OUT/<name>`` (``name``: the bag folder's name or the file's stem; ``-2``,
``-3``, ... when two inputs share one), written under a hidden temporary name
(``OUT/.<name>.partial``) and renamed once its ``summary.json`` is written, so nothing that
looks complete is ever half-written: a killed worker, a damaged bag or Ctrl-C leave at most a
``.partial`` folder, which the next run replaces. An output whose summary.json records the same
model file (SHA-256) and the same output-changing options, with no error and no interruption,
is skipped (``--force`` redoes it).

``OUT/fleet_summary.json`` and ``.csv`` list every input: status (done, skipped, failed,
interrupted), frames done and skipped, fps, wall time, retries, worker and the one-line error.
The exit status is 2 when any input failed, 130 after Ctrl-C.

Without ``--ray`` the inputs run one after another in this process with one loaded model; with
``--ray`` (``fleet_ray``) Ray actors each load the model once and call the same
:func:`run_one` per input. Either way every frame goes through ``process.process_input``.
"""

from __future__ import annotations

import argparse
import csv
import glob
import hashlib
import json
import os
import re
import shutil
import socket
import sys
import time
from pathlib import Path
from typing import Any, Callable

from .console import (EXIT_ERROR, EXIT_INTERRUPTED, EXIT_OK, PROG, CliError, describe,
                      interactive, say)
from .process import ModelSession, input_kind, process_input

FLEET_JSON, FLEET_CSV = "fleet_summary.json", "fleet_summary.csv"
CSV_COLUMNS = ("input", "output", "status", "frames", "skipped_frames", "fps", "seconds",
               "retries", "worker", "error")
# The options that change what an output holds: a finished output made with other values of
# these is redone. (--backend and --threads are left out: same model, same outputs.)
OUTPUT_OPTIONS = ("model_type", "fit", "output_resolution", "outputs", "depth_format",
                  "relative_depth_scale", "max_depth", "points_stride", "points_organized",
                  "no_points_rgb", "fallback_hfov", "max_frames", "topic", "camera_info_topic",
                  "out_namespace", "bag_format", "copy", "depth_scale_source", "camera_height",
                  "reference_depth_topic", "depth_scale_time_constant", "ground_max_tilt",
                  "reference_depth_slop", "input_rectified")
_GLOB = re.compile(r"[*?[]")


def is_fleet(args: argparse.Namespace) -> bool:
    """Many-input mode: several inputs, a glob, a list, or a Ray option. One plain input keeps
    the one-input behaviour (its output at --out, no fleet summary)."""
    if args.ray and Path(args.ray).exists():  # '--ray bags/a.mcap ...': an input, not an address
        args.input.insert(0, args.ray)
        args.ray = ""
    return (len(args.input) != 1 or args.inputs_from is not None or args.ray is not None
            or bool(args.workers)
            or any(i.startswith("@") or (_GLOB.search(i) and not Path(i).exists())
                   for i in args.input))


# ---- inputs and their outputs ---------------------------------------------------------------
def expand_inputs(items: list[str], inputs_from: str | None = None) -> list[Path]:
    """Paths, globs and @LIST files (one input per line, # comments, paths relative to the
    list's folder) to a list of inputs in the order given, each once."""
    found: list[Path] = []

    def add(item: str, base: Path | None) -> None:
        if item.startswith("@"):
            add_list(Path(item[1:]))
            return
        path = Path(item) if base is None or Path(item).is_absolute() else base / item
        if not path.exists() and _GLOB.search(item):
            matches = sorted(glob.glob(str(path), recursive=True))
            if not matches:
                raise CliError(f"'{item}' matches no file")
            found.extend(Path(m) for m in matches)
        else:
            found.append(path)  # a missing one is reported in the summary, like a damaged one

    def add_list(path: Path) -> None:
        try:
            lines = path.read_text().splitlines()
        except OSError as exc:
            raise CliError(f"cannot read the input list '{path}': {exc.strerror}") from None
        for line in lines:
            line = line.split("#", 1)[0].strip()
            if line:
                add(line, path.parent)

    for item in items:
        add(item, None)
    if inputs_from is not None:
        add_list(Path(inputs_from))
    unique: dict[str, Path] = {}
    for path in found:
        unique.setdefault(os.path.abspath(path), path)
    if not unique:
        raise CliError("no input given")
    return list(unique.values())


def output_names(paths: list[Path]) -> list[str]:
    """One output name per input: the bag folder's name or the file's stem, made unique."""
    names: list[str] = []
    for path in paths:
        base = (path.name if path.is_dir() else path.stem) or "input"
        name, n = base, 1
        while name in names:
            n += 1
            name = f"{base}-{n}"
        names.append(name)
    return names


def job_key(args: argparse.Namespace, model_path: str, groups: list[str]) -> dict[str, Any]:
    """What a finished output must have been made with to be skipped (``groups``: the
    --outputs groups as parsed, so 'seg,depth' and 'depth,seg' are one job)."""
    digest = hashlib.sha256()
    with open(model_path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return {"model_sha256": digest.hexdigest(),
            "options": {name: groups if name == "outputs" else getattr(args, name)
                        for name in OUTPUT_OPTIONS}}


def finished_summary(out: Path, key: dict[str, Any]) -> dict[str, Any] | None:
    """The summary of a complete output made with ``key``, else None."""
    try:
        summary = json.loads((out / "summary.json").read_text())
    except (OSError, ValueError):
        return None
    if (summary.get("fleet_job") != key or summary.get("error") is not None
            or summary.get("interrupted") or not summary.get("frames")):
        return None
    return summary


def frame_count(path: Path, args: argparse.Namespace) -> int:
    """Frames an input should give, for the progress bar (0 when not known cheaply)."""
    from . import bagio, fileio
    try:
        kind = input_kind(path)
        if kind == "bag":
            bag = bagio.BagInput(path)
            try:
                count = sum(int(c.msgcount) for c in bag.image_connections(args.topic))
            finally:
                bag.close()
        elif kind == "images":
            count = len(fileio.list_images(path))
        else:
            count = 1 if kind == "image" else 0
    except Exception:  # noqa: BLE001 - a damaged input is reported when it is processed
        return 0
    return min(count, args.max_frames) if args.max_frames else count


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


# ---- one input: the function every worker calls ---------------------------------------------
def run_one(session: ModelSession, job: dict[str, Any],
            progress: Callable[[int], None] | None = None) -> dict[str, Any]:
    """Process one input of a fleet into its temporary folder, rename it into place when
    complete, and return its summary row. Never raises for a bad input (the row says why);
    KeyboardInterrupt still stops it."""
    started = time.monotonic()
    final, partial = Path(job["final"]), Path(job["partial"])
    row = job_row(job, "failed", worker=f"{socket.gethostname()}:{os.getpid()}")
    shutil.rmtree(partial, ignore_errors=True)  # what a killed worker left
    try:
        code, summary = process_input(session, Path(job["input"]), partial, progress=progress,
                                      quiet=True, final_out=final,
                                      extra_summary={"fleet_job": job["key"]})
    except Exception as exc:  # noqa: BLE001 - a bad input fails alone
        row["error"] = describe(exc)
    else:
        row.update(frame_counts(summary), error=summary.get("error"))
        if code == EXIT_OK:
            _publish(partial, final)
            row["status"] = "done"
        elif code == EXIT_INTERRUPTED:
            row["status"] = "interrupted"
        elif row["error"] is None:
            reasons = summary.get("reject_reasons") or {"no frame": 0}
            row["error"] = f"no frame could be used: {next(iter(reasons))}"
    row["seconds"] = round(time.monotonic() - started, 3)
    return row


def _publish(partial: Path, final: Path) -> None:
    """Move a complete output into place (replacing an older one) with renames only."""
    old = final.with_name(f".{final.name}.old")
    shutil.rmtree(old, ignore_errors=True)
    if final.exists():
        os.rename(final, old)
    os.rename(partial, final)
    shutil.rmtree(old, ignore_errors=True)


# ---- the run ----------------------------------------------------------------------------------
def run_fleet(args: argparse.Namespace,
              watch: Callable[[dict[str, Any]], None] | None = None) -> int:
    """``process`` over many inputs: returns the exit status (see the module docstring)."""
    from tqdm import tqdm
    if not args.out:
        raise CliError("many inputs need --out DIR: the folder for one output per input and "
                       "the fleet summary")
    if args.ray is None and (args.workers > 1 or args.threads_per_worker != 1):
        raise CliError("--workers and --threads-per-worker need --ray (without it the inputs "
                       "run one after another in this process)")
    if args.workers < 0 or args.threads_per_worker < 1:
        raise CliError("--workers must be >= 0 and --threads-per-worker >= 1")
    out_dir = Path(args.out)
    # 'data/*' --out data/dense: the outputs are not inputs
    paths = [p for p in expand_inputs(args.input, args.inputs_from)
             if not p.resolve().is_relative_to(out_dir.resolve())]
    if not paths:
        raise CliError(f"no input outside --out '{out_dir}'")
    if out_dir.exists() and not out_dir.is_dir():
        raise CliError(f"--out '{out_dir}' is a file; many inputs need a folder")
    # The model and options are checked once, before any input (the scale options for the
    # first input's kind; an input of another kind they do not suit fails alone).
    session = ModelSession(args, scale_check_kind=lambda: _kind_or_bag(paths[0]))
    key = job_key(args, session.model_path, session.groups)
    out_dir.mkdir(parents=True, exist_ok=True)

    rows: dict[int, dict[str, Any]] = {}
    jobs: list[dict[str, Any]] = []
    for index, (path, name) in enumerate(zip(paths, output_names(paths))):
        final = out_dir / name
        job = {"index": index, "input": str(path), "final": str(final),
               "partial": str(out_dir / f".{name}.partial"), "key": key, "attempt": 0}
        done = None if args.force else finished_summary(final, key)
        if done is not None:
            rows[index] = {**job_row(job, "skipped"), **frame_counts(done), "seconds": 0.0}
        else:
            job["frames"] = frame_count(path, args)
            jobs.append(job)
    for index in sorted(rows):
        say(f"{PROG}: {Path(rows[index]['input']).name}: skipped, {rows[index]['output']} is "
            f"complete (--force redoes it)")
    where = "Ray" if args.ray is not None else "this process"
    say(f"{PROG}: {len(paths)} inputs, {len(jobs)} to do on {where} -> {out_dir}")

    bar = tqdm(total=sum(j["frames"] for j in jobs), unit="frame", dynamic_ncols=True,
               disable=not interactive(), file=sys.stderr, smoothing=0.1)
    started, started_wall = time.monotonic(), time.time()
    interrupted = False
    meta: dict[str, Any] = {"ray": None, "workers": 1, "threads_per_worker": args.threads}

    def finished(row: dict[str, Any], index: int) -> None:
        rows[index] = row
        say(_row_line(row, len(rows), len(paths)))

    try:
        if args.ray is not None and jobs:
            from .fleet_ray import run_on_ray
            meta = run_on_ray(args, jobs, bar.update, finished, watch)
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
                rows[job["index"]] = _row_of_unreported(job, key, started_wall)
        table = [rows[i] for i in sorted(rows)]
        frames = sum(r["frames"] for r in table if r["status"] != "skipped")
        report = {"model": session.model_path, "model_sha256": key["model_sha256"],
                  "options": key["options"], **meta, "inputs_total": len(table),
                  "seconds": round(seconds, 3), "frames": frames,
                  "fps": round(frames / seconds, 3) if seconds > 0 else None,
                  "interrupted": interrupted,
                  "counts": {s: sum(r["status"] == s for r in table)
                             for s in ("done", "skipped", "failed", "interrupted")},
                  "inputs": table}
        write_fleet_summary(out_dir, report)
    counts = report["counts"]
    say(f"{PROG}: {len(table)} inputs: {counts['done']} done, {counts['skipped']} skipped, "
        f"{counts['failed']} failed{', interrupted' if interrupted else ''}; {frames} frames in "
        f"{seconds:.1f} s ({report['fps'] or 0:.2f} fps) -> {out_dir / FLEET_JSON}")
    if interrupted:
        return EXIT_INTERRUPTED
    return EXIT_ERROR if counts["failed"] else EXIT_OK


def _row_of_unreported(job: dict[str, Any], key: dict[str, Any],
                       since: float) -> dict[str, Any]:
    """The row of an input whose result never reached this process (Ctrl-C): ``done`` when
    its worker completed the output during this run (renamed into place, summary written
    after ``since``), else ``interrupted``."""
    row = job_row(job, "interrupted")
    final = Path(job["final"])
    summary = finished_summary(final, key)
    try:
        written = (final / "summary.json").stat().st_mtime >= since
    except OSError:
        written = False
    if summary is not None and written:
        row.update(frame_counts(summary), status="done", seconds=summary.get("seconds"))
    return row


def _kind_or_bag(path: Path) -> str:
    try:
        return input_kind(path)
    except Exception:  # noqa: BLE001 - a missing first input fails alone, later
        return "bag"


def _row_line(row: dict[str, Any], n: int, total: int) -> str:
    name = Path(row["input"]).name
    retry = f" (retried {row['retries']}x)" if row["retries"] else ""
    if row["status"] == "done":
        extra = f", {row['skipped_frames']} skipped" if row["skipped_frames"] else ""
        return (f"{PROG}: [{n}/{total}] {name}: {row['frames']} frames{extra} in "
                f"{row['seconds']:.1f} s ({row['fps'] or 0:.2f} fps){retry} -> {row['output']}")
    return f"{PROG}: [{n}/{total}] {name}: {row['status']}{retry}: {row['error'] or 'stopped'}"


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
