# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""``make bench-fleet``: throughput of ``dense-perception process --ray`` with 1 and 2 workers.

The same set of bags (the sample scene, 640x480 rgb8 with CameraInfo, MCAP) is processed, with
a real-size model by default (``--model``: DA3-Small exported at 504 with int8 weights), with
``--workers 1`` and ``--workers 2`` (1 thread each) on one local Ray instance, in paired
rounds (1, 2, 1, 2, ...), every run from scratch (``--force``). Throughput = frames / wall time
of the whole run as the fleet summary gives it (actor start and model load included; Ray's own
start is not, it happens once before the rounds). Prints the median fps and the median of the
per-round ratios, with the machine's load average (other work takes cores from the workers),
and writes ``bench_out/fleet.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np

from dense_perception.offline import cli
from dense_perception.offline.inputs import bag_io
from tools.common.scene import make_sample_scene, scene_intrinsics

# A real-size model, so that a frame's work is mostly inference as with the real files: DA3-Small
# exported at DA3's own 280x504 with int8 weights (random weights; `make bench-menu` builds it;
# its 294x518 predecessor took about 0.23 s per frame on one thread here). The 5 kB test models
# make a frame mostly bag I/O.
MODEL = ".cache/bench_models/menu/da3_cpu_280x504_int8.tflite"


def write_bags(folder: Path, bags: int, frames: int) -> list[Path]:
    """``bags`` MCAP bags of ``frames`` 640x480 frames of the sample scene with CameraInfo."""
    from rosbags.rosbag2 import StoragePlugin, Writer
    ts = bag_io.TYPESTORE
    image = make_sample_scene(640, 480)[:, :, ::-1].copy()  # bgr -> rgb8
    k = scene_intrinsics(640, 480)
    paths = []
    for b in range(bags):
        path = folder / f"bag{b:02d}"
        with Writer(path, version=9, storage_plugin=StoragePlugin.MCAP) as w:
            img = w.add_connection("/cam/image_raw", bag_io.IMAGE, typestore=ts)
            info = w.add_connection("/cam/camera_info", bag_io.CAMERA_INFO, typestore=ts)
            for i in range(frames):
                t = 1_000_000_000 + i * 100_000_000
                header = ts.types["std_msgs/msg/Header"](
                    stamp=ts.types["builtin_interfaces/msg/Time"](sec=t // 10**9,
                                                                  nanosec=t % 10**9),
                    frame_id="cam_optical")
                w.write(img, t, ts.serialize_cdr(bag_io.array_to_image(image, "rgb8", header),
                                                 bag_io.IMAGE))
                w.write(info, t, ts.serialize_cdr(bag_io.intrinsics_to_camera_info(k, header),
                                                  bag_io.CAMERA_INFO))
        paths.append(path)
    return paths


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bags", type=int, default=8)
    parser.add_argument("--frames", type=int, default=24, help="frames per bag")
    parser.add_argument("--model", default=MODEL)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", default="1,2", help="worker counts to compare")
    parser.add_argument("--outputs", default="depth", help="--outputs of the runs (depth: the "
                        "work is mostly the model's, as with a real model, not writing)")
    parser.add_argument("--out", default="bench_out/fleet.json")
    args = parser.parse_args()
    if not Path(args.model).exists():
        print(f"{args.model} is missing: run `make bench-menu` first (make bench-fleet does)",
              file=sys.stderr)
        return 1
    import ray
    counts = [int(n) for n in args.workers.split(",")]
    cpus = os.cpu_count() or 1
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (os.getcwd(), os.environ.get("PYTHONPATH", "")) if p)
    ray.init(num_cpus=max(max(counts), cpus), include_dashboard=False, logging_level="WARNING")
    results: dict[int, list[dict[str, float]]] = {n: [] for n in counts}
    load_start = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="bench_fleet_") as tmp:
        bags = write_bags(Path(tmp), args.bags, args.frames)
        for r in range(args.rounds):
            for n in counts:
                out = Path(tmp) / f"out_{n}"
                code = cli.main(["process", *map(str, bags), "--out", str(out), "--model",
                                 args.model, "--backend", "cpu", "--ray", "--workers", str(n),
                                 "--threads-per-worker", "1", "--force", "--copy", "none",
                                 "--outputs", args.outputs])
                summary = json.loads((out / "fleet_summary.json").read_text())
                if code != 0:
                    print(f"run with {n} workers failed: {summary['counts']}", file=sys.stderr)
                    return 1
                results[n].append({"seconds": summary["seconds"], "frames": summary["frames"],
                                   "fps": summary["fps"],
                                   "workers_ready_seconds": summary["workers_ready_seconds"]})
                print(f"round {r + 1}: {n} worker(s): {summary['frames']} frames in "
                      f"{summary['seconds']:.1f} s = {summary['fps']:.2f} fps (workers ready "
                      f"after {summary['workers_ready_seconds']:.1f} s)", flush=True)
    ray.shutdown()
    fps = {n: statistics.median(x["fps"] for x in results[n]) for n in counts}
    load = os.getloadavg()[0]  # other work on the machine takes cores from the workers
    report = {"bags": args.bags, "frames_per_bag": args.frames, "cpus": cpus, "model": args.model,
              "outputs": args.outputs,
              "load_average_1min": [round(load_start, 2), round(load, 2)],
              "runs": {str(n): results[n] for n in counts},
              "median_fps": {str(n): fps[n] for n in counts},
              # paired: each round's ratio to the same round's first count, then the median
              "paired_ratio_median": {str(n): round(statistics.median(
                  x["fps"] / y["fps"] for x, y in zip(results[n], results[counts[0]])), 3)
                  for n in counts}}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n")
    print(f"\n{args.bags} bags x {args.frames} frames (640x480), {args.model}, --outputs "
          f"{args.outputs}, 1 thread per worker, "
          f"{cpus} CPUs, load average {load_start:.1f} at the start, {load:.1f} at the end:")
    for n in counts:
        ratios = [x["fps"] / y["fps"] for x, y in zip(results[n], results[counts[0]])]
        print(f"  {n} worker(s): median {fps[n]:6.2f} fps; paired ratio to {counts[0]}: median "
              f"{statistics.median(ratios):.2f}x (rounds: "
              f"{', '.join(f'{r:.2f}' for r in ratios)})")
    print(f"-> {args.out}")
    return 0


if __name__ == "__main__":
    np.seterr(all="ignore")
    sys.exit(main())
