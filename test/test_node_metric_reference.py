# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Metric depth from the relative DA3 test model through the node over real DDS: metres from a
sparse, outlier-ridden reference depth (also on a slow model), a scale steady under noisy
estimates that follows a scene change, and frames before their CameraInfo kept out."""

import numpy as np
import pytest

pytest.importorskip("rclpy")

from support.metric_node import STRIDE, add_reference_publisher, for_header  # noqa: E402
from support.metric_node import da3_harness_factory  # noqa: E402,F401 (fixture harness_factory)
from support.metric_node import scene_info, send, stamp_of, stamp_of_header  # noqa: E402
from support.node_hooks import OK, WARN  # noqa: E402
from tools.common.metric_scene import HEIGHT, WIDTH, Scene, paint  # noqa: E402
from tools.common.metric_scene import FORWARD, PITCHED_WITH_BOX, sparse_reference  # noqa: E402

from dense_perception.core.conversions import cloud_to_points, image_msg_to_array  # noqa: E402
from dense_perception.ros.messages import array_to_image  # noqa: E402

pytestmark = pytest.mark.ros


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

