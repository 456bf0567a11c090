# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""End-to-end demo: run the real node on a sample scene and save everything it publishes.

``python -m tools.demo.run [--model PATH] [--out demo_out] [--frames 3]``

For each bundled test model (or only ``--model``), the node runs as its own process in the
``/demo`` namespace; this process plays a generated 1280x720 scene with a matching CameraInfo at
about 5 Hz, subscribes to every output the model provides until it has ``--frames`` of each, and
writes them to ``<out>/<model stem>/``: PNGs (depth colourised, plus raw float32 ``.npy``),
``points.ply``, ``classes.json``, ``input.png`` and ``node.log``. The node's last diagnostics are
printed as a table. Exit status 0 on success; otherwise one line says what failed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile
from sensor_msgs.msg import Image, PointCloud2
from std_msgs.msg import Header, String

from dense_perception.core import postprocess as post
from dense_perception.core.conversions import cloud_to_points, image_msg_to_array, image_to_array
from dense_perception.core.products import OUTPUT_GROUPS, OUTPUTS, available_groups
from dense_perception.offline.inputs.file_io import write_ply
from dense_perception.ros.messages import MESSAGE_CLASSES, intrinsics_to_camera_info
from dense_perception.core.model.specs import ModelSignatureError, ModelSpec
from dense_perception.core.model.detection import detect_model_spec
from dense_perception.core.backends.runner import ModelLoadError, check_model_file, resolve_model_path
from tools.common.node_process import NodeProcess
from tools.common.ros_client import FRAME_ID, LEVEL_NAMES, ScenePlayer, decode_status, node_status
from tools.common.scene import make_sample_scene, scene_intrinsics

REPO_MODELS = Path(__file__).resolve().parents[2] / "models"
TEST_MODELS = ("test_da3_small.tflite", "test_tipsv2_b14_dpt.tflite")
NAMESPACE = "/demo"
PLAY_HZ = 5.0
DEFAULT_DOMAIN_ID = "61"  # the Makefile's default; the caller's ROS_DOMAIN_ID wins
STOP_TIMEOUT_S = 5.0
DIAGNOSTICS_NAME = f"{NAMESPACE}/dense_perception"  # the node's fully qualified name
CLASSES_TOPIC = "segmentation/classes"

class DemoError(RuntimeError):
    """The demo failed; the message is the one line printed."""


# ---- message -> files ---------------------------------------------------------------------------
def image_for_png(msg: Image) -> np.ndarray:
    """What cv2.imwrite should get for ``msg``: BGR for colour, 8-bit grey for mono8."""
    if msg.encoding == "32FC1":
        return post.colorize_depth(image_msg_to_array(msg))  # already bgr8
    if msg.encoding == "32FC3":
        return cv2.cvtColor(post.colorize_normals(image_msg_to_array(msg)), cv2.COLOR_RGB2BGR)
    pixels = image_to_array(msg)
    if msg.encoding == "rgb8":
        return cv2.cvtColor(pixels, cv2.COLOR_RGB2BGR)
    if msg.encoding in ("bgr8", "mono8"):
        return np.ascontiguousarray(pixels)
    raise DemoError(f"cannot save an image with encoding '{msg.encoding}'")


def diagnostics_table(msg: DiagnosticArray) -> str:
    """The node's DiagnosticStatus as level, message and an aligned key | value table."""
    status = node_status(msg, DIAGNOSTICS_NAME)
    level, message, values = decode_status(status)
    rows = list(values.items())
    width = max((len(k) for k, _ in rows), default=3)
    lines = [f"diagnostics: {status.name} (hardware_id {status.hardware_id})",
             f"  level: {LEVEL_NAMES.get(level, str(level))}",
             f"  message: {message}", f"  {'key'.ljust(width)} | value",
             f"  {'-' * width}-+-{'-' * 30}"]
    lines += [f"  {k.ljust(width)} | {v}" for k, v in rows]
    return "\n".join(lines)


# ---- the client node: plays the scene, records the outputs -------------------------------------
@dataclass
class Recording:
    """Everything received from the node under test."""

    counts: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    last: dict[str, Any] = field(default_factory=dict)
    bad_headers: list[str] = field(default_factory=list)
    diagnostics: DiagnosticArray | None = None
    diagnostics_count: int = 0


class DemoClient(Node):
    """Publishes the scene + CameraInfo at PLAY_HZ and records every output of the node."""

    def __init__(self, context: rclpy.Context, topics: dict[str, type], want_classes: bool,
                 scene: np.ndarray) -> None:
        super().__init__("dense_perception_demo", namespace=NAMESPACE, context=context)
        self.recording = Recording()
        self._sent_stamps: set[tuple[int, int]] = set()
        height, width = scene.shape[:2]
        self.player = ScenePlayer(self, fps=PLAY_HZ, frame=scene,
                                  info=intrinsics_to_camera_info(scene_intrinsics(width, height),
                                                                 Header()),
                                  on_sent=self._on_sent)
        for topic, msg_type in topics.items():
            self.create_subscription(msg_type, topic,
                                     lambda msg, t=topic: self._on_output(t, msg), 10)
        if want_classes:
            latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
            self.create_subscription(String, CLASSES_TOPIC,
                                     lambda msg: self._record(CLASSES_TOPIC, msg), latched)
        self.create_subscription(DiagnosticArray, "/diagnostics", self._on_diagnostics, 10)

    def _on_sent(self, header: Header) -> None:
        self._sent_stamps.add((header.stamp.sec, header.stamp.nanosec))

    def _on_output(self, topic: str, msg: Any) -> None:
        stamp = (msg.header.stamp.sec, msg.header.stamp.nanosec)
        if msg.header.frame_id != FRAME_ID or stamp not in self._sent_stamps:
            self.recording.bad_headers.append(
                f"{topic}: header frame_id '{msg.header.frame_id}' stamp {stamp[0]}.{stamp[1]:09d}"
                " matches no played frame")
        self._record(topic, msg)

    def _record(self, topic: str, msg: Any) -> None:
        self.recording.counts[topic] += 1
        self.recording.last[topic] = msg

    def _on_diagnostics(self, msg: DiagnosticArray) -> None:
        if node_status(msg, DIAGNOSTICS_NAME) is not None:
            self.recording.diagnostics = msg
            self.recording.diagnostics_count += 1


# ---- one model -------------------------------------------------------------------------------
@dataclass
class DemoResult:
    """What one model's run produced."""

    model: Path
    out_dir: Path
    saved: list[str]
    counts: dict[str, int]
    seconds: float
    diagnostics: str


def model_spec(model: Path) -> ModelSpec:
    """The supported model ``model`` is (from its signature); DemoError if none."""
    try:
        sig = check_model_file(str(model))
        return detect_model_spec(sig.input_shapes, sig.output_shapes, source=str(model),
                                 file=sig)
    except (ModelLoadError, ModelSignatureError) as exc:
        raise DemoError(str(exc)) from None


def expected_topics(spec: ModelSpec) -> dict[str, type]:
    """Every output topic the node publishes for ``spec`` (segmentation/classes excluded)."""
    return {OUTPUTS[key][0]: MESSAGE_CLASSES[OUTPUTS[key][1]]
            for group in available_groups(spec) for key in OUTPUT_GROUPS[group].products
            if key != "classes"}


def configure_dds() -> None:
    """Keep DDS on this machine and on one domain for this process and the node subprocess:
    ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST and ROS_DOMAIN_ID=61 unless the caller set them."""
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    os.environ.setdefault("ROS_DOMAIN_ID", DEFAULT_DOMAIN_ID)


def start_node(model: Path, log_path: Path) -> NodeProcess:
    """Start the real node in NAMESPACE; its stdout and stderr go to ``log_path``."""
    # DA3's depth is relative: the demo asserts 1 m per unit (depth_scale_source: fixed; the
    # diagnostics say "asserted") so that its points are published too. Metric models ignore it.
    return NodeProcess(["-p", f"model_path:={model}", "-p", "backend:=auto",
                        "-p", "depth_scale_source:=fixed", "-r", f"__ns:={NAMESPACE}"],
                       log_path=log_path).start()


def stop_node(node: NodeProcess) -> None:
    """SIGINT the node and require a clean exit (0) within STOP_TIMEOUT_S."""
    code, in_time = node.stop(timeout=STOP_TIMEOUT_S)
    if not in_time:
        raise DemoError(f"the node did not exit within {STOP_TIMEOUT_S:.0f} s of SIGINT "
                        f"(killed; see {node.log_path})")
    if code != 0:
        raise DemoError(f"the node exited with {code} after SIGINT: {node.last_line()}")


def collect(client: DemoClient, executor: SingleThreadedExecutor, node: NodeProcess,
            topics: list[str], frames: int, timeout: float) -> None:
    """Spin until every topic has ``frames`` messages (classes: 1) and fresh diagnostics."""
    rec = client.recording
    deadline = time.monotonic() + timeout

    def missing() -> list[str]:
        need = {t: (1 if t == CLASSES_TOPIC else frames) for t in topics}
        return [f"{t} ({rec.counts[t]}/{n})" for t, n in need.items() if rec.counts[t] < n]

    while missing():
        executor.spin_once(timeout_sec=0.05)
        if not node.alive():
            raise DemoError(f"the node exited with {node.proc.returncode}: {node.last_line()}")
        if time.monotonic() > deadline:
            raise DemoError(f"timed out after {timeout:.0f} s; missing: {', '.join(missing())} "
                            f"(node log: {node.log_path})")
    # Diagnostics come once a second: wait for one that covers the frames just received.
    seen = rec.diagnostics_count
    until = time.monotonic() + 3.0
    while rec.diagnostics_count == seen and time.monotonic() < until:
        executor.spin_once(timeout_sec=0.05)
    if rec.diagnostics is None:
        raise DemoError("no /diagnostics from the node")
    if rec.bad_headers:
        raise DemoError(rec.bad_headers[0])


def save_outputs(rec: Recording, scene: np.ndarray, out_dir: Path) -> list[str]:
    """Write the scene and the last message of every topic; return the file names."""
    out_dir.mkdir(parents=True, exist_ok=True)
    saved = []

    def write_png(name: str, image: np.ndarray) -> None:
        if not cv2.imwrite(str(out_dir / name), image):
            raise DemoError(f"could not write {out_dir / name}")
        saved.append(name)

    write_png("input.png", cv2.cvtColor(scene, cv2.COLOR_RGB2BGR))
    for topic, msg in sorted(rec.last.items()):
        stem = topic.replace("/", "_")
        if isinstance(msg, Image):
            write_png(f"{stem}.png", image_for_png(msg))
            if msg.encoding == "32FC1":  # the PNG is a colour view: keep the values too
                np.save(out_dir / f"{stem}.npy", image_msg_to_array(msg))
                saved.append(f"{stem}.npy")
        elif isinstance(msg, PointCloud2):
            n = write_ply(out_dir / f"{stem}.ply", cloud_to_points(msg))
            saved.append(f"{stem}.ply ({n} points)")
        elif isinstance(msg, String):
            classes = json.loads(msg.data)
            (out_dir / "classes.json").write_text(json.dumps(classes, indent=1) + "\n")
            saved.append(f"classes.json ({len(classes)} classes)")
    return saved


def run_model(model: Path, out_root: Path, frames: int, timeout: float) -> DemoResult:
    """Run the node on ``model``, collect its outputs and save them."""
    spec = model_spec(model)
    out_dir = out_root / model.stem
    out_dir.mkdir(parents=True, exist_ok=True)
    log_path = out_dir / "node.log"
    topics = expected_topics(spec)
    has_classes = spec.output_index("segmentation_logits") is not None
    scene = make_sample_scene()
    started = time.monotonic()
    configure_dds()
    context = rclpy.Context()
    rclpy.init(context=context)
    node = start_node(model, log_path)
    client = DemoClient(context, topics, has_classes, scene)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(client)
    try:
        wanted = list(topics) + ([CLASSES_TOPIC] if has_classes else [])
        client.player.start()
        collect(client, executor, node, wanted, frames, timeout)
    finally:
        client.player.stop()
        try:
            stop_node(node)
        finally:
            executor.shutdown(timeout_sec=1.0)
            client.destroy_node()
            rclpy.try_shutdown(context=context)
    rec = client.recording
    saved = save_outputs(rec, scene, out_dir) + ["node.log"]
    return DemoResult(model, out_dir, saved, dict(rec.counts), time.monotonic() - started,
                      diagnostics_table(rec.diagnostics))


def print_result(result: DemoResult) -> None:
    """Summary of one model's run: diagnostics, message counts, files."""
    print(result.diagnostics)
    print(f"received ({result.seconds:.1f} s): " + ", ".join(
        f"{t}={n}" for t, n in sorted(result.counts.items())))
    print(f"saved in {result.out_dir}/: " + ", ".join(result.saved))


# ---- entry point -----------------------------------------------------------------------------
def default_models() -> list[Path]:
    """The bundled test models."""
    return [REPO_MODELS / name for name in TEST_MODELS]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", help="a .tflite file (default: both bundled test models)")
    parser.add_argument("--out", default="demo_out", help="output folder (default: demo_out)")
    parser.add_argument("--frames", type=int, default=3,
                        help="messages to receive on every output topic (default: 3)")
    parser.add_argument("--timeout", type=float, default=60.0,
                        help="seconds per model, node start-up included (default: 60)")
    args = parser.parse_args(argv)
    if args.frames < 1:
        parser.error("--frames must be >= 1")
    return args


def main(argv: list[str] | None = None) -> int:
    """Run the demo; 0 on success, 1 with a one-line reason on failure."""
    args = parse_args(argv)
    configure_dds()
    models = [Path(resolve_model_path(args.model))] if args.model else default_models()
    try:
        for model in models:
            print(f"== {model.name} (ROS_DOMAIN_ID={os.environ['ROS_DOMAIN_ID']}, "
                  f"namespace {NAMESPACE})", flush=True)
            print_result(run_model(model, Path(args.out), args.frames, args.timeout))
    except DemoError as exc:
        print(f"demo failed: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("demo failed: interrupted", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
