# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""``make bench``'s motion rows: what the motion scale costs the node and ``process``.

The node as its own process over DDS, fed the shared 7-Scenes frames 0-299 (the colour
camera's SfM poses, registered depth: ``7scenes-redkitchen-sfm``) at 30 Hz in real time and the
robot's odometry at 50 Hz (the poses moved to a base the camera looks forward from,
interpolated between frames), once with ``depth_scale_source: motion`` and once without a
scale (the temporal alignment on in both), for each real network. Per run: frames finished
per second (``depth/colored``: every frame finished, in metres or withheld), the latency
from publishing the image to receiving it (p50, p95), and
the metres of the same run (frames in metres, the median and largest error of their
scale against the measured depth). Then ``process`` on the same frames, with and without the
motion scale: frames per second and the metres. Printed as one markdown table; run:
``make bench`` or ``python -m tools.bench.motion_node``.
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

import cv2
import numpy as np

from dense_perception.core.conversions import image_msg_to_array
from dense_perception.core.motion.clock_offset import pose_at
from dense_perception.core.motion.odometry import mounting_matrix
from dense_perception.core.motion.pose import invert, quaternion_from_rotation
from dense_perception.core.motion.trajectory import read_tum
from tools.eval.real_scenes import FASTDEPTH, PYDNET
from tools.eval.stretches import SFM

STRETCHES = ("frames-0000-0099", "frames-0100-0199", "frames-0200-0299")
CAMERA_IN_BASE = [0.1, 0.0, 0.5, -0.5, 0.5, -0.5, 0.5]  # looking along base_link's x axis
IMAGE_HZ, ODOMETRY_HZ = 30.0, 50.0
NETWORKS = {"PyD-Net++": PYDNET, "FastDepth": FASTDEPTH}
COMMON = {"model_type": "depth", "input_normalization": "unit", "fit": "stretch",
          "output_resolution": "input", "backend": "cpu"}


def scene() -> tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray], Path]:
    """The 300 frames (RGB), their measured depth (m, NaN unknown) and poses."""
    images, truths, poses = [], [], []
    for name in STRETCHES:
        folder = SFM / name
        colour = sorted(folder.glob("frame-*.color.*"))
        images += [cv2.cvtColor(cv2.imread(str(p)), cv2.COLOR_BGR2RGB) for p in colour]
        for p in colour:
            raw = cv2.imread(str(p).replace(".color.jpg", ".depth.png").replace(
                ".color.png", ".depth.png"), cv2.IMREAD_UNCHANGED)
            truths.append(np.where(raw > 0, raw.astype(np.float32) / 1000, np.nan))
        poses += [pose for _, pose in read_tum(folder / "trajectory.tum").for_frames(
            len(colour))]
    return images, truths, poses, SFM / STRETCHES[0] / "camera.yaml"


def scale_error(depth: np.ndarray, truth: np.ndarray) -> float:
    """The published depth's scale error: median of depth / measured, minus 1."""
    return float(np.nanmedian(depth / truth)) - 1.0


def node_run(model: Path, motion: bool, images, truths, poses, calibration: Path) -> dict:
    """One node run: frames/s, latency p50/p95 (ms) and the metres."""
    import rclpy
    from nav_msgs.msg import Odometry
    from sensor_msgs.msg import Image
    from dense_perception.offline.inputs.camera_yaml import load_camera_info_yaml
    from dense_perception.ros.messages import array_to_image
    from tools.common.node_process import NodeProcess
    from rclpy.qos import QoSProfile
    from tools.common.ros_client import ScenePlayer
    params = {**COMMON, "model_path": str(model),
              "depth_scale_source": "motion" if motion else "none",
              "camera_in_base": "[" + ",".join(str(v) for v in CAMERA_IN_BASE) + "]"}
    args = [a for k, v in params.items() for a in ("-p", f"{k}:={v}")]
    node = NodeProcess(args).start()
    context = rclpy.Context()
    rclpy.init(context=context)
    client = rclpy.create_node("motion_bench", context=context)
    player = ScenePlayer(client, fps=IMAGE_HZ, reliable=True)
    odometry = client.create_publisher(Odometry, "odometry", 100)
    sent: dict[int, float] = {}
    got: dict[int, tuple[float, np.ndarray]] = {}
    lock = threading.Lock()
    t0 = 0.0  # the first frame's stamp, set once the node is up

    def index(msg) -> int:
        return round((msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9 - t0) * IMAGE_HZ)

    def on_colored(msg: Image) -> None:  # every frame finished, metres or not
        now = time.monotonic()
        with lock:
            done[index(msg)] = now

    def on_depth(msg: Image) -> None:  # the frames in metres (or relative, without a scale)
        with lock:
            got[index(msg)] = image_msg_to_array(msg).astype(np.float32)

    done: dict[int, float] = {}
    client.create_subscription(Image, "depth/colored", on_colored, QoSProfile(depth=10))
    client.create_subscription(Image, "depth/image", on_depth, QoSProfile(depth=10))
    stop = threading.Event()
    from tools.bench.loadgen import _spin
    spinner = threading.Thread(target=_spin, args=(client, stop), daemon=True)
    spinner.start()
    from sensor_msgs.msg import CameraInfo
    calib = load_camera_info_yaml(str(calibration))  # rosbags' message: rclpy's is made here
    info = CameraInfo(width=int(calib.width), height=int(calib.height),
                      distortion_model=calib.distortion_model,
                      d=[float(v) for v in calib.d], k=[float(v) for v in calib.k],
                      r=[float(v) for v in calib.r], p=[float(v) for v in calib.p])
    camera_from_base = invert(mounting_matrix(CAMERA_IN_BASE))
    quats = [quaternion_from_rotation(p[:3, :3]) for p in poses]
    messages = [array_to_image(im, "rgb8", player.header()) for im in images]
    try:
        deadline = time.monotonic() + 300
        while not node.alive() or odometry.get_subscription_count() == 0 or \
                player.image_pub.get_subscription_count() == 0:
            if time.monotonic() > deadline or node.proc.poll() is not None:
                raise RuntimeError("the node did not start:\n" + node.output_tail())
            time.sleep(0.1)
        t0 = time.time() + 1.0  # stamps: when each is sent, as a camera driver's
        stamps = [t0 + i / IMAGE_HZ for i in range(len(images))]
        events = sorted([(i / IMAGE_HZ, 0, i) for i in range(len(images))]
                        + [(j / ODOMETRY_HZ, 1, j)
                           for j in range(int(len(images) / IMAGE_HZ * ODOMETRY_HZ))])
        start = time.monotonic() + (t0 - time.time())
        for when, kind, i in events:
            time.sleep(max(0.0, start + when - time.monotonic()))
            if kind == 0:
                header = player.header(sec=int(stamps[i]),
                                       nanosec=int(round(stamps[i] % 1 * 1e9)))
                header.frame_id = "camera_optical"
                with lock:
                    sent[i] = time.monotonic()
                player.publish_frame(messages[i], header, info=info)
            else:
                t = t0 + i / ODOMETRY_HZ
                pose = pose_at(stamps, poses, t, quats)
                if pose is None:
                    continue
                base = pose @ camera_from_base
                msg = Odometry()
                msg.header = player.header(sec=int(t), nanosec=int(round(t % 1 * 1e9)))
                msg.header.frame_id, msg.child_frame_id = "odom", "base_link"
                p, q = msg.pose.pose.position, msg.pose.pose.orientation
                p.x, p.y, p.z = (float(v) for v in base[:3, 3])
                q.x, q.y, q.z, q.w = (float(v) for v in quaternion_from_rotation(base[:3, :3]))
                odometry.publish(msg)
        time.sleep(2.0)  # the last frames' outputs
    finally:
        stop.set()
        spinner.join(timeout=2)
        node.stop()
        client.destroy_node()
        rclpy.shutdown(context=context)
    with lock:
        results, finished = dict(got), dict(done)
    latency = [1000 * (finished[i] - sent[i]) for i in finished if i in sent]
    duration = len(images) / IMAGE_HZ
    row = {"frames": len(finished), "frames_per_s": round(len(finished) / duration, 2),
           "latency_p50_ms": round(float(np.percentile(latency, 50)), 1) if latency else None,
           "latency_p95_ms": round(float(np.percentile(latency, 95)), 1) if latency else None}
    if motion:
        errors = [abs(scale_error(d, truths[i])) for i, d in results.items()
                  if 0 <= i < len(truths)]
        row.update(in_metres=len(errors),
                   median_error=round(float(np.median(errors)), 4) if errors else None,
                   worst_error=round(float(max(errors)), 4) if errors else None)
    return row


def offline_run(model: Path, motion: bool) -> dict:
    """``process`` over the same three stretches (one run each, summed): frames/s, metres."""
    frames, seconds, errors = 0, 0.0, []
    for name in STRETCHES:
        folder = SFM / name
        with tempfile.TemporaryDirectory() as out:
            cmd = [sys.executable, "-m", "dense_perception", "process", str(folder),
                   "--model", str(model), "--model-type", "depth", "--input-normalization",
                   "unit", "--fit", "stretch", "--output-resolution", "input",
                   "--camera-info-yaml", str(folder / "camera.yaml"), "--outputs", "depth",
                   "--poses", str(folder / "trajectory.tum"), "--out", out]
            if motion:
                cmd += ["--depth-scale-source", "motion"]
            started = time.monotonic()
            done = subprocess.run(cmd, capture_output=True, text=True, check=False)
            seconds += time.monotonic() - started
            if done.returncode:
                raise RuntimeError(done.stderr[-2000:])
            count = len(sorted(folder.glob("frame-*.color.*")))
            frames += count
            if motion:  # depth/frame-NNNNNN.npy beside frame-NNNNNN.depth.png
                for npy in sorted((Path(out) / "depth").glob("frame-*.npy")):
                    stem = npy.name.split(".")[0]
                    truth = cv2.imread(str(folder / f"{stem}.depth.png"), cv2.IMREAD_UNCHANGED)
                    if truth is not None:
                        errors.append(abs(scale_error(np.load(npy), np.where(
                            truth > 0, truth.astype(np.float32) / 1000, np.nan))))
    row = {"frames_per_s": round(frames / seconds, 2)}
    if motion:
        row.update(in_metres=len(errors),
                   median_error=round(float(np.median(errors)), 4) if errors else None,
                   worst_error=round(float(max(errors)), 4) if errors else None)
    return row


def table(results: dict) -> list[str]:
    """The markdown rows: per network, the node and ``process`` with and without motion."""
    lines = ["| network | run | frames/s | latency p50 / p95 (ms) | with / without | "
             "in metres | scale error median (worst) |", "|---|---|---|---|---|---|---|"]
    for net, runs in results.items():
        for where in ("node", "process"):
            on, off = runs[f"{where} motion"], runs[f"{where} none"]
            ratio = on["frames_per_s"] / off["frames_per_s"] if off["frames_per_s"] else 0
            lat = "-" if where == "process" else \
                f"{on['latency_p50_ms']} / {on['latency_p95_ms']} (without: " \
                f"{off['latency_p50_ms']} / {off['latency_p95_ms']})"
            err = "-" if on.get("median_error") is None else \
                f"{100 * on['median_error']:.1f} % ({100 * on['worst_error']:.1f} %)"
            lines.append(f"| {net} | {where} | {on['frames_per_s']} (without: "
                         f"{off['frames_per_s']}) | {lat} | {ratio:.2f}x | "
                         f"{on.get('in_metres', '-')} | {err} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", metavar="PATH", help="also write the figures here")
    parser.add_argument("--networks", default=",".join(NETWORKS))
    args = parser.parse_args(argv)
    missing = [p for p in (SFM, *NETWORKS.values()) if not Path(p).exists()]
    if missing:
        print(f"motion bench: skipped: {missing[0]} is absent (../shared/real-scenes)")
        return 0
    images, truths, poses, calibration = scene()
    results: dict[str, dict] = {}
    for net in args.networks.split(","):
        model = NETWORKS[net]
        runs = results.setdefault(net, {})
        for motion in (False, True):  # paired: the two node runs, then the two offline
            runs[f"node {'motion' if motion else 'none'}"] = node_run(
                model, motion, images, truths, poses, calibration)
        for motion in (False, True):
            runs[f"process {'motion' if motion else 'none'}"] = offline_run(model, motion)
    print("\n".join(table(results)))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
