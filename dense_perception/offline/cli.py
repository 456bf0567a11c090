# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""``dense-perception``: the node's pipeline over recorded data, with no ROS install needed.

    dense-perception process INPUT [INPUT ...] --model M [--out OUT] [options]
    dense-perception info M

The command line only: ``process`` makes the run's settings (``options/settings_args.py``),
the command's own options and the inputs they name (``options/process_options.py``), the
run's plan (``run/run_plan.py``) and its model session (``run/session.py``, its frame loop in
``run/loop.py``) once, here, and hands them down: one input to the session, many inputs (in
this process or on Ray workers) to ``fleet/``. ``info`` is in ``info.py``.

Exit status: 0 done, 2 error (one line on stderr says why; many inputs: any input failed),
130 interrupted by Ctrl-C (the output is closed and valid, holding the frames done so far).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Callable

from .. import __version__
from ..core.allocator import keep_freed_memory
from ..core.model.specs import MODEL_TYPES, ModelSignatureError
from ..core.backends.runner import ModelLoadError
from .console import EXIT_ERROR, EXIT_INTERRUPTED, PROG, CliError, error
from .info import cmd_info
from .fleet.plan import first_kind
from .fleet.run import run_fleet
from .inputs.sources import BAG_COMPRESSED, BAG_COMPRESSIONS
from .run.run_plan import make_plan
from .run.session import COPY_MODES, ModelSession, default_out, input_kind
from .options.process_options import ProcessOptions
from .options.scale_options import ScaleOptionError, add_scale_arguments
from .options.settings_args import (DEPTH_FORMATS, add_setting_arguments, given_settings,
                            settings_from_args)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG, description="Dense depth, normals, segmentation and point clouds from images, "
        "videos and ROS 2 bags, with the dense_perception node's pipeline (no ROS needed).")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True,
                                metavar="{process,info,export-da3}")

    p = sub.add_parser("process", help="run a model over an image, folder, video or bag",
                       description="Run a model over an image file, a folder of images, a video "
                       "or a ROS 2 bag (MCAP or sqlite3).")
    p.add_argument("input", nargs="*", help="image file, folder of images, video file, or ROS 2 "
                   "bag (rosbag2 folder, .mcap or .db3); several inputs, globs ('bags/*.mcap') "
                   "or @LIST (a text file, one input per line) process many (see 'many inputs')")
    p.add_argument("--model", "-m", required=True, help=".tflite model file")
    p.add_argument("--out", "-o", help="output folder (images/video) or new bag folder (bag "
                   "input); default: <input>_dense next to the input. Many inputs: the folder "
                   "that gets one output per input and the fleet summary (required)")
    p.add_argument("--outputs", default="all", help="comma-separated subset of depth, "
                   "depth_confidence (DA3 files with confidence), normals, seg, points "
                   "(default: all the model provides)")
    p.add_argument("--depth-format", choices=tuple(DEPTH_FORMATS.values()), default="npy",
                   help="depth data: float32 metres (.npy files / 32FC1 in bags) or 16-bit "
                   "millimetres (PNG files / 16UC1 in bags)")
    # The node's settings, from the one table (defaults, choices and ranges the node's).
    add_setting_arguments(p, add_scale_arguments(p))
    p.add_argument("--max-frames", type=int, default=0, help="stop after N frames (0 = all)")
    p.add_argument("--require-metres", action="store_true", help="exit 2 when a depth scale "
                   "was to be estimated (--depth-scale-source, or a metric model checked by "
                   "one) and no frame came out in metres: for scripts that need the metres")
    p.add_argument("--rerun", metavar="FILE.rrd", help="also record the run for the rerun "
                   "viewer: colour, depth, segmentation with its class names, the cloud in "
                   "the odometry's frame with the camera's pinhole and pose, and the scale "
                   "with its 2 sigma over time (one input; pip install "
                   "'dense-perception[rerun]')")
    files = p.add_argument_group("image and video input")
    files.add_argument("--camera-info-yaml", metavar="FILE", help="the camera's calibration, "
                       "as camera_calibration writes it and camera_info_manager reads it "
                       "(image_width, camera_matrix, distortion_model, ...), used as a bag's "
                       "CameraInfo is: raw images are rectified (D, R, P; binning and ROI where "
                       "given), --input-rectified uses P; without it, a pinhole guess "
                       "(--fallback-hfov)")
    bag = p.add_argument_group("bag input")
    bag.add_argument("--topic", "-t", action="append",
                     help="image topic (sensor_msgs/Image or CompressedImage); optional when "
                     "the bag has only one. Repeat it for several cameras on one model: each "
                     "camera's outputs go to its own image topic's namespace, as the node's "
                     "cameras parameter puts them under each camera's name")
    bag.add_argument("--camera-info-topic", action="append",
                     help="CameraInfo topic of the image topic (default: camera_info beside "
                     "it, as image_transport pairs them: /front/image -> /front/camera_info). "
                     "With several --topic, give one per --topic in the same order; a topic "
                     "without a CameraInfo gets the --fallback-hfov pinhole guess, with a "
                     "warning, never another camera's")
    bag.add_argument("--odometry-topic", metavar="TOPIC", help="the robot's nav_msgs/Odometry "
                     "topic: each frame's camera motion (temporal alignment, "
                     "--depth-scale-source motion), as the node takes it from its odometry "
                     "topic; the camera's mounting comes from the bag's /tf_static "
                     "(odometry child_frame_id -> the image's frame_id) or --camera-in-base")
    bag.add_argument("--out-namespace", help="namespace of the output topics (default: the "
                     "image topic's, e.g. /camera for /camera/image_raw)")
    bag.add_argument("--bag-format", choices=("mcap", "sqlite3"),
                     help="storage of the output bag (default mcap)")
    bag.add_argument("--bag-compression", choices=BAG_COMPRESSIONS,
                     help="compression of the output MCAP's chunks: zstd (the default; "
                     "lossless, as rosbag2's zstd_fast preset writes, and what Foxglove and "
                     "ros2 bag read) or none; a sqlite3 bag is never compressed")
    bag.add_argument("--compressed", choices=BAG_COMPRESSED,
                     help="image_transport's compressed topics in the output bag (the node's: "
                     "depth/image/compressedDepth, */colored/compressed, "
                     "segmentation/labels/compressed): off (the default), add (beside the raw "
                     "ones) or only "
                     "(instead of the raw images they compress: the size to keep for Foxglove)")
    bag.add_argument("--ply", action="store_true", default=None, help="also write each "
                     "frame's cloud as points/<frame>.ply in the output folder (binary PLY, "
                     "metres, the camera's optical frame), as image and video inputs get "
                     "them; <frame>: the frame's number and stamp")
    bag.add_argument("--copy", choices=COPY_MODES, help="input topics copied into the "
                     "output bag: all (the default), camera (image + CameraInfo) or none")
    p.add_argument("--verbose", "-v", action="store_true",
                   help="show what LiteRT prints while loading")
    fleet = p.add_argument_group(
        "many inputs", "one output per input under --out, named after the input, and "
        "fleet_summary.json/.csv there; finished inputs are skipped on the next run")
    fleet.add_argument("--inputs-from", metavar="FILE", help="a text file listing inputs (one "
                       "per line, globs allowed, # comments; relative to the file's folder)")
    fleet.add_argument("--force", action="store_true", help="redo inputs whose output is "
                       "already complete for this model and these options")
    fleet.add_argument("--ray", nargs="?", const="", default=None, metavar="ADDRESS",
                       help="run the inputs on Ray workers: a local Ray instance without "
                       "ADDRESS, or an existing cluster ('auto', 'ray://host:10001'); needs "
                       "pip install '.[fleet]'")
    fleet.add_argument("--workers", type=int, default=0, help="Ray workers (actors), each "
                       "loading the model once (default: the cluster's CPUs / "
                       "--threads-per-worker)")
    fleet.add_argument("--threads-per-worker", type=int, help="CPU threads of each Ray "
                       "worker (default 1); workers x threads must fit the cores of the nodes")
    p.set_defaults(func=cmd_process)

    i = sub.add_parser("info", help="what a model file is and how fast it runs here",
                       description="Show a model's kind, signature and size, and which backends "
                       "initialise here with their warm invoke time.")
    i.add_argument("model", help=".tflite model file")
    i.add_argument("--model-type", choices=MODEL_TYPES, default="auto", help="model kind, as "
                   "for process (depth: read with the depth settings' defaults)")
    i.add_argument("--threads", type=int, default=-1, help="CPU threads; -1 = all cores")
    i.add_argument("--runs", type=int, default=5, help="timed invokes per backend")
    i.add_argument("--backends", default="cpu,gpu", help="backends to try (cpu,gpu)")
    i.add_argument("--json", action="store_true", help="print JSON")
    i.add_argument("--verbose", "-v", action="store_true",
                   help="show what LiteRT prints while loading")
    i.set_defaults(func=cmd_info)

    from .play import add_play_parser  # rclpy is imported only when it plays
    add_play_parser(sub)

    from ..export.export_da3 import add_export_da3_parser  # torch is imported only when it runs
    add_export_da3_parser(sub)
    return parser


def cmd_process(args: argparse.Namespace,
                after_frame: Callable[[int], None] | None = None,
                watch: Callable[[dict[str, Any]], None] | None = None) -> int:
    """``process``: the run's options, inputs and settings, each made and checked once, its plan
    (``run.run_plan.make_plan``, checked against the inputs' kinds) and the model session of
    the plan; then one input (``ModelSession.process_input``), or many
    (``fleet.run.run_fleet``) when given several, a glob, a list or a Ray option. Nothing below
    sees ``args``, nor below the plan the options' raw values."""
    from .inputs.bag_io import BagError
    from .inputs.file_io import InputError
    try:
        options = ProcessOptions.from_args(args)
        paths = options.paths()
        given = given_settings(args)  # the setting flags typed: nothing below sees args
        settings = settings_from_args(args)
        # Each input's kind, for the flags and scale settings the plan checks (many inputs: an
        # input of a kind they do not suit fails alone; a missing one counts as a bag).
        kind = first_kind if options.many else input_kind
        plan = make_plan(settings, options, [kind(path) for path in paths], given)
        session = ModelSession(plan)
        if options.many:
            return run_fleet(session, paths, watch)
        out_path = Path(options.out) if options.out else default_out(paths[0])
        code, _ = session.process_input(paths[0], out_path, after_frame=after_frame)
        return code
    except (BagError, InputError) as exc:
        raise CliError(str(exc)) from None


def main(argv: list[str] | None = None, *,
         after_frame: Callable[[int], None] | None = None,
         fleet_watch: Callable[[dict[str, Any]], None] | None = None) -> int:
    """Console entry point. Test hooks: ``after_frame(n)`` runs after the n-th frame of one
    input is inferred; ``fleet_watch(state)`` sees each busy worker of a many-input run."""
    args = build_parser().parse_args(argv)
    try:
        if args.command == "process":
            keep_freed_memory()  # each frame's arrays reuse the last frame's (core/allocator.py)
            return cmd_process(args, after_frame=after_frame, watch=fleet_watch)
        return args.func(args)
    except (CliError, ModelLoadError, ModelSignatureError, ScaleOptionError) as exc:
        error(exc)
        return EXIT_ERROR
    except KeyboardInterrupt:  # before any output exists
        print(f"{PROG}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
