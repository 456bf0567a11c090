# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The plan of many inputs to one ``process`` command: a fleet's bags, one output each.

    dense-perception process 'bags/*.mcap' day2/run7 @more.txt --model M --out OUT [--ray]

Each input gets ``OUT/<name>-<hash>`` (``name``: the bag folder's name or the file's stem;
``hash``: 12 hex digits of the SHA-256 of its absolute path), so an input's output never depends
on which other inputs a run has or their order. Each attempt writes its own hidden folder
(``OUT/.<name>-<hash>.partial-<run>-<attempt>``), renamed into place once its ``summary.json``
is written, so nothing that looks complete is ever half-written: a killed worker, a damaged bag
or Ctrl-C leave at most a ``.partial-*`` folder, which the next run removes. An output whose
summary.json records the same input (absolute path, size, newest modification time: see
:func:`input_identity`), the same model file (SHA-256) and the same output-changing options,
with no error and no interruption, is skipped (``--force`` redoes it).

``OUT/fleet_summary.json`` and ``.csv`` list every input: status (done, skipped, failed,
interrupted), frames done and skipped, fps, wall time, retries, worker and the one-line error.
The exit status is 2 when any input failed, 130 after Ctrl-C.

Without ``--ray`` the inputs run one after another in this process with one loaded model; with
``--ray`` (``ray_workers.py``) Ray actors each load the model once and call the same
:func:`~.jobs.run_one` per input (``run.py``). Either way every frame goes through
``ModelSession.process_input`` (``run/session.py``).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from pathlib import Path
from stat import S_ISREG
from typing import Any

from ...core.settings.table import PARAMS, Settings
from ..options.process_options import ProcessOptions
from ..run.session import input_kind
from .jobs import with_attempt

# The settings in the reuse key: every offline setting of the table marked affects_output
# (a finished output made with other values is redone), but the model's path: the model file
# is in the key by its SHA-256. The command's own options: ProcessOptions.output_values.
OUTPUT_SETTINGS = frozenset(spec.name for spec in PARAMS if spec.offline and spec.affects_output
                            and spec.name != "model_path")
HASH_DIGITS = 12  # of an output name's path hash: 10,000 inputs collide with odds ~2e-7
# The temporary folders of run_one: this version's (.partial-<run>-<attempt>, .old-...) and
# older versions' (.partial, .old).
_LEFTOVER = re.compile(r"\..+\.(?:partial|old)(?:-(?P<run>[0-9a-f]+)-\d+)?")


# ---- inputs and their outputs ---------------------------------------------------------------
def first_kind(path: Path) -> str:
    """The kind of a run's first input (``run.session.input_kind``), for the session's scale
    check; a missing or unreadable one counts as a bag (it fails alone, later)."""
    try:
        return input_kind(path)
    except Exception:  # noqa: BLE001 - a missing first input fails alone, later
        return "bag"


def output_name(path: Path) -> str:
    """An input's output name: its readable name (the bag folder's name or the file's stem),
    ``-`` and the first HASH_DIGITS hex digits of the SHA-256 of its absolute path. It depends
    on the input alone, never on the other inputs of a run or their order."""
    base = (path.name if path.is_dir() else path.stem) or "input"
    digest = hashlib.sha256(os.fsencode(os.path.abspath(path))).hexdigest()
    return f"{base}-{digest[:HASH_DIGITS]}"


def input_identity(path: Path, out_dir: Path | None = None) -> dict[str, Any]:
    """What a finished output must have been made from to be reused: the input's absolute
    path, its size in bytes and its newest modification time (ns). A folder (a bag, an image
    folder) counts all its files, in subfolders too: size is their total, the time the newest
    of the folder's, its subfolders' and its files', so a bag recorded again at the same path,
    or a file added or removed, makes another input. (Size and time are None when the input
    cannot be read: such an input is never skipped.) ``out_dir`` (the run's --out) is never
    part of an input, also where it lies inside one: what a run writes there is not input."""
    path = Path(os.path.abspath(path))
    skip = os.path.realpath(out_dir) if out_dir is not None else None
    try:
        top = path.stat()
    except OSError:
        return {"path": str(path), "size": None, "mtime_ns": None}
    size, newest = top.st_size, top.st_mtime_ns
    if path.is_dir():
        size = 0
        for root, folders, files in os.walk(path):
            # the output folder and everything in it are not walked, nor counted
            folders[:] = [f for f in folders
                          if os.path.realpath(os.path.join(root, f)) != skip]
            for name in folders + files:
                try:
                    entry = os.stat(os.path.join(root, name))
                except OSError:  # removed meanwhile, or a broken link: not part of the input
                    continue
                newest = max(newest, entry.st_mtime_ns)
                size += entry.st_size if S_ISREG(entry.st_mode) else 0
    return {"path": str(path), "size": size, "mtime_ns": newest}


def make_jobs(paths: list[Path], out_dir: Path, key: dict[str, Any],
              run: str) -> list[dict[str, Any]]:
    """One job per input of run ``run``: its output folder and what that output must have been
    made with (``key`` and the input's identity) to be reused."""
    jobs: list[dict[str, Any]] = []
    names: set[str] = set()
    for index, path in enumerate(paths):
        name = base = output_name(path)
        n = 1
        while name in names:  # two paths with one hash: never reused wrongly (the key says)
            n += 1
            name = f"{base}-{n}"
        names.add(name)
        job = {"index": index, "input": str(path), "final": str(out_dir / name),
               "key": {**key, "input": input_identity(path, out_dir)}, "run": run}
        jobs.append(with_attempt(job, 0))
    return jobs


def remove_leftovers(out_dir: Path, run: str) -> list[str]:
    """Remove the temporary folders that runs other than ``run`` left in ``out_dir`` (a killed
    worker's, an interrupted or failed input's, a retried attempt's); returns their names.
    This run's own are kept: an attempt of it may still be running (see ``with_attempt``)."""
    removed = []
    for entry in sorted(out_dir.iterdir()):
        match = _LEFTOVER.fullmatch(entry.name)
        if match and match["run"] != run and entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry.name)
    return removed


def job_key(settings: Settings, options: ProcessOptions, model_path: str,
            groups: list[str]) -> dict[str, Any]:
    """What a finished output must have been made with to be skipped: the model file's
    SHA-256, the settings and the command's options that change outputs (``groups``: the
    --outputs groups as parsed, so 'seg,depth' and 'depth,seg' are one job), and the
    calibration file's SHA-256."""
    digest = hashlib.sha256()
    with open(model_path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    key = {"model_sha256": digest.hexdigest(),
           "options": {**{name: value for name, value in settings.values().items()
                          if name in OUTPUT_SETTINGS},
                       **options.output_values(), "outputs": groups}}
    if options.camera_info_yaml:  # a recalibration under the same name counts
        key["camera_info_sha256"] = hashlib.sha256(
            Path(options.camera_info_yaml).read_bytes()).hexdigest()
    return key
