# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Real cameras through the node over real DDS: a raw barrel-distorted camera and image_proc's
rectified output at 1280x720 with default parameters, checked against known geometry and against
depth_image_proc's own back-projection of what the node publishes."""

import numpy as np
import pytest

pytest.importorskip("rclpy")

import math  # noqa: E402

import support.camera_scenes as cs  # noqa: E402
import rclpy  # noqa: E402
from support.common import GRAPH_TIMEOUT, TIPS_TEST_MODEL  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy  # noqa: E402
from support.ros_harness import Harness, camera_info, wait_until  # noqa: E402
from sensor_msgs.msg import CameraInfo, RegionOfInterest  # noqa: E402

from dense_perception.core.geometry.camera_info_choice import (AFTER_WITHIN_SLOP,  # noqa: E402
                                                      LATEST_BEFORE)
from dense_perception.core.conversions import cloud_to_points, image_msg_to_array  # noqa: E402
from dense_perception.ros.camera_input import camera_info_qos  # noqa: E402

pytestmark = pytest.mark.ros
WARN = 1


def camera_info_msg(camera: cs.Camera) -> CameraInfo:
    info = camera.camera_info()
    return CameraInfo(width=info.width, height=info.height, distortion_model=info.distortion_model,
                      d=info.d, k=info.k, r=info.r, p=info.p, binning_x=info.binning_x,
                      binning_y=info.binning_y, roi=RegionOfInterest())


@pytest.fixture
def harness():
    h = Harness({"model_path": TIPS_TEST_MODEL},
                subscribe=("depth/image", "depth/camera_info", "points", "/diagnostics"))
    yield h
    h.close()


def frame_outputs(h, sec):
    at = dict(where=lambda m: m.header.stamp.sec == sec, timeout=30.0)
    return (h.wait_for("depth/image", **at)[0], h.wait_for("depth/camera_info", **at)[0],
            h.wait_for("points", **at)[0])


def check_like_depth_image_proc(depth, info, cloud):
    """point_cloud_xyz on (depth/image, depth/camera_info) gives our cloud (stride 2 here)."""
    assert list(info.d) == [0.0] * 5 and list(info.r) == [1.0, 0, 0, 0, 1.0, 0, 0, 0, 1.0]
    assert list(info.k) == [info.p[i] for i in (0, 1, 2, 4, 5, 6, 8, 9, 10)]
    assert (info.width, info.height) == (depth.shape[1], depth.shape[0])
    theirs = cs.depth_image_proc_points(depth, list(info.p))[::2, ::2].reshape(-1, 3)
    theirs = theirs[np.isfinite(theirs[:, 2])]
    ours = np.stack([cloud[n].reshape(-1) for n in ("x", "y", "z")], axis=-1)
    assert ours.shape == theirs.shape
    np.testing.assert_allclose(ours, theirs, rtol=2e-6, atol=1e-6)


def test_raw_and_rectified_cameras_over_dds(harness):
    h = harness
    h.wait_matched(("depth/image", "depth/camera_info", "points"))
    results = {}
    for sec, camera, rectified in ((10, cs.BARREL, False), (20, cs.RECTIFIED, True)):
        if rectified:
            assert h.node.set_parameters([Parameter("input_rectified", value=True)])[0].successful
        h.publish_frame(cs.film(camera, cs.PLANE, rectified), h.header(sec=sec),
                        info=camera_info_msg(camera))
        depth_msg, info, cloud_msg = frame_outputs(h, sec)
        cloud = cloud_to_points(cloud_msg)
        check_like_depth_image_proc(image_msg_to_array(depth_msg), info, cloud)
        off = cs.PLANE.plane_distance(cloud["x"], cloud["y"], cloud["z"])
        results[camera.name] = float(np.percentile(off, 95))
        assert cloud.size > 0.9 * (448 * 448 / 4)
        said = "rectified input (image_rect): P" if rectified else \
            "raw input, plumb_bob distortion: rectified before the model (P)"
        level, _, values = h.diagnostics(lambda d: d[2].get("camera model") == said)
        assert level == 0, values
    print({name: f"{p * 1000:.1f} mm" for name, p in results.items()})
    assert max(results.values()) < 0.020, results

    # An unknown distortion model: a throttled warning, diagnostics say so, frames keep coming.
    assert h.node.set_parameters([Parameter("input_rectified", value=False)])[0].successful
    odd = camera_info_msg(cs.BARREL)
    odd.distortion_model = "kannala_brandt_custom"
    h.publish_frame(cs.film(cs.PINHOLE, cs.PLANE), h.header(sec=30), info=odd)
    frame_outputs(h, 30)
    level, message, values = h.diagnostics(
        lambda d: "unknown distortion model" in d[2].get("camera model", ""), timeout=15.0)
    assert level == WARN and "kannala_brandt_custom" in message


# ---- which CameraInfo, and how it is received -----------------------------------------------------
SMALL = (64, 48)  # frame size; with output_resolution: input, depth/camera_info's K is the camera's
GUESSED_FX = (SMALL[0] / 2) / math.tan(math.radians(60.0) / 2)  # fallback_hfov_deg 60


def depth_info_at(h, sec, nanosec=0):
    """depth/camera_info of the frame stamped sec.nanosec."""
    return h.wait_for("depth/camera_info", timeout=30.0, where=lambda m: (
        m.header.stamp.sec, m.header.stamp.nanosec) == (sec, nanosec))[0]


@pytest.mark.timeout(120)
def test_camera_info_stamped_just_after_the_image_is_used():
    """A driver that stamps CameraInfo on another clock, 0.02 s after the image: the real K
    within camera_info_slop (diagnostics say so), the pinhole guess beyond it."""
    h = Harness({"model_path": TIPS_TEST_MODEL, "output_resolution": "input",
                 "camera_info_slop": 0.5}, subscribe=("depth/camera_info", "/diagnostics"))
    try:
        h.wait_matched(("depth/camera_info",))
        info = camera_info(*SMALL, fx=300.0)
        frame = np.zeros((SMALL[1], SMALL[0], 3), np.uint8)
        # The image first, its CameraInfo (stamped 10.02) just after: the frame waits for it.
        h.player.publish_frame(frame, h.header(sec=10))
        info.header = h.header(sec=10, nanosec=20_000_000)
        h.info_pub.publish(info)
        np.testing.assert_allclose(depth_info_at(h, 10).k, info.k)
        level, _, values = h.diagnostics(lambda d: d[2]["frames processed"] == "1")
        assert values["camera_info"] == AFTER_WITHIN_SLOP and level == 0, values

        assert h.node.set_parameters([Parameter("camera_info_slop", value=0.05)])[0].successful
        h.player.publish_frame(frame, h.header(sec=9, nanosec=980_000_000))  # 0.04 s before
        np.testing.assert_allclose(depth_info_at(h, 9, 980_000_000).k, info.k)
        h.player.publish_frame(frame, h.header(sec=9, nanosec=960_000_000))  # 0.06 s before
        assert depth_info_at(h, 9, 960_000_000).k[0] == pytest.approx(GUESSED_FX)
        level, message, _ = h.diagnostics(lambda d: d[2]["frames processed"] == "3")
        assert level == WARN and "guess" in message
    finally:
        h.close()


@pytest.mark.timeout(120)
@pytest.mark.parametrize("driver_first", [True, False], ids=["driver_first", "node_first"])
def test_latched_camera_info_is_used(driver_first):
    """A driver that publishes its CameraInfo once, transient-local: before the node exists, or
    after the node subscribed (then the node subscribes again, transient-local, to match)."""
    context = rclpy.Context()
    rclpy.init(context=context)
    driver = rclpy.create_node("latching_driver", context=context)
    info = camera_info(*SMALL, fx=300.0)
    info.header.stamp.sec = 1

    def start_driver():
        latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL)
        driver.create_publisher(CameraInfo, "camera_info", latched).publish(info)
    if driver_first:
        start_driver()
    h = None
    try:
        h = Harness({"model_path": TIPS_TEST_MODEL, "output_resolution": "input"}, subscribe=())
        h.client.destroy_publisher(h.info_pub)  # the latching driver is the only one
        h.subscribe("depth/camera_info")
        h.subscribe("/diagnostics")
        wait_until(lambda: h.image_pub.get_subscription_count() > 0, 30, "the node subscribes")
        if not driver_first:
            start_driver()

        def durabilities():
            return {i.qos_profile.durability for i in
                    h.client.get_subscriptions_info_by_topic("/camera_info")
                    if i.node_name == "dense_perception"}
        wait_until(lambda: durabilities() == {DurabilityPolicy.TRANSIENT_LOCAL}, GRAPH_TIMEOUT,
                   "a transient-local camera_info subscription")
        wait_until(lambda: len(h.perception.channels[0].camera_infos) == 1, 10,
                   "the node receives the latched CameraInfo")
        h.player.publish_frame(np.zeros((SMALL[1], SMALL[0], 3), np.uint8), h.header(sec=10))
        np.testing.assert_allclose(depth_info_at(h, 10).k, info.k)
        level, _, values = h.diagnostics(lambda d: d[2]["frames processed"] == "1")
        assert values["camera_info"] == LATEST_BEFORE and level == 0, values
    finally:
        if h is not None:
            h.close()
        driver.destroy_node()
        rclpy.shutdown(context=context)


def test_camera_info_qos_choices():
    """camera_info_qos: auto goes transient-local only when every publisher is (a volatile
    publisher would not match a transient-local subscription)."""
    def offered(durability, reliability=ReliabilityPolicy.RELIABLE):
        return QoSProfile(depth=1, durability=durability, reliability=reliability)
    tl, vol = DurabilityPolicy.TRANSIENT_LOCAL, DurabilityPolicy.VOLATILE
    best_effort = ReliabilityPolicy.BEST_EFFORT

    def chosen(mode, input_mode, pubs):
        qos = camera_info_qos(mode, input_mode, pubs)
        return qos.durability, qos.reliability
    reliable = ReliabilityPolicy.RELIABLE
    assert chosen("auto", "auto", [offered(tl)]) == (tl, reliable)
    assert chosen("auto", "sensor_data", [offered(tl, best_effort)]) == (tl, best_effort)
    assert chosen("auto", "auto", [offered(tl), offered(vol)]) == (vol, reliable)
    assert chosen("auto", "auto", [offered(vol, best_effort)]) == (vol, best_effort)
    assert chosen("auto", "auto", []) == (vol, best_effort)  # no publisher yet: matches any
    assert chosen("transient_local", "auto", []) == (tl, reliable)
    assert chosen("reliable", "sensor_data", [offered(tl)]) == (vol, reliable)
    assert chosen("sensor_data", "reliable", []) == (vol, best_effort)
