# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Several cameras, one model (``cameras``): memory and per-camera output rate.

Memory of the node: one node with 1, 2, 3 cameras against that many separate nodes (RSS and
PSS from /proc), and one model loaded in a fresh process by the Interpreter (the node's CPU
path) against CompiledModel with XNNPACK's weight cache (packed weights in a file mapped into
memory: file-backed pages that processes share).

Rate: one node with two cameras at 30 fps each (1280x720), each camera's output rate, against
the same node with one camera under the same feed.

``python -m tools.bench.cameras --model M`` prints JSON; ``tools.bench.run`` adds its rows.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# A fresh process: load the model one way, invoke twice, report VmRSS / VmHWM / Pss (MB).
LOAD_PROBE = r"""
import sys, numpy as np
sys.path.insert(0, sys.argv[4])
from tools.bench.cameras import proc_memory_mb
mode, model, threads = sys.argv[1], sys.argv[2], int(sys.argv[3])
if mode == "interpreter":
    from dense_perception.core.backends.runner_base import InterpreterRunner
    runner = InterpreterRunner(model, threads)
else:
    from dense_perception.core.backends.runner_base import CompiledModelRunner
    runner = CompiledModelRunner(model, "cpu", threads, weight_cache=sys.argv[5])
for _ in range(2):
    runner.run()
print("MEM", *proc_memory_mb())
"""


def proc_memory_mb(pid: int | str = "self") -> tuple[float, float, float]:
    """(RSS, peak RSS, PSS) in MB of a process and its worker processes (the GPU, NPU and
    CPU-fp16 backends run the model in a child), from /proc; PSS divides shared pages among
    the processes sharing them, the summed peak is an upper bound."""
    total = [0.0, 0.0, 0.0]
    for member in [pid, *_descendants(pid)]:
        try:
            for i, value in enumerate(_one_proc_memory_mb(member)):
                total[i] += value
        except (OSError, KeyError):  # a worker that ended meanwhile
            if member == pid:
                raise
    return total[0], total[1], total[2]


def _descendants(pid: int | str) -> list[str]:
    """Every process below ``pid`` (/proc/<pid>/task/*/children, Linux 3.5+)."""
    found, queue = [], [str(pid)]
    while queue:
        parent = queue.pop()
        for children in Path(f"/proc/{parent}/task").glob("*/children"):
            try:
                kids = children.read_text().split()
            except OSError:
                continue
            found += kids
            queue += kids
    return found


def _one_proc_memory_mb(pid: int | str) -> tuple[float, float, float]:
    status = Path(f"/proc/{pid}/status").read_text()
    fields = {line.split(":")[0]: line.split()[1] for line in status.splitlines()
              if line.startswith(("VmRSS", "VmHWM"))}
    pss = 0.0
    rollup = Path(f"/proc/{pid}/smaps_rollup")
    if rollup.exists():
        for line in rollup.read_text().splitlines():
            if line.startswith("Pss:"):
                pss = int(line.split()[1]) / 1024
    return int(fields["VmRSS"]) / 1024, int(fields["VmHWM"]) / 1024, pss


def load_memory(model: str, threads: int, cache_dir: Path) -> dict:
    """RSS/peak/PSS of one process holding ``model``: Interpreter vs weight cache (cold: the
    process that writes the cache; warm: one that maps an existing cache)."""
    cache = cache_dir / (Path(model).stem + ".memory.xnnpack_cache")
    cache.unlink(missing_ok=True)
    out = {}
    for label, mode in (("interpreter", "interpreter"), ("weight_cache_cold", "cache"),
                        ("weight_cache_warm", "cache")):
        proc = subprocess.run([sys.executable, "-c", LOAD_PROBE, mode, model, str(threads),
                               str(REPO), str(cache)], capture_output=True, text=True)
        line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("MEM")), None)
        if proc.returncode != 0 or line is None:
            out[f"model_rss_mb_{label}"] = None
            continue
        rss, peak, pss = (float(v) for v in line.split()[1:])
        out.update({f"model_rss_mb_{label}": round(rss, 1),
                    f"model_peak_rss_mb_{label}": round(peak, 1),
                    f"model_pss_mb_{label}": round(pss, 1)})
    out["weight_cache_file_mb"] = round(cache.stat().st_size / 2**20, 1) if cache.exists() \
        else None
    cache.unlink(missing_ok=True)
    return out


def _camera_names(n: int) -> list[str]:
    return [f"cam{i}" for i in range(n)]


def node_memory(model: str, threads: int, counts: tuple[int, ...] = (1, 2, 3),
                seconds: float = 6.0, fps: float = 5.0, extra_args: list[str] = ()) -> dict:
    """RSS and PSS of one node serving N cameras (every output of every camera subscribed,
    each camera fed ``fps``) against N single-camera nodes (summed), after ``seconds`` of
    outputs from every camera."""
    out = {}
    for n in counts:
        names = _camera_names(n)
        one, _ = _run_nodes([["-p", f"cameras:=[{','.join(names)}]"]], names, model, threads,
                            seconds, fps, extra_args)
        out[f"node_{n}cam_rss_mb"] = round(one[0][0], 1)
        out[f"node_{n}cam_pss_mb"] = round(one[0][2], 1)
        if n > 1:
            separate, _ = _run_nodes([["-r", f"__ns:=/{name}"] for name in names], names,
                                     model, threads, seconds, fps, extra_args)
            out[f"separate_{n}nodes_rss_mb"] = round(sum(m[0] for m in separate), 1)
            out[f"separate_{n}nodes_pss_mb"] = round(sum(m[2] for m in separate), 1)
    if "node_1cam_rss_mb" in out and "node_3cam_rss_mb" in out:
        out["node_3cam_vs_1cam_rss"] = round(out["node_3cam_rss_mb"] / out["node_1cam_rss_mb"], 3)
    return out


def camera_rates(model: str, threads: int, seconds: float = 20.0, fps: float = 30.0) -> dict:
    """Each camera's output rate (Hz) of one node with two cameras fed ``fps`` each, against
    one node with one camera under a feed of the same total size (two 30 fps streams: the
    second camera's frames go to a topic nobody reads, so the feed's CPU cost is alike)."""
    names = _camera_names(2)
    _, two = _run_nodes([["-p", f"cameras:=[{','.join(names)}]"]], names, model, threads,
                        seconds, fps, [], size=(1280, 720))
    _, one = _run_nodes([["-p", "cameras:=[cam0]"]], names[:1], model, threads, seconds, fps,
                        [], size=(1280, 720), idle_feeds=names[1:])
    out = {"two_cameras_30fps_hz": [round(two[n], 3) for n in names],
           "one_camera_30fps_hz": round(one[names[0]], 3)}
    if one[names[0]]:
        out["two_cameras_per_camera_vs_one"] = round(min(two.values()) / one[names[0]], 3)
    if max(two.values()):
        out["two_cameras_fairness"] = round(min(two.values()) / max(two.values()), 3)
    return out


def _run_nodes(node_args: list[list[str]], cameras: list[str], model: str, threads: int,
               seconds: float, fps: float, extra_args: list[str],
               size: tuple[int, int] = (640, 480), idle_feeds: list[str] = ()
               ) -> tuple[list[tuple], dict[str, float]]:
    """Start one node per entry of ``node_args``; feed each camera in ``cameras`` (topics
    ``/<camera>/image``: a multi-camera node's relative ``<camera>/image``, or a single node in
    namespace ``/<camera>``), subscribe to all outputs, wait for outputs from every camera,
    run ``seconds`` more: each node's (RSS, peak, PSS) MB and each camera's output Hz over
    those seconds. ``idle_feeds``: more cameras fed at ``fps`` whose outputs nobody reads."""
    import rclpy
    from rclpy.qos import QoSProfile
    from sensor_msgs.msg import Image

    from dense_perception.core.products import COMPRESSED, OUTPUTS
    from dense_perception.ros.messages import MESSAGE_CLASSES
    from tools.common.node_process import NodeProcess
    from tools.common.ros_client import ScenePlayer

    nodes = [NodeProcess(["-p", f"model_path:={model}", "-p", "backend:=cpu",
                          "-p", f"num_threads:={threads}", "-p", "depth_scale_source:=fixed",
                          *extra_args, *args]).start() for args in node_args]
    context = rclpy.Context()
    rclpy.init(context=context)
    client = rclpy.create_node("bench_memory", context=context)
    counts = {name: 0 for name in cameras}
    lock = threading.Lock()
    subs = []
    for name in cameras:
        def on_depth(_msg, name=name):
            with lock:
                counts[name] += 1
        subs.append(client.create_subscription(Image, f"/{name}/depth/image", on_depth,
                                               QoSProfile(depth=5)))
        for key, (topic, msg_type, _) in OUTPUTS.items():
            if key not in ("depth", "classes") and key not in COMPRESSED:  # raw outputs
                subs.append(client.create_subscription(
                    MESSAGE_CLASSES[msg_type], f"/{name}/{topic}", lambda _m: None,
                    QoSProfile(depth=2), raw=True))
    players = []
    for name in [*cameras, *idle_feeds]:
        driver = rclpy.create_node(f"driver_{name}", namespace=f"/{name}", context=context)
        players.append(ScenePlayer(driver, fps=fps, size=size))
    executor = rclpy.executors.SingleThreadedExecutor(context=context)
    executor.add_node(client)
    stop = threading.Event()
    spin = threading.Thread(target=lambda: [executor.spin_once(timeout_sec=0.1)
                                            for _ in iter(stop.is_set, True)], daemon=True)
    spin.start()
    try:
        for player in players:
            player.start()
        deadline = time.monotonic() + 300
        while min(counts.values()) < 2:
            if time.monotonic() > deadline or not all(n.alive() for n in nodes):
                raise RuntimeError("no output from every camera: " + " | ".join(
                    n.output_tail(500) for n in nodes))
            time.sleep(0.2)
        with lock:
            start = dict(counts)
        time.sleep(seconds)
        with lock:
            hz = {name: (counts[name] - start[name]) / seconds for name in cameras}
        return [proc_memory_mb(n.pid) for n in nodes], hz
    finally:
        for player in players:
            player.stop()
        stop.set()
        spin.join(timeout=2)
        for n in nodes:
            n.stop(timeout=10)
        executor.shutdown()
        client.destroy_node()
        rclpy.shutdown(context=context)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=6.0)
    parser.add_argument("--no-node", action="store_true", help="only the model load rows")
    parser.add_argument("--rates", action="store_true", help="also the two-camera rate rows")
    parser.add_argument("--ros-args", nargs="*", default=[], help="extra node arguments")
    args = parser.parse_args(argv)
    results = load_memory(args.model, args.threads, Path(tempfile.gettempdir()))
    if not args.no_node:
        results.update(node_memory(args.model, args.threads, seconds=args.seconds,
                                   extra_args=args.ros_args))
    if args.rates:
        results.update(camera_rates(args.model, args.threads))
    print(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
