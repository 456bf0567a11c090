"""Metric depth from the relative DA3 test model, through the node over real DDS.

Each scene's true metric depth z is known (test/scale_scenes.py); the frame is painted so the
DA3 test model outputs z / s for a known s != 1. The node must recover metres from the ground
plane or from a sparse, outlier-ridden reference depth, keep the scale steady under noisy
estimates, follow a scene change, and never publish relative depth as metres.
"""

import numpy as np
import pytest

pytest.importorskip("rclpy")

from support.common import DA3_TEST_MODEL, TIPS_TEST_MODEL  # noqa: E402
from support.ros_harness import camera_info  # noqa: E402
from tools.common.metric_scene import HEIGHT, WIDTH, Scene, paint  # noqa: E402
from tools.common.metric_scene import FORWARD, PITCHED_WITH_BOX, sparse_reference  # noqa: E402
from tools.common.metric_scene import DESK_BESIDE_FLOOR, DESK_ONLY  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402

from dense_perception.core.conversions import cloud_to_points, image_msg_to_array  # noqa: E402
from dense_perception.ros.messages import array_to_image  # noqa: E402
from dense_perception.ros.node import DensePerceptionNode, StartupError  # noqa: E402

pytestmark = pytest.mark.ros
OK, WARN = 0, 1
STRIDE = 4


@pytest.fixture
def harness_factory(harness_factory):
    """conftest's factory with the DA3 test model as the default model_path."""
    return lambda params, **kwargs: harness_factory({"model_path": DA3_TEST_MODEL, **params},
                                                    **kwargs)


def scene_info(scene):
    info = camera_info(WIDTH, HEIGHT, fx=scene.fx)
    assert info.k[2] == scene.cx and info.k[5] == scene.cy
    return info


def stamp_of(msg):
    return msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9


def send(h, scene, s, header, reference=None):
    """Publish the scene painted at scale s (+ its reference depth first) and its CameraInfo."""
    z, _ = scene.depth_and_surface()
    if reference is not None:
        h.ref_pub.publish(array_to_image(reference, "32FC1", header))
        h.wait_until(lambda: any(stamp_of(m) == stamp_of_header(header)
                                 for m in list(h.perception.channels[0].references)), 10,
                     "reference received")
    h.publish_frame(paint(z / s), header, info=scene_info(scene))


def stamp_of_header(header):
    return header.stamp.sec + header.stamp.nanosec * 1e-9


def add_reference_publisher(h):
    from rclpy.qos import qos_profile_sensor_data
    from sensor_msgs.msg import Image
    h.ref_pub = h.client.create_publisher(Image, "reference_depth", qos_profile_sensor_data)
    h.wait_until(lambda: h.ref_pub.get_subscription_count() > 0, 10, "reference subscribed")


def for_header(header):
    return lambda m: m.header.stamp == header.stamp


@pytest.mark.parametrize("scene,s", [(FORWARD, 0.75), (PITCHED_WITH_BOX, 0.35)])
def test_ground_plane_gives_metres(harness_factory, scene, s):
    h = harness_factory({"depth_scale_source": "ground_plane", "camera_height": scene.height,
                         "points_organized": True, "points_stride": STRIDE},
                        subscribe=("depth/image", "points", "/diagnostics"))
    h.wait_matched(("depth/image", "points"))
    header = h.header(sec=10)
    send(h, scene, s, header)
    z, surface = scene.depth_and_surface()

    depth = image_msg_to_array(h.wait_for("depth/image", where=for_header(header))[0])
    assert np.abs(depth / z - 1).max() < 0.03  # every pixel, floor, wall and box

    cloud = cloud_to_points(h.wait_for("points", where=for_header(header))[0])
    assert cloud.shape == (HEIGHT // STRIDE, WIDTH // STRIDE)
    xyz = np.stack([cloud["x"], cloud["y"], cloud["z"]], axis=-1).astype(np.float64)
    sampled = surface[::STRIDE, ::STRIDE]
    floor, wall = xyz[sampled == 0], xyz[sampled == 1]
    assert len(floor) > 1000 and len(wall) > 100
    height_above_floor = floor @ scene.down()
    distance_to_wall = wall @ scene.forward()
    assert np.abs(height_above_floor / scene.height - 1).max() < 0.03
    assert np.abs(distance_to_wall / scene.wall - 1).max() < 0.03

    level, message, values = h.diagnostics(lambda d: d[2].get("depth scale source")
                                           == "ground_plane" and d[2]["frames processed"] == "1")
    assert level == OK, message
    assert values["depth units"] == "metres (scale from ground_plane)"
    assert float(values["depth scale (m per unit)"]) == pytest.approx(s, rel=0.03)
    assert float(values["depth scale inlier ratio"]) > 0.5
    assert values["model kind"] == "da3"


def test_no_scale_yet_withholds_metric_outputs_and_warns(harness_factory):
    """A frame with no floor in view: no scale, so no depth/image and no points, only the
    unitless colour view; diagnostics WARN and say why."""
    h = harness_factory({"depth_scale_source": "ground_plane", "camera_height": 1.0},
                        subscribe=("depth/image", "points", "depth/colored", "/diagnostics"))
    h.wait_matched(("depth/image", "points", "depth/colored"))
    wall_only = Scene(height=1.0, pitch_deg=0.0, wall=3.0)
    header = h.header(sec=20)
    h.publish_frame(paint(np.full((HEIGHT, WIDTH), 2.0)), header, info=scene_info(wall_only))
    assert h.wait_for("depth/colored", where=for_header(header))
    level, message, values = h.diagnostics(lambda d: d[2]["frames processed"] == "1")
    assert level == WARN and "no depth scale from ground_plane yet" in message
    assert "withheld" in message and "no plane within 30 deg" in message
    assert values["depth scale (m per unit)"] == "-"
    assert not h.received["depth/image"] and not h.received["points"]


def test_reference_depth_sparse_with_outliers(harness_factory):
    scene, s = PITCHED_WITH_BOX, 0.35
    h = harness_factory({"depth_scale_source": "reference_depth", "points_stride": STRIDE},
                        subscribe=("depth/image", "points", "/diagnostics"))
    add_reference_publisher(h)
    h.wait_matched(("depth/image", "points"))
    z, _ = scene.depth_and_surface()
    reference, bad = sparse_reference(z, 0.01, 0.10, np.random.default_rng(11))
    assert 0.08 < bad < 0.12
    header = h.header(sec=30)
    send(h, scene, s, header, reference=reference)
    depth = image_msg_to_array(h.wait_for("depth/image", where=for_header(header))[0])
    assert np.abs(depth / z - 1).max() < 0.02
    cloud = cloud_to_points(h.wait_for("points", where=for_header(header))[0])
    assert np.abs(cloud["z"] / z[::STRIDE, ::STRIDE].ravel() - 1).max() < 0.02
    level, message, values = h.diagnostics(lambda d: d[2]["frames processed"] == "1")
    assert level == OK and values["depth units"] == "metres (scale from reference_depth)"
    assert 0.85 < float(values["depth scale inlier ratio"]) < 0.95


def test_scale_is_steady_under_noise_and_follows_a_scene_change(harness_factory):
    """Per-frame estimates scattered by +-10 %: once settled, the published scale moves < 1 %
    from frame to frame; a new scene, where the model's own scale is 2.1x larger, is followed
    within the time constant."""
    tau, dt = 2.0, 0.1
    h = harness_factory({"depth_scale_source": "reference_depth",
                         "depth_scale_time_constant": tau},
                        subscribe=("depth/image", "/diagnostics"))
    add_reference_publisher(h)
    h.wait_matched(("depth/image",))
    scenes = [(PITCHED_WITH_BOX, 0.35), (FORWARD, 0.75)]
    depths = [scene.depth_and_surface()[0] for scene, _ in scenes]
    rng = np.random.default_rng(5)
    frames = 100
    step_at = 60
    published = []  # published metres per true metre, per frame
    for i in range(frames):
        which = 0 if i < step_at else 1
        (scene, s), z = scenes[which], depths[which]
        noise = 1.0 + rng.uniform(-0.10, 0.10)   # this frame's estimate is off by up to 10 %
        reference, _ = sparse_reference(z * noise, 0.01, 0.0, rng)
        header = h.header(sec=100 + i // 10, nanosec=(i % 10) * 100_000_000)
        send(h, scene, s, header, reference=reference)
        depth = image_msg_to_array(h.wait_for("depth/image", where=for_header(header))[0])
        published.append(float(np.median(depth / z)))
    published = np.array(published)
    settled = published[int(2 * tau / dt):step_at]
    moves = np.abs(np.diff(settled)) / settled[:-1]
    print(f"settled: moves max {moves.max():.4f}, error max {np.abs(settled - 1).max():.4f}")
    assert moves.max() < 0.01
    assert np.abs(settled - 1).max() < 0.03
    # After the scene change the published depth is metres again within the time constant
    # (without following, it would be 53 % off).
    after = published[step_at + int(tau / dt):]
    print(f"after the step: {np.round(published[step_at:step_at + 8], 3)}")
    assert np.abs(after - 1).max() < 0.03
    level, message, values = h.diagnostics(lambda d: int(d[2]["frames processed"]) >= frames)
    assert level == OK and float(values["depth scale spread (%)"]) < 10
    assert float(values["depth scale age (s)"]) == 0.0


def test_relative_depth_is_unitless_and_never_metres(harness_factory):
    """depth_scale_source none: 32FC1 relative depth, no points; 16UC1 and max_depth refused
    at start and at run time, saying why and what to set."""
    h = harness_factory({}, subscribe=("depth/image", "points", "/diagnostics"))
    h.wait_matched(("depth/image", "points"))
    header = h.header(sec=40)
    rel = np.full((HEIGHT, WIDTH), 2.5)
    h.publish_frame(paint(rel), header, info=scene_info(FORWARD))
    msg = h.wait_for("depth/image", where=for_header(header))[0]
    assert msg.encoding == "32FC1"
    assert np.abs(image_msg_to_array(msg) - 2.5).max() < 0.002  # unitless, unscaled
    level, message, values = h.diagnostics(lambda d: d[2]["frames processed"] == "1")
    assert values["depth units"] == "relative (unitless; depth_scale_source: none)"
    assert values["model kind"] == "da3" and level == OK
    assert not h.received["points"]
    for name, value, why in [("depth_encoding", "16UC1", "16UC1 means millimetres"),
                             ("max_depth", 5.0, "max_depth is in metres")]:
        result = h.node.set_parameters([Parameter(name, value=value)])[0]
        assert not result.successful and why in result.reason
        assert "set depth_scale_source to fixed" in result.reason


@pytest.mark.parametrize("params,expected", [
    ({"depth_encoding": "16UC1"}, "16UC1 means millimetres, but this model's depth is relative"),
    ({"max_depth": 4.0}, "max_depth is in metres, but this model's depth is relative"),
    ({"depth_scale_source": "ground_plane"}, "needs camera_height"),
])
def test_startup_refuses_metre_settings_for_relative_depth(params, expected):
    import rclpy
    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        overrides = [Parameter(k, value=v) for k, v in
                     {"model_path": DA3_TEST_MODEL, "backend": "cpu", **params}.items()]
        with pytest.raises(StartupError, match=expected):
            DensePerceptionNode(context=context, parameter_overrides=overrides)
    finally:
        rclpy.shutdown(context=context)


def test_fixed_scale_is_asserted_and_metric_models_ignore_the_source(harness_factory):
    h = harness_factory({"depth_scale_source": "fixed", "relative_depth_scale": 0.5,
                         "depth_encoding": "16UC1", "max_depth": 10.0},
                        subscribe=("depth/image", "points", "/diagnostics"))
    h.wait_matched(("depth/image", "points"))
    header = h.header(sec=50)
    h.publish_frame(paint(np.full((HEIGHT, WIDTH), 3.0)), header, info=scene_info(FORWARD))
    msg = h.wait_for("depth/image", where=for_header(header))[0]
    assert msg.encoding == "16UC1"
    assert np.abs(image_msg_to_array(msg).astype(float) - 1500).max() <= 2
    assert h.wait_for("points", where=for_header(header))
    level, message, values = h.diagnostics(lambda d: d[2]["frames processed"] == "1")
    assert values["depth units"] == "metres (asserted: relative_depth_scale = 0.5 m per unit)"
    tips = harness_factory({"model_path": TIPS_TEST_MODEL, "depth_scale_source": "ground_plane",
                            "camera_height": 1.0}, subscribe=("/diagnostics",))
    # Both nodes publish /diagnostics on this domain: take the TIPSv2 node's.
    level, message, values = tips.diagnostics(lambda d: d[2]["model kind"] == "tipsv2")
    assert values["depth units"] == "metres (metric model)"
    assert values["depth scale source"] == "model" and "depth scale age (s)" not in values


# ---- the floor beside a larger desk, a desk alone, and a held scale's age --------------------
@pytest.mark.timeout(120)
def test_the_floor_beside_a_larger_desk_gives_metres(harness_factory):
    """Camera 1.0 m up; a desk top 0.4 m below it covers more of the lower view (25 %) than
    the floor beside it (17 %); wall at 4 m. Taking the desk for the floor published the floor
    2.5 m below the camera and the wall at 10 m; the floor is the one at the robot's feet."""
    scene, s = DESK_BESIDE_FLOOR, 0.85
    h = harness_factory({"depth_scale_source": "ground_plane", "camera_height": scene.height,
                         "fit": "stretch", "depth_scale_min_inliers": 0.15,
                         "points_organized": True, "points_stride": STRIDE},
                        subscribe=("depth/image", "points", "/diagnostics"))
    h.wait_matched(("depth/image", "points"))
    header = h.header(sec=60)
    send(h, scene, s, header)
    z, surface = scene.depth_and_surface()
    depth = image_msg_to_array(h.wait_for("depth/image", where=for_header(header))[0])
    assert np.abs(depth / z - 1).max() < 0.03
    cloud = cloud_to_points(h.wait_for("points", where=for_header(header))[0])
    xyz = np.stack([cloud["x"], cloud["y"], cloud["z"]], axis=-1).astype(np.float64)
    sampled = surface[::STRIDE, ::STRIDE]
    true_below = ((scene.rays() * z[..., None]) @ scene.down())[::STRIDE, ::STRIDE]
    below = xyz @ scene.down()          # metres below the camera, as published
    floor = below[sampled == 0]
    desk_top = below[(sampled == 2) & (np.abs(true_below - 0.4) < 1e-6)]
    assert len(floor) > 500 and np.abs(floor / 1.0 - 1).max() < 0.03
    assert len(desk_top) > 500 and np.abs(desk_top / 0.4 - 1).max() < 0.03
    wall = xyz[sampled == 1] @ scene.forward()
    assert np.abs(wall / scene.wall - 1).max() < 0.03
    level, message, values = h.diagnostics(lambda d: d[2]["frames processed"] == "1")
    assert level == OK, message
    assert float(values["depth scale (m per unit)"]) == pytest.approx(s, rel=0.03)


@pytest.mark.timeout(120)
def test_a_desk_with_no_floor_in_view_gives_no_scale(harness_factory):
    """Only a desk in view (its front face down past the bottom of the view, no floor): no
    estimate, nothing metric published, and diagnostics say why."""
    h = harness_factory({"depth_scale_source": "ground_plane", "camera_height": 1.0,
                         "depth_scale_min_inliers": 0.15},
                        subscribe=("depth/image", "points", "depth/colored", "/diagnostics"))
    h.wait_matched(("depth/image", "points", "depth/colored"))
    header = h.header(sec=70)
    send(h, DESK_ONLY, 0.85, header)
    assert h.wait_for("depth/colored", where=for_header(header))
    level, message, values = h.diagnostics(lambda d: d[2]["frames processed"] == "1")
    assert level == WARN and "no depth scale from ground_plane yet" in message
    assert "raised surface (desk, table, step), not the floor" in message
    assert values["depth scale (m per unit)"] == "-"
    assert not h.received["depth/image"] and not h.received["points"]


@pytest.mark.timeout(180)
def test_a_held_scale_expires(harness_factory):
    """depth_scale_time_constant 1 s, depth_scale_max_age 3 s: a floor until t = 1 s, then a
    wall filling the view: points go on for 3 s (the held scale), then stop, diagnostics WARN
    with the age and the reason; the next floor brings them back."""
    h = harness_factory({"depth_scale_source": "ground_plane", "camera_height": FORWARD.height,
                         "depth_scale_time_constant": 1.0, "depth_scale_max_age": 3.0},
                        subscribe=("points", "depth/colored", "/diagnostics"))
    h.wait_matched(("points", "depth/colored"))
    z, _ = FORWARD.depth_and_surface()
    floor, wall = paint(z / 0.75), paint(np.full((HEIGHT, WIDTH), 2.0))
    times = np.arange(0.0, 6.01, 0.5)     # s after 300; the floor at 0-1 s and at 6 s
    for t in times:
        header = h.header(sec=300 + int(t), nanosec=int(round(t % 1 * 1e9)))
        h.publish_frame(floor if t <= 1.0 or t == 6.0 else wall, header,
                        info=scene_info(FORWARD))
        h.wait_for("depth/colored", where=for_header(header))
        if t == 5.5:
            level, message, values = h.diagnostics(
                lambda d: d[2]["frames processed"] == str(len(times) - 1))
    h.wait_for("points", where=lambda m: stamp_of(m) == 306.0)
    with_points = sorted(stamp_of(m) - 300 for m in h.received["points"])
    assert with_points == [0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 6.0]
    assert level == WARN, message
    assert message.startswith("depth scale expired: no trustworthy estimate for 4.5 s")
    assert "depth_scale_max_age 3 s" in message and "no plane within 30 deg" in message
    assert values["depth units"].startswith("relative: the scale from ground_plane expired")


# ---- reference depth on a slow model; a guessed camera never enters the filter ---------------
def _stream_references_and_frames(h, scene, s, stop, sent, start_sec=500, hz=30, every=6):
    """Play a depth sensor at ``hz`` (a quarter-resolution dense reference of ``scene``, each
    stamped on a clock that advances 1/hz per message) and, on every ``every``-th stamp, the
    camera's image of ``scene`` painted at scale ``s`` with the same stamp (reference first).
    Runs until ``stop`` is set; the image stamps sent go to ``sent``."""
    import threading
    import time

    import cv2
    z, _ = scene.depth_and_surface()
    reference = cv2.resize(z.astype(np.float32), (WIDTH // 4, HEIGHT // 4),
                           interpolation=cv2.INTER_AREA)
    frame = paint(z / s)

    def play():
        start = time.monotonic()
        n = 0
        while not stop.is_set():
            ns = n * 1_000_000_000 // hz
            header = h.header(sec=start_sec + ns // 1_000_000_000, nanosec=ns % 1_000_000_000)
            h.ref_pub.publish(array_to_image(reference, "32FC1", header))
            if n % every == 0:
                h.player.publish_frame(frame, header, "rgb8")
                sent.append(stamp_of_header(header))
            n += 1
            stop.wait(max(0.0, start + n / hz - time.monotonic()))
    thread = threading.Thread(target=play, daemon=True)
    thread.start()
    return thread


@pytest.mark.timeout(120)
def test_reference_depth_on_a_slow_model(harness_factory):
    """Inference slowed to 1.5 s, a 30 Hz reference depth: metric depth/image and points from
    one of the first two frames the node finishes. (Keeping the last 30 references and looking
    one up after inference found none: the newest frame was 1.5 s older than the oldest one.)"""
    import threading

    from support.common import SlowRunner
    from dense_perception.core.geometry.camera_info_choice import MATCHED, stamp_ns

    scene, s = PITCHED_WITH_BOX, 0.35
    h = harness_factory({"depth_scale_source": "reference_depth", "points_stride": STRIDE},
                        runner_hook=lambda r: SlowRunner(r, delay=1.5),
                        subscribe=("depth/image", "points", "depth/colored"))
    add_reference_publisher(h)
    h.wait_matched(("depth/image", "points", "depth/colored"))
    info = scene_info(scene)
    info.header = h.header(sec=400)  # one CameraInfo, stamped before every frame
    h.info_pub.publish(info)
    infos = h.perception.channels[0].camera_infos
    h.wait_until(lambda: infos.choose(stamp_ns(info.header.stamp))[1]
                 == MATCHED, 10, "the node holds the CameraInfo")
    stop, sent = threading.Event(), []
    player = _stream_references_and_frames(h, scene, s, stop, sent)
    try:
        finished = h.wait_for("depth/colored", count=2, timeout=60)
    finally:
        stop.set()
        player.join(5)
    first_two = sorted(stamp_of(m) for m in finished)[:2]
    depth = [m for m in h.received["depth/image"] if stamp_of(m) in first_two]
    points = [m for m in h.received["points"] if stamp_of(m) in first_two]
    assert depth and points, (f"no metric output from the first two frames {first_two} "
                              f"(frames sent: {len(sent)})")
    z, _ = scene.depth_and_surface()
    ratio = image_msg_to_array(depth[0]) / z
    assert abs(float(np.nanmedian(ratio)) - 1) < 0.02 and np.nanmax(np.abs(ratio - 1)) < 0.05


# A level camera 1.0 m above the floor with a 90 deg lens (fx = 252 on the 504 px width), a wall
# 2 m ahead: the node's default pinhole guess (60 deg) sees its floor 1.73x too near.
WIDE = Scene(height=1.0, pitch_deg=0.0, wall=2.0, fx=(WIDTH / 2) / np.tan(np.radians(45.0)))


@pytest.mark.timeout(120)
def test_frames_before_camera_info_never_enter_the_scale_filter(harness_factory):
    """Two frames before any CameraInfo (the pinhole guess), then the real 90 deg lens: every
    frame with the real CameraInfo is metres from its first (the guessed frames' scale, 1.73x
    the true one, seeded the filter and the next frames were published at 1.32x)."""
    scene, s = WIDE, 0.42
    h = harness_factory({"depth_scale_source": "ground_plane", "camera_height": scene.height},
                        subscribe=("depth/image", "depth/colored", "/diagnostics"))
    h.wait_matched(("depth/image", "depth/colored"))
    z, _ = scene.depth_and_surface()
    frame = paint(z / s)
    headers = [h.header(sec=600, nanosec=i * 100_000_000) for i in range(7)]
    for i, header in enumerate(headers):
        h.publish_frame(frame, header, info=None if i < 2 else scene_info(scene))
        h.wait_for("depth/colored", where=for_header(header))
        if i == 1:
            guessed = h.diagnostics(lambda d: d[2]["frames processed"] == "2")
    for header in headers[2:]:
        depth = image_msg_to_array(h.wait_for("depth/image", where=for_header(header))[0])
        assert np.abs(depth / z - 1).max() < 0.03, stamp_of_header(header)
    # The guessed frames were published with their own scale, marked (diagnostics WARN).
    level, message, values = guessed
    assert values["depth scale camera"] == "guessed pinhole (fallback_hfov_deg)"
    assert level == WARN and "guessed camera" in message
    assert float(values["depth scale (m per unit)"]) == pytest.approx(1.73 * s, rel=0.05)
    level, message, values = h.diagnostics(lambda d: d[2]["frames processed"] == "7")
    assert values["depth scale camera"] == "CameraInfo" and level == OK, message
    assert float(values["depth scale (m per unit)"]) == pytest.approx(s, rel=0.02)
