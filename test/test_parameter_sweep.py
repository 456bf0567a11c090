# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Every setting of the table, over real rclpy (the SetParameters service, called from a client
node): each one the node takes at runtime changes what it says on the next frame (its outputs or
its diagnostics), and each one it does not take is refused with a reason. The
runtime list is derived from the table, so a new runtime setting fails here until its effect is
checked. (The offline flags: test_settings.py.)"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

pytest.importorskip("rclpy")

from rclpy.parameter import Parameter  # noqa: E402
from rclpy.parameter_client import AsyncParameterClient  # noqa: E402
from rclpy.qos import qos_profile_sensor_data  # noqa: E402
from sensor_msgs.msg import CameraInfo, CompressedImage, Image  # noqa: E402
from support.common import DA3_CONFIDENCE_TEST_MODEL, DA3_TEST_MODEL  # noqa: E402
from support.ros_harness import camera_info, wait_until  # noqa: E402
from support.setting_values import other_value  # noqa: E402
from tools.common.metric_scene import PITCHED_WITH_BOX, paint  # noqa: E402

from dense_perception.core.geometry.camera_info_choice import MATCHED, stamp_ns  # noqa: E402
from dense_perception.core.settings.table import PARAMS  # noqa: E402
from dense_perception.ros.messages import array_to_image  # noqa: E402

pytestmark = [pytest.mark.ros, pytest.mark.timeout(180)]

# The runtime settings by how their effect is seen: {name: (value set, settings held meanwhile
# so the effect can show)}.
OUTPUTS = {  # the next frame's depth/image, depth/camera_info and points (DA3, fixed scale)
    "fit": ("stretch", {}), "output_resolution": ("input", {}),
    "relative_depth_scale": (2.0, {}), "max_depth": (2.6, {}),
    "points_min_confidence": (0.5, {}), "points_rgb": (False, {}), "points_stride": (4, {}),
    "points_organized": (True, {}), "input_rectified": (True, {}),
    "depth_encoding": ("16UC1", {}), "points_voxel_size": (0.2, {}),
}
WIRE = {  # the next frame's compressed depth and depth view (image_transport's formats)
    "jpeg_quality": (20, {}), "png_level": (0, {}), "compressed_depth_max": (3.0, {}),
    "compressed_depth_quantization": (20.0, {}),
}
CAMERA_INFO = {  # depth/camera_info of a frame whose only CameraInfo is stamped 30 ms after it
    "camera_info_slop": (0.0, {}),
    "fallback_hfov_deg": (90.0, {"camera_info_slop": 0.0}),  # a guess is what it shapes
}
GROUND_PLANE = {  # the scale diagnostics after the next frame (depth_scale_source ground_plane)
    "camera_height": (1.2, {}), "camera_heights": ([1.2], {}),
    "ground_max_tilt_deg": (10.0, {}),  # the scene's camera is pitched 20 deg
    "depth_scale_min_inliers": (0.99, {}),
    "depth_scale_time_constant": (1.0, {}), "depth_scale_max_age": (5.0, {}),
}
REFERENCE = {  # the scale diagnostics after a frame whose reference is stamped 30 ms off
    "reference_depth_slop": (0.01, {}),
}
ODOMETRY = {  # whether a frame in a 1 s gap of the odometry, one 0.3 s before it, and one past
    # it whose next message comes while it may wait, get a pose
    "odometry_max_gap": (2.0, {}), "odometry_tolerance": (0.6, {}), "odometry_wait": (0.0, {}),
}
MOTION_SCALE = {  # the motion scale's note on a still camera's next frame (DA3)
    "motion_scale_min_baseline": (0.2, {}),
}
ALIGNMENT = {  # the temporal alignment of a moving camera's next frame (TIPSv2, metric)
    "temporal_alignment": (False, {}), "temporal_max_translation": (0.1, {}),
}
SCALE_KEYS = ("depth units", "depth scale (m per unit)", "depth scale, this frame",
              "depth scale note", "depth scale filter")
W, H = 640, 480


def test_every_runtime_setting_has_its_effect_checked():
    groups = [OUTPUTS, WIRE, CAMERA_INFO, GROUND_PLANE, REFERENCE, ODOMETRY,
              MOTION_SCALE, ALIGNMENT]
    assert sum(len(g) for g in groups) == len({n for g in groups for n in g})
    assert {n for g in groups for n in g} == {p.name for p in PARAMS if p.runtime}


class Params:
    """The node's SetParameters service, called from the client node (as ``ros2 param set``)."""

    def __init__(self, h) -> None:
        self.h = h
        self.client = AsyncParameterClient(h.client, h.node.get_fully_qualified_name())
        assert self.client.wait_for_services(timeout_sec=10)

    def set(self, name: str, value) -> tuple[bool, str]:
        future = self.client.set_parameters([Parameter(name, value=value)])
        wait_until(future.done, 10, f"SetParameters({name}) answered")
        result, = future.result().results
        return result.successful, result.reason


def sweep(h, group: dict, signature) -> None:
    """For each setting: the node's say on a frame before and after setting it differ."""
    params = Params(h)
    first = signature()
    assert signature() == first  # the same frame, the same settings: the same outputs
    for name, (value, held) in group.items():
        old = {k: h.node.get_parameter(k).value for k in [*held, name]}
        for k, v in held.items():
            assert params.set(k, v) == (True, ""), k
        before = signature()
        ok, reason = params.set(name, value)
        assert ok, f"{name} := {value} refused: {reason}"
        got = h.node.get_parameter(name).value
        assert (list(got) if isinstance(value, list) else got) == value
        after = signature()
        assert after != before, f"{name} := {value} changed nothing the node says: {after}"
        for k in [name, *reversed(list(held))]:  # back as it was, for the next one
            assert params.set(k, old[k])[0], k
        assert signature() == first, f"setting {name} back did not undo it"


def digest(msg) -> tuple:
    """What a message says, hashed where it is bulk data."""
    if isinstance(msg, CameraInfo):
        return ("info", msg.width, msg.height, tuple(msg.k), tuple(msg.p))
    data = hashlib.sha1(bytes(msg.data)).hexdigest()
    if isinstance(msg, CompressedImage):
        return ("compressed", msg.format, data)
    if isinstance(msg, Image):
        return ("image", msg.encoding, msg.width, msg.height, data)
    return ("points", msg.width, msg.height, tuple(f.name for f in msg.fields), data)


def test_runtime_settings_change_the_outputs_and_camera_model(harness_factory):
    h = harness_factory({"model_path": DA3_CONFIDENCE_TEST_MODEL,
                         "depth_scale_source": "fixed"},
                        subscribe=("depth/image", "depth/camera_info", "points"))
    h.wait_matched(("depth/image", "depth/camera_info", "points"))
    frame = np.empty((H, W, 3), np.uint8)
    frame[..., 0] = np.linspace(20, 200, W).astype(np.uint8)[None, :]  # depth ~2.0 .. 3.5
    frame[..., 1] = 90
    frame[..., 2] = np.linspace(40, 255, H).astype(np.uint8)[:, None]  # confidence
    info = camera_info(W, H, fx=500.0)
    info.p = [450.0, 0.0, (W - 1) / 2, 0.0, 0.0, 450.0, (H - 1) / 2, 0.0, 0.0, 0.0, 1.0, 0.0]
    # Stamps going back (first: the node's CameraInfo history is short): the only CameraInfo
    # for each frame is the one 30 ms after it.
    late = [90]

    def camera_model() -> tuple:
        late[0] -= 1
        header = h.header(sec=late[0])
        after = h.header(sec=late[0])
        after.stamp.nanosec = 30_000_000
        info.header = after
        h.info_pub.publish(info)
        infos = h.perception.channels[0].camera_infos
        wait_until(lambda: infos.choose(stamp_ns(after.stamp))[1]
                   == MATCHED, 10, "the node holds the CameraInfo")
        h.player.publish_frame(frame, header)
        return digest(h.wait_for("depth/camera_info",
                                 where=lambda m: m.header.stamp == header.stamp)[0])
    sweep(h, CAMERA_INFO, camera_model)

    sweep(h, OUTPUTS, frame_digests(h, frame, info, ("depth/image", "depth/camera_info",
                                                      "points")))


def frame_digests(h, frame, info, topics):
    """A signature for :func:`sweep`: publish ``frame`` with a new stamp, digest its
    ``topics``."""
    sec = [100]

    def signature() -> tuple:
        sec[0] += 1
        header = h.header(sec=sec[0])
        h.publish_frame(frame, header, info=info)
        return tuple(digest(h.wait_for(topic, where=lambda m: m.header.stamp == header.stamp)[0])
                     for topic in topics)
    return signature


def test_runtime_settings_change_the_compressed_outputs(harness_factory):
    topics = ("depth/image/compressedDepth", "depth/colored/compressed")
    h = harness_factory({"model_path": DA3_TEST_MODEL, "depth_scale_source": "fixed"},
                        subscribe=topics)
    h.wait_matched(topics)
    frame = np.empty((H, W, 3), np.uint8)
    frame[..., 0] = np.linspace(20, 200, W).astype(np.uint8)[None, :]  # depth ~2.0 .. 3.5
    frame[..., 1] = np.linspace(0, 255, H).astype(np.uint8)[:, None]
    frame[..., 2] = 90
    sweep(h, WIRE, frame_digests(h, frame, camera_info(W, H, fx=500.0), topics))


def scale_status(h, scene, s, sec: int, count: int, reference=None, ref_pub=None) -> tuple:
    """Publish ``scene`` painted at scale ``s`` stamped ``sec`` (its reference first, stamped
    30 ms later, where given); the scale diagnostics once it is processed."""
    z, _ = scene.depth_and_surface()
    header = h.header(sec=sec)
    if reference is not None:
        later = h.header(sec=sec)
        later.stamp.nanosec = 30_000_000
        ref_pub.publish(array_to_image(reference, "32FC1", later))
    info = camera_info(z.shape[1], z.shape[0], fx=scene.fx)
    h.publish_frame(paint(z / s), header, info=info)
    h.wait_for("depth/colored", where=lambda m: m.header.stamp == header.stamp)
    _, _, values = h.diagnostics(lambda d: d[2]["frames processed"] == str(count))
    return tuple(values.get(k) for k in SCALE_KEYS)


def test_runtime_settings_change_the_ground_plane_scale(harness_factory):
    h = harness_factory({"model_path": DA3_TEST_MODEL, "depth_scale_source": "ground_plane",
                         "camera_height": PITCHED_WITH_BOX.height, "diagnostics_period": 0.05},
                        subscribe=("depth/colored", "/diagnostics"))
    h.wait_matched(("depth/colored",))
    sent = [0]

    def status() -> tuple:
        sent[0] += 1
        return scale_status(h, PITCHED_WITH_BOX, 0.35, 100 + sent[0], sent[0])
    assert float(status()[2]) == pytest.approx(0.35, rel=0.01)  # the painted scale
    sweep(h, GROUND_PLANE, status)


def test_runtime_settings_change_the_reference_depth_scale(harness_factory):
    h = harness_factory({"model_path": DA3_TEST_MODEL, "depth_scale_source": "reference_depth",
                         "diagnostics_period": 0.05},
                        subscribe=("depth/colored", "/diagnostics"))
    h.wait_matched(("depth/colored",))
    ref_pub = h.client.create_publisher(Image, "reference_depth", qos_profile_sensor_data)
    wait_until(lambda: ref_pub.get_subscription_count() > 0, 10, "reference subscribed")
    z, _ = PITCHED_WITH_BOX.depth_and_surface()
    reference = z.astype(np.float32)  # 32FC1
    sent = [0]

    def status() -> tuple:
        sent[0] += 1
        return scale_status(h, PITCHED_WITH_BOX, 0.35, 100 + sent[0], sent[0], reference,
                            ref_pub)
    # The first reference may reach the node after its frame: wait for one that does not.
    wait_until(lambda: status()[2] != "-", 30, "a scale from the reference")
    assert float(status()[2]) == pytest.approx(0.35, rel=0.01)  # the painted scale
    sweep(h, REFERENCE, status)


def robot_on_odometry(harness_factory, model: str, stamps: list[float], speed: float = 0.0,
                      **parameters):
    """The node on ``model`` with a robot on its odometry at ``stamps`` (s), standing still or
    driving ahead at ``speed`` (m/s) from the first stamp, and a function that sends a frame
    stamped (sec, nanosec + a count) and returns its diagnostics once the frame's depth view
    is out."""
    from nav_msgs.msg import Odometry
    from support.motion_bags import CAMERA_IN_BASE
    h = harness_factory({"model_path": model, "camera_in_base": CAMERA_IN_BASE,
                         "diagnostics_period": 0.05, **parameters},
                        subscribe=("depth/colored", "/diagnostics"))
    h.wait_matched(("depth/colored",))
    odometry = h.client.create_publisher(Odometry, "odometry", 50)
    wait_until(lambda: odometry.get_subscription_count() > 0, 10, "odometry subscribed")
    for t in stamps:
        odometry.publish(odometry_at(h, t, speed * (t - stamps[0])))
    wait_until(lambda: h.perception.odometry.received == len(stamps), 10, "odometry held")
    frame, info, sent = np.full((48, 64, 3), 120, np.uint8), camera_info(64, 48, fx=60.0), [0]

    def frame_at(sec: int, nanosec: int, while_waiting=None) -> dict:
        """``while_waiting()``: called once the frame waits for odometry, if it does."""
        sent[0] += 1
        header = h.header(sec=sec, nanosec=nanosec + sent[0])  # a new stamp each time
        waited = h.perception.odometry.buffer.waited
        h.publish_frame(frame, header, info=info)
        if while_waiting is not None:
            out = lambda: any(m.header.stamp == header.stamp  # noqa: E731
                              for m in list(h.received["depth/colored"]))
            wait_until(lambda: out() or h.perception.odometry.buffer.waited > waited, 10,
                       "the frame out, or waiting for odometry")
            if h.perception.odometry.buffer.waited > waited:
                while_waiting()
        h.wait_for("depth/colored", where=lambda m: m.header.stamp == header.stamp)
        return h.diagnostics(lambda d: d[2]["frames processed"] == str(sent[0]))[2]
    frame_at.send = lambda t: odometry.publish(odometry_at(h, t))
    return h, frame_at


def odometry_at(h, t: float, x: float = 0.0):
    """The odometry message of a robot at ``x`` m ahead, stamped ``t`` (s)."""
    from nav_msgs.msg import Odometry
    msg = Odometry()
    msg.header = h.header(frame_id="odom", sec=int(t), nanosec=round(t % 1 * 1e9))
    msg.child_frame_id, msg.pose.pose.orientation.w = "base_link", 1.0
    msg.pose.pose.position.x = x
    return msg


def test_runtime_settings_change_which_frames_have_motion(harness_factory):
    from support.common import TIPS_TEST_MODEL
    # 20 Hz at 200.0-200.2 s and 201.2-201.4 s: a 1 s gap between
    stamps = [200.0, 200.05, 200.1, 200.15, 200.2, 201.2, 201.25, 201.3, 201.35, 201.4]
    # a long wait to start from: the test sends the next message once it sees the frame wait
    h, frame_at = robot_on_odometry(harness_factory, TIPS_TEST_MODEL, stamps, odometry_wait=2.0)
    newest = [stamps[-1]]

    def has_pose(sec: int, nanosec: int, while_waiting=None) -> bool:
        return frame_at(sec, nanosec, while_waiting)["camera pose note"] == "-"

    def next_comes_while_it_waits() -> bool:
        """A frame 0.1 s past the newest message; the next one is sent while it waits."""
        t = newest[0] + 0.1

        def send():
            newest[0] = t + 0.05
            frame_at.send(newest[0])
            wait_until(lambda: h.perception.odometry.buffer.newest_ns() == round(
                newest[0] * 1e9), 10, "the next odometry message held")
        return has_pose(int(t), round(t % 1 * 1e9), send)
    sweep(h, ODOMETRY, lambda: (has_pose(200, 700_000_000), has_pose(199, 700_000_000),
                                next_comes_while_it_waits()))


STILL = [300.0 + 0.05 * i for i in range(41)]  # a robot standing still for 2 s


def test_runtime_settings_change_the_motion_scale(harness_factory):
    h, frame_at = robot_on_odometry(harness_factory, DA3_TEST_MODEL, STILL,
                                    depth_scale_source="motion")
    assert "(10 cm)" in frame_at(301, 0)["depth scale note"]  # the default baseline, said
    sweep(h, MOTION_SCALE, lambda: frame_at(301, 0)["depth scale note"])


DRIVING = [400.0 + 0.05 * i for i in range(161)]  # 8 s of odometry at 20 Hz (of 10 s held)


def test_runtime_settings_change_the_temporal_alignment(harness_factory):
    """On a robot driving at 0.4 m/s, frames 0.5 s apart: 0.2 m between two (0.4 m across
    one left out while the alignment is off), within the default jump of 0.5 m."""
    from support.common import TIPS_TEST_MODEL
    h, frame_at = robot_on_odometry(harness_factory, TIPS_TEST_MODEL, DRIVING, speed=0.4)
    clock = iter(400.0 + 0.5 * i for i in range(1, 16))

    def next_frame() -> str:
        t = next(clock)
        return frame_at(int(t), round(t % 1 * 1e9))["temporal alignment"]
    next_frame()  # the first frame has nothing to align with
    assert next_frame() == "aligned"
    sweep(h, ALIGNMENT, next_frame)


def test_restart_only_settings_are_refused_with_a_reason(harness_factory):
    """Each setting the node does not take at runtime: refused, saying why, and unchanged."""
    h = harness_factory({"model_path": DA3_TEST_MODEL}, subscribe=())
    params = Params(h)
    refused = [p for p in PARAMS if not p.runtime]
    assert refused
    for spec in refused:
        before = h.node.get_parameter(spec.name).value
        ok, reason = params.set(spec.name, other_value(spec))
        assert not ok and spec.name in reason, (spec.name, reason)
        assert h.node.get_parameter(spec.name).value == before


# Scale settings and where each acts (written out here, from the metric-scale docs): the
# relative-depth sources that read it; a metric model reads none.
SCALE_READERS = {
    "camera_height": ("ground_plane",), "camera_heights": ("ground_plane",),
    "ground_max_tilt_deg": ("ground_plane",), "reference_depth_slop": ("reference_depth",),
    "depth_scale_time_constant": ("ground_plane", "reference_depth"),
    "depth_scale_max_age": ("ground_plane", "reference_depth"),
    "depth_scale_min_inliers": ("ground_plane", "reference_depth"),
    "relative_depth_scale": ("fixed", "none"),
}


@pytest.mark.parametrize("model", ["da3", "tipsv2"])
def test_a_scale_setting_the_model_or_source_never_reads_is_refused_with_the_reason(
        harness_factory, model):
    """Accepted, it would be ignored: with depth_scale_source none no model reads an
    estimated-scale setting (an estimated source checks a metric model's metres too), and a
    metric model (TIPSv2) never reads relative_depth_scale. Setting the value it already has
    changes nothing and is accepted (``ros2 param load`` of the same YAML)."""
    from support.common import TIPS_TEST_MODEL

    from dense_perception.core.settings.table import PARAMS_BY_NAME
    path = DA3_TEST_MODEL if model == "da3" else TIPS_TEST_MODEL
    params = Params(harness_factory({"model_path": path}, subscribe=()))  # source: none
    for name, readers in SCALE_READERS.items():
        spec = PARAMS_BY_NAME[name]
        assert spec.runtime
        ok, reason = params.set(name, other_value(spec))
        if model == "tipsv2" and "none" in readers:
            assert not ok and "this model's depth is metric" in reason, (name, reason)
        elif "none" in readers:
            assert ok, (name, reason)
        else:
            assert not ok and reason.startswith(
                f"{name} has no effect with depth_scale_source none"), (name, reason)
            assert " and ".join(readers) in reason
        assert params.set(name, spec.default) == (True, ""), name


def test_a_runtime_change_that_would_do_nothing_is_refused(harness_factory):
    """The relevance rule at runtime beyond the scale: DA3 with depth_scale_source none makes
    no points, so a points setting is refused."""
    params = Params(harness_factory({"model_path": DA3_TEST_MODEL}, subscribe=()))
    ok, reason = params.set("points_stride", 4)
    assert not ok and reason.startswith("points_stride has no effect with depth_scale_source "
                                        "none"), reason


def test_a_runtime_change_that_would_do_nothing_beside_another_setting_is_refused(
        harness_factory):
    """A voxel cloud is unorganised, so points_organized is refused beside it; compressedDepth
    of 16UC1 is not quantised; the voxel and quantisation limits hold at runtime. (A node of
    its own: two nodes of one name share their parameter services' names.)"""
    params = Params(harness_factory({"model_path": DA3_TEST_MODEL, "depth_scale_source": "fixed",
                                     "points_voxel_size": 0.05, "depth_encoding": "16UC1"},
                                    subscribe=()))
    ok, reason = params.set("points_organized", True)
    assert not ok and "points_voxel_size 0.05" in reason, reason
    ok, reason = params.set("compressed_depth_quantization", 20.0)
    assert not ok and "depth_encoding 16UC1" in reason, reason
    # a voxel edge under 1 mm: refused by its row (it collapsed the cloud to one point)
    ok, reason = params.set("points_voxel_size", 1e-300)
    assert not ok and ">= 0.001" in reason, reason
    # compressedDepth's inverse depth cannot hold 10 m with q = 1 (q (q + 1) = 2 m)
    assert params.set("depth_encoding", "32FC1") == (True, "")
    ok, reason = params.set("compressed_depth_quantization", 1.0)
    assert not ok and "q (q + 1) = 2 m" in reason, reason
