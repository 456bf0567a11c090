"""The node over real DDS (pip ROS 2 Kilted): every output topic, headers, values, behaviour."""

import json
import time

import cv2
import numpy as np
import pytest

pytest.importorskip("rclpy")

from support.common import DA3_TEST_MODEL, GRAPH_TIMEOUT, TIPS_TEST_MODEL, hardware_gpu  # noqa: E402
from support.model_truth import (camera_colour_at_published, da3_depth_of, gradient_frame,  # noqa: E402
                         tips_depth_of, tips_normals_of)
from support.ros_harness import camera_info, wait_until  # noqa: E402
from rclpy.qos import ReliabilityPolicy  # noqa: E402
from sensor_msgs.msg import CompressedImage, Image  # noqa: E402
from std_msgs.msg import String  # noqa: E402
from tools.common.ros_client import camera_qos  # noqa: E402

from dense_perception.core.geometry.fit import make_fit_plan  # noqa: E402
from dense_perception.core.geometry.intrinsics import Intrinsics  # noqa: E402
from dense_perception.core.conversions import cloud_to_points, image_msg_to_array  # noqa: E402

pytestmark = [pytest.mark.ros, pytest.mark.timeout(90)]
OK, WARN, ERROR = 0, 1, 2


as_array = image_msg_to_array


class HookedRunner:
    """Wraps the node's runner: counts runs, adds a delay, or raises on demand."""

    def __init__(self, inner, delay: float = 0.0):
        self.inner, self.delay, self.runs, self.fail = inner, delay, 0, False

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def run(self):
        self.runs += 1
        if self.fail:
            raise RuntimeError("injected invoke failure")
        if self.delay:
            time.sleep(self.delay)
        return self.inner.run()


def same_header(msg, header):
    return msg.header.stamp == header.stamp and msg.header.frame_id == header.frame_id


def test_tipsv2_every_output(harness_factory):
    h = harness_factory({"model_path": TIPS_TEST_MODEL, "points_stride": 4})
    h.subscribe("segmentation/classes", String, transient=True)
    h.wait_matched(("depth/image", "normals/image", "segmentation/labels", "points"))
    exact = gradient_frame(640, 480, blue=200)
    frame = np.rint(exact).astype(np.uint8)
    info = camera_info(640, 480, fx=520.0)
    header = h.header(sec=1234, nanosec=5678)
    h.publish_frame(frame, header, info=info)
    plan = make_fit_plan(640, 480, 448, 448, "crop")
    colour = camera_colour_at_published(exact, plan, "model")

    depth_msg = h.wait_for("depth/image")[0]
    assert same_header(depth_msg, header) and depth_msg.encoding == "32FC1"
    depth = as_array(depth_msg)
    assert depth.shape == (448, 448)
    assert np.abs(depth - tips_depth_of(colour))[4:-4, 4:-4].max() < 0.02

    info_msg = h.wait_for("depth/camera_info")[0]
    expected_k = plan.published_intrinsics(Intrinsics.from_k(info.k, 640, 480), "model")
    assert same_header(info_msg, header) and (info_msg.width, info_msg.height) == (448, 448)
    np.testing.assert_allclose(info_msg.k, expected_k.k(), rtol=1e-9)

    normals_msg = h.wait_for("normals/image")[0]
    assert same_header(normals_msg, header) and normals_msg.encoding == "32FC3"
    normals = as_array(normals_msg)
    assert np.abs(normals - tips_normals_of(colour))[4:-4, 4:-4].max() < 0.02

    labels_msg = h.wait_for("segmentation/labels")[0]
    assert labels_msg.encoding == "mono8" and same_header(labels_msg, header)
    assert (as_array(labels_msg) == round(149 * 200 / 255)).all()

    for topic, encoding in [("depth/colored", "bgr8"), ("normals/colored", "rgb8"),
                            ("segmentation/colored", "rgb8")]:
        msg = h.wait_for(topic)[0]
        assert msg.encoding == encoding and same_header(msg, header)
        assert (msg.width, msg.height) == (448, 448)

    cloud_msg = h.wait_for("points")[0]
    assert same_header(cloud_msg, header)
    assert [f.name for f in cloud_msg.fields] == ["x", "y", "z", "rgb"]
    cloud = cloud_to_points(cloud_msg)
    assert cloud.shape == (1, 112 * 112)
    # A few points against the back-projection of the published depth with the published K.
    k = Intrinsics.from_k(info_msg.k, 448, 448)
    for v, u in [(0, 0), (40, 100), (111, 111)]:
        p = cloud[0, v * 112 + u]
        z = depth[v * 4, u * 4]
        assert p["z"] == pytest.approx(z)
        assert p["x"] == pytest.approx((u * 4 - k.cx) * z / k.fx, rel=1e-5)
        assert p["y"] == pytest.approx((v * 4 - k.cy) * z / k.fy, rel=1e-5)

    classes = json.loads(h.wait_for("segmentation/classes")[0].data)
    assert len(classes) == 150 and classes[0] == "wall" and classes[149] == "flag"

    level, message, values = h.diagnostics(lambda d: d[2]["frames processed"] == "1")
    assert level == OK, message
    assert values["model kind"] == "tipsv2"
    assert values["input size -> model size"] == "640x480 -> 448x448"
    assert values["camera_info"] == "matched image stamp"
    assert float(values["inference mean (ms)"]) > 0 and float(values["publish mean (ms)"]) > 0
    assert values["backend"].startswith(("cpu", "gpu"))
    status = h.received["/diagnostics"][-1].status[0]
    assert status.name == "/dense_perception"  # the node's fully qualified name
    assert status.hardware_id == "camera_optical_frame"  # the camera frame


def test_da3_publishes_depth_only_and_16uc1_millimetres(harness_factory):
    h = harness_factory({"model_path": DA3_TEST_MODEL, "depth_encoding": "16UC1",
                         "depth_scale_source": "fixed", "fit": "rotate"}, subscribe=("depth/image", "/diagnostics"))
    def published():
        return {name for name, _ in h.node.get_publisher_names_and_types_by_node(
            "dense_perception", "/")}

    def depth_only(names):
        return ({"/depth/image", "/depth/camera_info", "/depth/colored", "/points"} <= names
                and not any(t.startswith(("/normals", "/segmentation")) for t in names))
    # The graph can list an earlier test's node of the same name for a moment: wait for ours.
    h.wait_until(lambda: depth_only(published()), GRAPH_TIMEOUT, "only the DA3 outputs in the graph")
    h.wait_matched(("depth/image",))
    exact = gradient_frame(1280, 720)
    header = h.header()
    h.publish_frame(np.rint(exact).astype(np.uint8)[:, :, ::-1].copy(), header, encoding="bgr8")
    msg = h.wait_for("depth/image")[0]
    assert msg.encoding == "16UC1" and (msg.width, msg.height) == (896, 504)  # turned back
    plan = make_fit_plan(1280, 720, 504, 896, "rotate")
    expected_mm = da3_depth_of(camera_colour_at_published(exact, plan, "model")) * 1000
    assert np.abs(as_array(msg).astype(float) - expected_mm)[4:-4, 4:-4].max() < 20


def test_newest_frame_wins_without_backlog(harness_factory):
    hooks = []

    def slow(runner):
        hooks.append(HookedRunner(runner, delay=0.4))
        return hooks[0]
    h = harness_factory({"model_path": DA3_TEST_MODEL}, runner_hook=slow,
                        subscribe=("depth/image",))
    h.wait_matched(("depth/image",))
    p = h.perception
    camera = p.channels[0]  # the single default camera
    started = time.monotonic()
    h.player.start(np.zeros((480, 640, 3), np.uint8), fps=30)  # a 30 fps camera
    wait_until(lambda: camera.in_rate.total >= 30, 20, "30 frames received")
    h.player.stop()
    elapsed = time.monotonic() - started
    last = h.player.last_header
    # No backlog: the output of the last frame played (or of one just before it, if DDS lost
    # it) comes about one inference later, not 30 inferences later.
    newest = h.wait_for("depth/image", where=lambda m: m.header.stamp.sec == last.stamp.sec
                        and abs(m.header.stamp.nanosec - last.stamp.nanosec) < 2e8, timeout=5)
    assert newest
    stats = camera.stats

    def accounted():
        return stats.processed + stats.rejected + stats.failed + stats.idle \
            + p.frames_dropped == camera.in_rate.total
    wait_until(accounted, 5, "every received frame processed or dropped")
    h.wait_for("depth/image", count=stats.processed)  # every published output arrives
    outputs = len(h.received["depth/image"])
    assert hooks[0].runs == stats.processed == outputs  # one output per inference
    assert outputs <= (time.monotonic() - started) / 0.4 + 1  # not one per frame
    assert p.frames_dropped == camera.in_rate.total - outputs >= 30 - elapsed / 0.4 - 2


def bad_image(**fields):
    msg = Image()
    msg.height, msg.width, msg.encoding, msg.step = 4, 4, "rgb8", 12
    msg.data = bytes(48)
    for k, v in fields.items():
        setattr(msg, k, v)
    return msg


def test_bad_frames_are_skipped_and_the_node_lives_on(harness_factory):
    h = harness_factory({"model_path": TIPS_TEST_MODEL}, subscribe=("depth/image",),
                        reliable=True)
    h.wait_matched(("depth/image",))
    bad = [bad_image(encoding="yuv422"), bad_image(step=5), bad_image(data=bytes(10)),
           bad_image(width=0, step=0, data=b""), bad_image(encoding="16UC1", step=8, data=bytes(32))]
    for i, msg in enumerate(bad, 1):
        msg.header = h.header()
        h.image_pub.publish(msg)
        # One at a time (the slot keeps only the newest): wait until this one is refused.
        wait_until(lambda i=i: h.perception.channels[0].stats.rejected == i, 10,
                   f"bad frame {i} refused")
    good = h.header()
    h.publish_frame(np.zeros((48, 64, 3), np.uint8), good)
    assert h.wait_for("depth/image", where=lambda m: m.header.stamp == good.stamp)
    assert h.perception.channels[0].stats.failed == 0


def test_missing_camera_info_uses_fallback_and_warns(harness_factory):
    h = harness_factory({"model_path": TIPS_TEST_MODEL, "fallback_hfov_deg": 90.0},
                        subscribe=("points", "depth/camera_info", "/diagnostics"))
    h.wait_matched(("points",))
    h.publish_frame(np.full((448, 448, 3), 90, np.uint8), h.header())
    assert h.wait_for("points")
    info = h.wait_for("depth/camera_info")[0]
    assert info.k[0] == pytest.approx(224.0)  # 448 px over 90 degrees
    level, message, values = h.diagnostics(lambda d: d[2]["frames processed"] == "1")
    assert level == WARN and "guess" in message
    assert "no CameraInfo" in values["camera_info"]


def test_camera_is_subscribed_only_while_an_output_is(harness_factory):
    hooks = []
    h = harness_factory({"model_path": DA3_TEST_MODEL},
                        runner_hook=lambda r: hooks.append(HookedRunner(r)) or hooks[0],
                        subscribe=("/diagnostics",))
    h.diagnostics()  # the node is up and spinning
    # Nobody listens: the node does not even subscribe, so frames cost it nothing. (The graph
    # is checked with a wait: it may still list an earlier test's node for a moment.)
    assert not h.perception.channels[0].camera.subscribed
    wait_until(lambda: not h.camera_subscribed(), GRAPH_TIMEOUT, "no camera subscription in the graph")
    h.subscribe("depth/image")
    h.wait_matched(("depth/image",))
    h.publish_frame(np.zeros((48, 64, 3), np.uint8), h.header())
    h.wait_for("depth/image")
    assert hooks[0].runs == 1
    h.unsubscribe("depth/image")
    wait_until(lambda: not h.camera_subscribed(), GRAPH_TIMEOUT, "the node unsubscribes from the camera")
    # Diagnostics go on: the frame processed, and no camera subscription now.
    h.diagnostics(lambda d: d[2]["input QoS"] == "-" and d[2]["frames processed"] == "1")


def test_graph_polling_fallback_without_matched_events(harness_factory, monkeypatch):
    """Where rclpy has no matched events (Humble), a timer watches the graph instead."""
    from dense_perception.ros import compat
    monkeypatch.setattr(compat, "HAS_MATCHED_EVENTS", False)
    h = harness_factory({"model_path": DA3_TEST_MODEL}, subscribe=())
    assert not h.perception.watch.matched_events
    h.subscribe("depth/image")
    h.wait_matched(("depth/image",))
    h.publish_frame(np.zeros((48, 64, 3), np.uint8), h.header())
    h.wait_for("depth/image")
    h.unsubscribe("depth/image")
    wait_until(lambda: not h.camera_subscribed(), GRAPH_TIMEOUT, "the node unsubscribes from the camera")


def image_subscription_reliability(h, topic="/image"):
    """The reliability of the node's subscription to ``topic`` as the graph shows it (None
    when there is none, "several" while an old one is still listed)."""
    kinds = {i.qos_profile.reliability for i in h.client.get_subscriptions_info_by_topic(topic)
             if i.node_name == "dense_perception"}
    return kinds.pop() if len(kinds) == 1 else (None if not kinds else "several")


@pytest.mark.parametrize("mode,reliable_camera,expected", [
    ("auto", True, ReliabilityPolicy.RELIABLE), ("auto", False, ReliabilityPolicy.BEST_EFFORT),
    ("sensor_data", True, ReliabilityPolicy.BEST_EFFORT),
    ("reliable", True, ReliabilityPolicy.RELIABLE)])
def test_input_qos(harness_factory, mode, reliable_camera, expected):
    h = harness_factory({"model_path": DA3_TEST_MODEL, "input_qos": mode},
                        subscribe=("depth/image",), reliable=reliable_camera)
    h.wait_matched(("depth/image",))
    wait_until(lambda: image_subscription_reliability(h) == expected
               and image_subscription_reliability(h, "/camera_info") == expected, 10,
               f"subscriptions {expected}")
    frame = h.header()
    h.publish_frame(np.zeros((48, 64, 3), np.uint8), frame)
    h.wait_for("depth/image", where=lambda m: m.header.stamp == frame.stamp)


def test_compressed_input(harness_factory):
    h = harness_factory({"model_path": TIPS_TEST_MODEL, "input_compressed": True},
                        subscribe=("depth/image",))
    h.wait_matched(("depth/image",))
    exact = gradient_frame(448, 448)
    frame = np.rint(exact).astype(np.uint8)
    msg = CompressedImage(format="png")
    msg.header = h.header()
    msg.data = cv2.imencode(".png", frame[:, :, ::-1])[1].tobytes()
    h.compressed_pub.publish(msg)
    depth = as_array(h.wait_for("depth/image")[0])
    assert np.abs(depth - tips_depth_of(exact)).max() < 0.02


def test_runtime_parameters(harness_factory):
    from rclpy.parameter import Parameter
    h = harness_factory({"model_path": TIPS_TEST_MODEL}, subscribe=("depth/image",))
    h.wait_matched(("depth/image",))
    results = h.node.set_parameters([Parameter("output_resolution", value="input")])
    assert results[0].successful
    h.publish_frame(np.zeros((480, 640, 3), np.uint8), h.header())
    msg = h.wait_for("depth/image")[0]
    assert (msg.width, msg.height) == (640, 480)
    refused = h.node.set_parameters([Parameter("backend", value="cpu")])[0]
    assert not refused.successful and "read-only" in refused.reason
    bad = h.node.set_parameters([Parameter("fit", value="letterbox")])[0]
    assert not bad.successful and "crop, stretch, rotate" in bad.reason


def test_restart_only_parameters_are_read_only_over_dds(harness_factory):
    """What ``ros2 param describe`` / ``ros2 param set`` see: the parameter services."""
    from rcl_interfaces.msg import Parameter as ParameterMsg, ParameterValue, ParameterType
    from rcl_interfaces.srv import DescribeParameters, SetParameters
    h = harness_factory({"model_path": DA3_TEST_MODEL}, subscribe=())
    describe = h.client.create_client(DescribeParameters, "/dense_perception/describe_parameters")
    setter = h.client.create_client(SetParameters, "/dense_perception/set_parameters")

    def call(client, request):
        assert client.wait_for_service(timeout_sec=10)
        future = client.call_async(request)
        wait_until(future.done, 10, f"{client.srv_name} answers")
        return future.result()
    names = ["backend", "model_path", "input_qos", "use_lifecycle", "fit", "points_stride"]
    descriptors = call(describe, DescribeParameters.Request(names=names)).descriptors
    assert [d.read_only for d in descriptors] == [True, True, True, True, False, False]
    assert "restart the node" in descriptors[0].description
    value = ParameterValue(type=ParameterType.PARAMETER_STRING, string_value="gpu")
    result = call(setter, SetParameters.Request(
        parameters=[ParameterMsg(name="backend", value=value)])).results[0]
    assert not result.successful and "read-only" in result.reason
    value = ParameterValue(type=ParameterType.PARAMETER_STRING, string_value="stretch")
    assert call(setter, SetParameters.Request(
        parameters=[ParameterMsg(name="fit", value=value)])).results[0].successful
    # Applied in the post-set callback: the pipeline now stretches.
    wait_until(lambda: h.perception.pipeline.config.fit == "stretch", 5, "fit applied")


def test_invoke_failure_mid_run_recovers(harness_factory):
    hooks = []
    h = harness_factory({"model_path": TIPS_TEST_MODEL},
                        runner_hook=lambda r: hooks.append(HookedRunner(r)) or hooks[0],
                        subscribe=("depth/image", "/diagnostics"), reliable=True)
    h.wait_matched(("depth/image",))
    info = camera_info(64, 48)
    hooks[0].fail = True
    for i in range(1, 4):
        h.publish_frame(np.zeros((48, 64, 3), np.uint8), h.header(), info=info)
        wait_until(lambda i=i: h.perception.channels[0].stats.failed == i, 10,
                   f"frame {i} failed")
    level, message, values = h.diagnostics(lambda d: d[0] == ERROR)
    assert "injected invoke failure" in message and values["frames failed"] == "3"
    hooks[0].fail = False
    good = h.header()
    h.publish_frame(np.zeros((48, 64, 3), np.uint8), good, info=info)
    h.wait_for("depth/image", where=lambda m: m.header.stamp == good.stamp)
    assert h.diagnostics(lambda d: d[0] == OK)


def test_auto_backend_without_gpu_warns_in_diagnostics(harness_factory):
    if hardware_gpu():  # no GPU, or only a CPU emulation (lavapipe) that 'auto' refuses
        pytest.skip("this machine has a GPU adapter that 'auto' uses")
    h = harness_factory({"model_path": DA3_TEST_MODEL, "backend": "auto"},
                        subscribe=("depth/image", "/diagnostics"))
    h.wait_matched(("depth/image",))
    h.publish_frame(np.zeros((48, 64, 3), np.uint8), h.header(), info=camera_info(64, 48))
    h.wait_for("depth/image")
    level, message, values = h.diagnostics(lambda d: d[2]["frames processed"] == "1")
    assert level == WARN and "GPU unavailable" in message and "fell back to CPU" in message
    assert values["backend"].startswith("cpu")


def test_camera_publisher_going_away_and_coming_back_reliable(harness_factory):
    """input_qos auto follows the camera: best effort first, reliable when it comes back so."""
    h = harness_factory({"model_path": DA3_TEST_MODEL}, subscribe=("depth/image",))
    h.wait_matched(("depth/image",))
    wait_until(lambda: image_subscription_reliability(h) == ReliabilityPolicy.BEST_EFFORT, 10,
               "a best-effort subscription")
    first = h.header()
    h.publish_frame(np.zeros((48, 64, 3), np.uint8), first)
    h.wait_for("depth/image", where=lambda m: m.header.stamp == first.stamp)
    h.client.destroy_publisher(h.player.image_pub)
    wait_until(lambda: h.node.count_publishers("/image") == 0, GRAPH_TIMEOUT, "the camera is gone")
    h.player.image_pub = h.client.create_publisher(Image, "image", camera_qos(reliable=True))
    wait_until(lambda: image_subscription_reliability(h) == ReliabilityPolicy.RELIABLE, 10,
               "the node subscribes reliably")
    wait_until(lambda: h.player.image_pub.get_subscription_count() > 0, GRAPH_TIMEOUT, "re-matched")
    again = h.header()
    h.publish_frame(np.zeros((48, 64, 3), np.uint8), again)
    assert h.wait_for("depth/image", where=lambda m: m.header.stamp == again.stamp)


def test_parameters_without_post_set_callback(harness_factory, monkeypatch):
    """Where rclpy has no post-set callback (Humble), changes are applied once validated."""
    from rclpy.parameter import Parameter
    from dense_perception.ros import compat
    monkeypatch.setattr(compat, "HAS_POST_SET_CALLBACK", False)
    h = harness_factory({"model_path": DA3_TEST_MODEL}, subscribe=())
    assert h.node.set_parameters([Parameter("fit", value="stretch")])[0].successful
    assert h.perception.pipeline.config.fit == "stretch"
    refused = h.node.set_parameters([Parameter("fit", value="letterbox")])[0]  # our check
    assert not refused.successful and h.perception.pipeline.config.fit == "stretch"


def test_publisher_qos_override(harness_factory):
    """config/*.yaml's example: a best-effort point cloud through qos_overrides."""
    h = harness_factory({"model_path": DA3_TEST_MODEL,
                         "qos_overrides./points.publisher.reliability": "best_effort"},
                        subscribe=())

    def reliability(topic):
        infos = [i for i in h.client.get_publishers_info_by_topic(topic)
                 if i.node_name == "dense_perception"]
        return infos[0].qos_profile.reliability if infos else None
    wait_until(lambda: reliability("/points") is not None, GRAPH_TIMEOUT, "points advertised")
    assert reliability("/points") == ReliabilityPolicy.BEST_EFFORT
    assert reliability("/depth/image") == ReliabilityPolicy.RELIABLE
