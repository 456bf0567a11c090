# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The options of ``dense-perception process`` that are the command's own, not the node's
settings (those are a :class:`~dense_perception.core.settings.table.Settings`): what to read,
where to write, which outputs, and how to run many inputs; and the inputs they name
(:meth:`ProcessOptions.paths`: paths, globs and @LIST files).

cli.py makes one :class:`ProcessOptions` from the parsed command line, checked, and hands it
down with the settings; nothing below cli.py sees the argparse namespace.
"""

from __future__ import annotations

import argparse
import glob
import os
import re
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from ..console import CliError

GLOB = re.compile(r"[*?[]")  # a glob, not a path: many inputs
# The command's own options that only a bag input reads ({field: flag}); argparse gives None
# when one is not typed, so a typed one is told apart from its default.
BAG_ONLY = {"topics": "--topic", "camera_info_topics": "--camera-info-topic",
            "out_namespace": "--out-namespace", "bag_format": "--bag-format",
            "bag_compression": "--bag-compression",
            "compressed": "--compressed", "copy": "--copy",
            "reference_depth_topic": "--reference-depth-topic",
            "odometry_topic": "--odometry-topic", "ply": "--ply"}


def _output(default: Any = None) -> Any:
    """A field that changes what an output holds: it is part of the fleet's reuse key."""
    return field(default=default, metadata={"affects_output": True})


@dataclass(frozen=True)
class ProcessOptions:
    """The command's own options, as given (lists as tuples; ``()`` where a repeatable flag was
    not given), and ``many``: whether the run is over many inputs (``fleet``)."""

    inputs: tuple[str, ...] = ()
    out: str | None = None
    outputs: str = _output("all")            # --outputs, as written (the groups: RunPlan)
    max_frames: int = _output(0)             # 0 = all
    camera_info_yaml: str | None = _output()
    topics: tuple[str, ...] = _output(())    # --topic, repeatable: () = the bag's only one
    camera_info_topics: tuple[str, ...] = _output(())
    out_namespace: str | None = _output()
    bag_format: str = _output("mcap")
    bag_compression: str = _output("zstd")   # --bag-compression: an MCAP's chunks
    compressed: str = _output("off")
    copy: str = _output("all")
    ply: bool = _output(False)               # --ply: each frame's cloud as a .ply (a bag)
    reference_depth_topic: str | None = _output()
    odometry_topic: str | None = _output()   # --odometry-topic: the robot's motion (a bag)
    poses: str | None = _output()            # --poses: a TUM trajectory (images, videos)
    verbose: bool = False
    require_metres: bool = False             # exit 2 when no frame came out in metres
    rerun: str | None = None                 # --rerun FILE.rrd: the run as a rerun recording
    inputs_from: str | None = None
    force: bool = False
    ray: str | None = None                   # None: no Ray; '': a local instance; an address
    workers: int = 0
    threads_per_worker: int = 1
    many: bool = False
    given: frozenset[str] = frozenset()      # the fields whose flag was typed (BAG_ONLY's)

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> "ProcessOptions":
        """The options of the parsed ``process`` command line, checked; CliError says what
        to fix."""
        inputs, ray = list(args.input), args.ray
        if ray and Path(ray).exists():  # '--ray bags/a.mcap ...': an input, not an address
            inputs, ray = [ray, *inputs], ""
        if not inputs and args.inputs_from is None:
            raise CliError("give an input (a file, folder, bag, glob or @LIST)")
        # Several inputs, a glob, a list or a Ray option; one plain input keeps the one-input
        # behaviour (its output at --out, no fleet summary).
        many = (len(inputs) != 1 or args.inputs_from is not None or ray is not None
                or bool(args.workers)
                or any(i.startswith("@") or (GLOB.search(i) and not Path(i).exists())
                       for i in inputs))
        threads = 1 if args.threads_per_worker is None else args.threads_per_worker
        if ray is None and args.threads_per_worker is not None:
            raise CliError("--threads-per-worker has no effect without --ray (the inputs run "
                           "in this process); add --ray or leave it out")
        if many:
            _check_many(args.out, ray, args.workers, threads)
        from ..inputs.rerun_record import check_rerun_option
        check_rerun_option(getattr(args, "rerun", None), many)
        if args.max_frames < 0:
            raise CliError(f"--max-frames must be >= 0, got {args.max_frames}")
        return cls(inputs=tuple(inputs), out=args.out, outputs=args.outputs,
                   max_frames=args.max_frames, camera_info_yaml=args.camera_info_yaml,
                   topics=tuple(args.topic or ()),
                   camera_info_topics=tuple(args.camera_info_topic or ()),
                   out_namespace=args.out_namespace, bag_format=args.bag_format or "mcap",
                   bag_compression=args.bag_compression or "zstd",
                   compressed=args.compressed or "off", copy=args.copy or "all",
                   ply=bool(getattr(args, "ply", None)),
                   reference_depth_topic=args.reference_depth_topic, verbose=args.verbose,
                   require_metres=getattr(args, "require_metres", False),
                   odometry_topic=args.odometry_topic,
                   poses=getattr(args, "poses", None),
                   rerun=getattr(args, "rerun", None),
                   inputs_from=args.inputs_from, force=args.force, ray=ray,
                   workers=args.workers, threads_per_worker=threads, many=many,
                   given=frozenset(name for name, flag in BAG_ONLY.items()
                                   if getattr(args, _dest(flag)) is not None))

    def paths(self) -> list[Path]:
        """The inputs this command names: the one input as given, or, for many, each input of
        the paths, globs and lists (:func:`fleet_inputs`)."""
        if self.many:
            return fleet_inputs(self.inputs, self.inputs_from, self.out)
        return [Path(self.inputs[0])]

    def output_values(self) -> dict[str, Any]:
        """``{option: value}`` of the options that change what an output holds (tuples as
        lists, as summary.json holds them): the command's part of the fleet's reuse key."""
        return {f.name: list(v) if isinstance(v := getattr(self, f.name), tuple) else v
                for f in fields(self) if f.metadata.get("affects_output")}


def _dest(flag: str) -> str:
    return {"--topic": "topic", "--camera-info-topic": "camera_info_topic"}.get(
        flag, flag.lstrip("-").replace("-", "_"))


def _check_many(out: str | None, ray: str | None, workers: int, threads: int) -> None:
    """The options a run over many inputs needs, or CliError."""
    if not out:
        raise CliError("many inputs need --out DIR: the folder for one output per input and "
                       "the fleet summary")
    if ray is None and (workers > 1 or threads != 1):
        raise CliError("--workers and --threads-per-worker need --ray (without it the inputs "
                       "run one after another in this process)")
    if workers < 0 or threads < 1:
        raise CliError("--workers must be >= 0 and --threads-per-worker >= 1")


# ---- the inputs named: paths, globs and lists ----------------------------------------------
def expand_inputs(items: list[str], inputs_from: str | None = None) -> list[Path]:
    """Paths, globs and @LIST files (one input per line, # comments, paths relative to the
    list's folder) to a list of inputs in the order given, each once."""
    found: list[Path] = []

    def add(item: str, base: Path | None) -> None:
        if item.startswith("@"):
            add_list(Path(item[1:]))
            return
        path = Path(item) if base is None or Path(item).is_absolute() else base / item
        if not path.exists() and GLOB.search(item):
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


def fleet_inputs(items: list[str] | tuple[str, ...], inputs_from: str | None,
                 out: str) -> list[Path]:
    """The inputs of a many-input run (:func:`expand_inputs`) but those inside ``out`` (--out),
    checked: CliError when none is left or ``out`` is a file."""
    out_dir = Path(out)
    # 'data/*' --out data/dense: the outputs are not inputs
    paths = [p for p in expand_inputs(list(items), inputs_from)
             if not p.resolve().is_relative_to(out_dir.resolve())]
    if not paths:
        raise CliError(f"no input outside --out '{out_dir}'")
    if out_dir.exists() and not out_dir.is_dir():
        raise CliError(f"--out '{out_dir}' is a file; many inputs need a folder")
    return paths
