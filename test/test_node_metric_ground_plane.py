# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Metric depth from the relative DA3 test model through the node over real DDS: metres from
the ground plane, never from a desk taken for the floor, and a held scale's expiry."""

import numpy as np
import pytest

pytest.importorskip("rclpy")

from support.metric_node import STRIDE, for_header, scene_info, send  # noqa: E402
from support.metric_node import da3_harness_factory  # noqa: E402,F401 (fixture harness_factory)
from support.metric_node import stamp_of  # noqa: E402
from support.node_hooks import OK, WARN  # noqa: E402
from tools.common.metric_scene import HEIGHT, WIDTH, Scene, paint  # noqa: E402
from tools.common.metric_scene import FORWARD, PITCHED_WITH_BOX  # noqa: E402
from tools.common.metric_scene import DESK_BESIDE_FLOOR, DESK_ONLY  # noqa: E402

from dense_perception.core.conversions import cloud_to_points, image_msg_to_array  # noqa: E402

pytestmark = pytest.mark.ros


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
    # The age rule alone: no error bound (max_scale_error 1).
    h = harness_factory({"depth_scale_source": "ground_plane", "camera_height": FORWARD.height,
                         "depth_scale_time_constant": 1.0, "depth_scale_max_age": 3.0,
                         "max_scale_error": 1.0},
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

