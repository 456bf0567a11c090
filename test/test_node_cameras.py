# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Several cameras, one model (``cameras``), over real DDS: each camera's outputs come under its
prefix with its own stamps, frame_id and intrinsics, and the cameras share the model fairly
(round robin), also when one camera publishes much faster than the other."""

from __future__ import annotations

import threading
from collections import defaultdict

import numpy as np
import pytest

pytest.importorskip("rclpy")

import rclpy  # noqa: E402
from support.common import DA3_TEST_MODEL, GRAPH_TIMEOUT, TIPS_TEST_MODEL  # noqa: E402
from support.common import SlowRunner  # noqa: E402
from rclpy.qos import QoSProfile  # noqa: E402
from support.ros_harness import camera_info, wait_until  # noqa: E402
from sensor_msgs.msg import CameraInfo, Image  # noqa: E402

from dense_perception.core.settings.table import PARAMS_BY_NAME  # noqa: E402
from tools.common.ros_client import ScenePlayer, decode_status  # noqa: E402

pytestmark = pytest.mark.ros

# Two cameras that differ in everything the outputs must carry through.
CAMERAS = {
    "front": dict(size=(640, 360), fx=400.0, frame_id="front_optical_frame"),
    "rear": dict(size=(480, 360), fx=300.0, frame_id="rear_optical_frame"),
}


class Recorder:
    """Records the messages of some topics (thread-safe; the client executor calls it)."""

    def __init__(self, node, topics: dict[str, type]) -> None:
        self.msgs: dict[str, list] = defaultdict(list)
        self._lock = threading.Lock()
        self.subs = [node.create_subscription(t, name, lambda m, n=name: self._add(n, m),
                                              QoSProfile(depth=50))
                     for name, t in topics.items()]

    def _add(self, topic: str, msg) -> None:
        with self._lock:
            self.msgs[topic].append(msg)

    def count(self, topic: str) -> int:
        with self._lock:
            return len(self.msgs[topic])

    def get(self, topic: str) -> list:
        with self._lock:
            return list(self.msgs[topic])


def camera_player(h, name: str, fps: float, sent: dict[str, set]) -> ScenePlayer:
    """A camera driver stand-in in namespace ``/name``: its ``image`` is ``/name/image``."""
    spec = CAMERAS[name]
    node = rclpy.create_node(f"driver_{name}", namespace=f"/{name}", context=h.context)
    width, height = spec["size"]
    frame = np.full((height, width, 3), 120, np.uint8)

    def on_sent(header, name=name):
        header.frame_id = spec["frame_id"]
        sent[name].add((header.stamp.sec, header.stamp.nanosec))
    return ScenePlayer(node, fps=fps, frame=frame, size=spec["size"],
                       info=camera_info(width, height, fx=spec["fx"]), on_sent=on_sent)


def wait_cameras_subscribed(players: dict[str, ScenePlayer]) -> None:
    wait_until(lambda: all(p.image_pub.get_subscription_count() > 0
                           and p.info_pub.get_subscription_count() > 0
                           for p in players.values()), GRAPH_TIMEOUT,
               "the node subscribes to both cameras")


def test_cameras_parameter_is_listed_and_checked():
    """The parameter table has it (read-only: no runtime flag) and refuses bad names."""
    spec = PARAMS_BY_NAME["cameras"]
    assert not spec.runtime
    assert spec.problem(["front", "rear"]) is None
    assert spec.problem([""]) is None  # the default: one camera, no prefix
    assert "twice" in spec.problem(["front", "front"])
    assert "not a relative topic name" in spec.problem(["/front"])


def test_two_cameras_own_stamps_frames_intrinsics_and_fair_share(harness_factory):
    h = harness_factory({"model_path": TIPS_TEST_MODEL, "cameras": ["front", "rear"],
                         "output_resolution": "input"}, subscribe=("/diagnostics",))
    topics = {f"{c}/{t}": m for c in CAMERAS
              for t, m in (("depth/image", Image), ("depth/camera_info", CameraInfo))}
    rec = Recorder(h.client, topics)
    sent: dict[str, set] = defaultdict(set)
    players = {name: camera_player(h, name, 10.0, sent) for name in CAMERAS}
    wait_cameras_subscribed(players)
    for player in players.values():
        player.start()
    try:
        wait_until(lambda: all(rec.count(f"{c}/depth/camera_info") >= 8 for c in CAMERAS), 60,
                   "8 outputs from each camera")
    finally:
        for player in players.values():
            player.stop()
    for name, spec in CAMERAS.items():
        width, height = spec["size"]
        depths = rec.get(f"{name}/depth/image")
        infos = rec.get(f"{name}/depth/camera_info")
        for msg in depths + infos:
            # its own frame_id and a stamp this camera sent (never the other camera's)
            assert msg.header.frame_id == spec["frame_id"]
            assert (msg.header.stamp.sec, msg.header.stamp.nanosec) in sent[name]
        for depth in depths:
            assert (depth.width, depth.height) == (width, height)
        for info in infos:
            # output_resolution: input, no distortion: the camera's own K, written out here
            np.testing.assert_allclose(
                info.k, [spec["fx"], 0, (width - 1) / 2, 0, spec["fx"], (height - 1) / 2,
                         0, 0, 1], rtol=1e-6)
    n_front, n_rear = (rec.count(f"{c}/depth/camera_info") for c in CAMERAS)
    assert min(n_front, n_rear) >= 0.6 * max(n_front, n_rear), (n_front, n_rear)
    # one status per camera, named after it, plus the shared model's
    node = h.node.get_fully_qualified_name()
    for name in CAMERAS:
        entry = _status(h, f"{node}: {name}")
        assert entry[2]["camera model"] != "-"
        assert float(entry[2]["input rate (Hz)"]) > 0
        assert int(entry[2]["frames processed"]) > 0
    model = _status(h, f"{node}: model")[2]
    shares = [float(model[f"share of model time: {c}"]) for c in CAMERAS]
    assert sum(shares) == pytest.approx(1.0, abs=0.02) and min(shares) > 0.2


def _status(h, name: str, timeout: float = 10.0):
    """The newest /diagnostics status called ``name`` (level, message, values)."""
    def found():
        return [s for m in list(h.received["/diagnostics"]) for s in m.status if s.name == name]
    wait_until(lambda: bool(found()), timeout, f"a status named {name}")
    return decode_status(found()[-1])


def test_fast_camera_does_not_starve_slow_one(harness_factory):
    """The model is the bottleneck (100 ms a frame, 10 Hz for both cameras together); front
    sends 30 fps and rear 10. Newest-wins through one slot would give rear about a quarter of
    the model (10 of 40 frames/s); taking turns gives each about half."""
    h = harness_factory({"model_path": DA3_TEST_MODEL, "cameras": ["front", "rear"]},
                        runner_hook=lambda r: SlowRunner(r, delay=0.1), subscribe=())
    rec = Recorder(h.client, {f"{c}/depth/image": Image for c in CAMERAS})
    sent: dict[str, set] = defaultdict(set)
    players = {"front": camera_player(h, "front", 30.0, sent),
               "rear": camera_player(h, "rear", 10.0, sent)}
    wait_cameras_subscribed(players)
    for player in players.values():
        player.start()
    try:
        wait_until(lambda: rec.count("front/depth/image") + rec.count("rear/depth/image")
                   >= 30, 60, "30 outputs")
    finally:
        for player in players.values():
            player.stop()
    n_front, n_rear = rec.count("front/depth/image"), rec.count("rear/depth/image")
    assert min(n_front, n_rear) >= 0.6 * max(n_front, n_rear), (n_front, n_rear)


def test_lazy_per_camera(harness_factory):
    """Only rear's outputs are read: the node subscribes to rear's camera, not front's."""
    h = harness_factory({"model_path": DA3_TEST_MODEL, "cameras": ["front", "rear"]},
                        subscribe=())
    rec = Recorder(h.client, {"rear/depth/image": Image})
    sent: dict[str, set] = defaultdict(set)
    players = {name: camera_player(h, name, 10.0, sent) for name in CAMERAS}
    wait_until(lambda: players["rear"].image_pub.get_subscription_count() > 0, GRAPH_TIMEOUT,
               "rear subscribed")
    for player in players.values():
        player.start()
    try:
        wait_until(lambda: rec.count("rear/depth/image") >= 3, 30, "rear outputs")
    finally:
        for player in players.values():
            player.stop()
    assert players["front"].image_pub.get_subscription_count() == 0
    assert h.perception.channels[0].in_rate.total == 0  # front: not one frame received


def test_two_cameras_yaml_gives_each_camera_its_own_metric_scale(harness_factory):
    """The README's command: depth.yaml then config/two_cameras.yaml, each camera's topics
    remapped from /<camera>/image_raw. Both cameras see the same floor scene painted at one
    relative scale; two_cameras.yaml says front is 0.45 m up and rear 0.60 m, so each camera's
    own ground-plane filter gives depth = true depth x (its height / the scene's height)."""
    from functools import partial

    from support.common import REPO
    from tools.common.metric_scene import FORWARD, paint

    from dense_perception.core.conversions import image_msg_to_array
    from dense_perception.ros.node import DensePerceptionNode
    cli = ["--ros-args", "--params-file", str(REPO / "config" / "depth.yaml"),
           "--params-file", str(REPO / "config" / "two_cameras.yaml")]
    for camera in CAMERAS:
        cli += ["-r", f"{camera}/image:=/{camera}/image_raw",
                "-r", f"{camera}/camera_info:=/{camera}/camera_info"]
    h = harness_factory({"model_path": DA3_TEST_MODEL},
                        node_class=partial(DensePerceptionNode, cli_args=cli), subscribe=())
    assert h.node.get_parameter("cameras").value == ["front", "rear"]
    heights = dict(zip(CAMERAS, h.node.get_parameter("camera_heights").value))
    assert heights == {"front": 0.45, "rear": 0.60}
    rec = Recorder(h.client, {f"{c}/depth/image": Image for c in CAMERAS})
    z, _ = FORWARD.depth_and_surface()
    frame = paint(z / 0.75)
    height_px, width_px = frame.shape[:2]
    info = camera_info(width_px, height_px, fx=FORWARD.fx)
    drivers = {}
    for camera in CAMERAS:  # a driver publishing /<camera>/image_raw, /<camera>/camera_info
        node = rclpy.create_node(f"driver_{camera}", namespace=f"/{camera}", context=h.context,
                                 cli_args=["--ros-args", "-r", "image:=image_raw"])
        drivers[camera] = ScenePlayer(node, reliable=True)
    wait_cameras_subscribed(drivers)
    for index, camera in enumerate(CAMERAS):
        header = drivers[camera].header(frame_id=CAMERAS[camera]["frame_id"], sec=10 + index)
        info.header = header
        channel = h.perception.channels[index]

        def held(c=channel, pub=drivers[camera].info_pub) -> bool:
            # published again until held: the node may still be re-subscribing to match the
            # driver's reliable QoS (input_qos: auto), and a sample sent meanwhile is lost
            pub.publish(info)
            return len(c.camera_infos) > 0
        wait_until(held, 10, f"{camera}'s CameraInfo")
        drivers[camera].publish_frame(frame, header)
    wait_until(lambda: all(rec.count(f"{c}/depth/image") for c in CAMERAS), 30,
               "depth from each camera")
    for camera in CAMERAS:
        msg = rec.get(f"{camera}/depth/image")[0]
        assert msg.header.frame_id == CAMERAS[camera]["frame_id"]
        depth = image_msg_to_array(msg)
        expected = z * heights[camera] / FORWARD.height
        assert np.abs(depth / expected - 1).max() < 0.03, camera


@pytest.mark.parametrize("params,expected", [
    ({"cameras": ["front", "rear"], "camera_heights": [1.0]}, "camera_heights has 1 values"),
    ({"cameras": ["front", "rear"], "camera_heights": [1.0, 0.0]}, "needs camera_height"),
    ({"cameras": ["front", "front"]}, "listed twice"),
    # the shared model's status is '<node>: model': a camera of that name would share it
    ({"cameras": ["front", "model"]}, "'model' is the name of the shared model's diagnostics"),
])
def test_startup_refuses_bad_camera_settings(params, expected):
    """One line saying what is wrong (StartupError) for a camera list the node cannot run."""
    from rclpy.parameter import Parameter

    from dense_perception.ros.node import DensePerceptionNode, StartupError
    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        overrides = [Parameter(k, value=v) for k, v in {
            "model_path": DA3_TEST_MODEL, "backend": "cpu",
            "depth_scale_source": "ground_plane", "camera_height": 0.0, **params}.items()]
        with pytest.raises(StartupError, match=expected):
            DensePerceptionNode(context=context, parameter_overrides=overrides)
    finally:
        rclpy.shutdown(context=context)


def test_empty_camera_list_is_the_single_camera(tmp_path):
    """cameras: [] in a YAML file or -p cameras:=[] (an untyped empty list in ROS 2) is the
    single camera on image and camera_info, as the default [""] is."""
    from dense_perception.ros.node import DensePerceptionNode
    params = tmp_path / "empty.yaml"
    params.write_text("/**/dense_perception:\n  ros__parameters:\n"
                      "    cameras: []\n    camera_heights: []\n")
    for cli in (["--params-file", str(params)], ["-p", "cameras:=[]", "-p", "camera_heights:=[]"]):
        context = rclpy.Context()
        rclpy.init(context=context)
        try:
            node = DensePerceptionNode(context=context, cli_args=[
                "--ros-args", *cli, "-p", f"model_path:={DA3_TEST_MODEL}", "-p", "backend:=cpu"])
            try:
                assert [c.name for c in node.perception.channels] == [""]
                subs = {name for name, _ in node.get_topic_names_and_types()}
                assert "/depth/image" in subs and "/front/depth/image" not in subs
            finally:
                node.stop()
                node.destroy_node()
        finally:
            rclpy.shutdown(context=context)


def test_camera_heights_are_set_at_runtime_and_camera_height_is_refused_while_set(
        harness_factory):
    """With camera_heights set, a change of camera_height would be ignored: it is refused with
    the reason. camera_heights itself is runtime: each camera's ground-plane filter takes its
    new height from the next frame (depth = true depth x its height / the scene's height)."""
    from rclpy.parameter import Parameter
    from tools.common.metric_scene import FORWARD, paint

    from dense_perception.core.conversions import image_msg_to_array
    h = harness_factory({"model_path": DA3_TEST_MODEL, "cameras": list(CAMERAS),
                         "camera_heights": [0.45, 0.60], "depth_scale_source": "ground_plane"},
                        subscribe=())
    result = h.node.set_parameters([Parameter("camera_height", value=2.4)])[0]
    assert not result.successful
    assert "camera_height is not used while camera_heights is set" in result.reason
    assert h.node.get_parameter("camera_height").value == 0.0
    # its own value again changes nothing: accepted (ros2 param load of the same YAML)
    assert h.node.set_parameters([Parameter("camera_height", value=0.0)])[0].successful
    result = h.node.set_parameters([Parameter("camera_heights", value=[0.9])])[0]
    assert not result.successful and "1 values for 2 cameras" in result.reason

    rec = Recorder(h.client, {f"{c}/depth/image": Image for c in CAMERAS})
    z, _ = FORWARD.depth_and_surface()
    frame = paint(z / 0.75)
    info = camera_info(frame.shape[1], frame.shape[0], fx=FORWARD.fx)
    drivers = {c: ScenePlayer(rclpy.create_node(f"driver_{c}", namespace=f"/{c}",
                                                context=h.context), reliable=True)
               for c in CAMERAS}
    wait_cameras_subscribed(drivers)

    def depth_of_each_camera(sec):
        for index, camera in enumerate(CAMERAS):
            header = drivers[camera].header(frame_id=CAMERAS[camera]["frame_id"], sec=sec)
            info.header = header
            channel = h.perception.channels[index]

            def held(c=channel, pub=drivers[camera].info_pub) -> bool:
                pub.publish(info)  # again until held (the node may re-subscribe meanwhile)
                return len(c.camera_infos) > 0
            wait_until(held, 10, f"{camera}'s CameraInfo")
            drivers[camera].publish_frame(frame, header)
        found = {}
        for camera in CAMERAS:
            wait_until(lambda c=camera: any(m.header.stamp.sec == sec
                                            for m in rec.get(f"{c}/depth/image")), 30,
                       f"{camera}'s depth of frame {sec}")
            msg = next(m for m in rec.get(f"{camera}/depth/image") if m.header.stamp.sec == sec)
            found[camera] = image_msg_to_array(msg)
        return found

    for sec, heights in ((10, [0.45, 0.60]), (20, [0.9, 1.5])):
        if sec == 20:
            result = h.node.set_parameters([Parameter("camera_heights", value=heights)])[0]
            assert result.successful, result.reason
        for camera, depth in depth_of_each_camera(sec).items():
            expected = z * dict(zip(CAMERAS, heights))[camera] / FORWARD.height
            assert np.abs(depth / expected - 1).max() < 0.03, (camera, sec)


@pytest.mark.timeout(120)
def test_a_healthy_ring_of_cameras_is_not_a_stall(harness_factory):
    """Eight cameras on one model of 0.3 s a frame, every camera served in turn: a camera's
    output comes every ~8 model frame times, which is its turn in the round robin, not a stall
    (the model's own 5 frame times would call it one). No status says stalled while every
    camera keeps getting outputs."""
    names = [f"cam{i}" for i in range(8)]
    h = harness_factory({"model_path": DA3_TEST_MODEL, "cameras": names,
                         "diagnostics_period": 0.2},
                        runner_hook=lambda r: SlowRunner(r, delay=0.3),
                        subscribe=("/diagnostics",))
    rec = Recorder(h.client, {f"{c}/depth/image": Image for c in names})
    frame = np.full((48, 64, 3), 120, np.uint8)
    players = {c: ScenePlayer(rclpy.create_node(f"driver_{c}", namespace=f"/{c}",
                                                context=h.context),
                              fps=5.0, frame=frame, size=(64, 48), info=camera_info(64, 48))
               for c in names}
    wait_cameras_subscribed(players)
    for player in players.values():
        player.start()
    node = h.node.get_fully_qualified_name()
    try:
        wait_until(lambda: all(rec.count(f"{c}/depth/image") >= 1 for c in names), 60,
                   "an output from every camera")
        start = {c: rec.count(f"{c}/depth/image") for c in names}
        seen = len(h.received["/diagnostics"])
        # three turns of the ring for every camera
        wait_until(lambda: all(rec.count(f"{c}/depth/image") >= start[c] + 3 for c in names),
                   60, "three more outputs from every camera")
    finally:
        for player in players.values():
            player.stop()
    statuses = [decode_status(s) for m in list(h.received["/diagnostics"])[seen:]
                for s in m.status if s.name.startswith(f"{node}: cam")]
    assert len(statuses) >= 8 * 20  # about 8 s of 0.2 s periods, each camera
    stalled = [(level, message) for level, message, _ in statuses if "stalled" in message]
    assert not stalled, f"{len(stalled)} of {len(statuses)}: {stalled[:3]}"
    assert all(level == 0 for level, _, _ in statuses), \
        {message for level, message, _ in statuses if level}
