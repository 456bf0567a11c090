# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Through the node over DDS: at the top of a drop the node publishes metres
from the floor the robot stands on, not from the lower floor beyond the edge.

Level camera 1.0 m up (fx 600 on the 504 x 896 frame, ``fit:=stretch``); its floor ends 2.2 m
ahead (39 % of the lower view) and drops 0.8 m; a wall 5 m ahead. The frame is painted so the
DA3 test model outputs depth / DROP_S. The old rule took the lower floor: with
``depth_scale_min_inliers:=0.15`` the wall was published at 2.0 m; with the default 0.3 nothing.
The same drop seen by a landscape camera stretched onto the model's portrait grid, painted at
several scales, gives the same metres on the model's grid and on the input's.
"""

import numpy as np
import pytest

pytest.importorskip("rclpy")

from support.floor_scenes import DROP_FX, DROP_S, HEIGHT, WIDTH, drop_scene  # noqa: E402
from support.floor_scenes import GRID_F, GRID_HEIGHT, GRID_WIDTH, grid_scene  # noqa: E402
from support.common import DA3_TEST_MODEL  # noqa: E402
from support.ros_harness import camera_info  # noqa: E402
from tools.common.metric_scene import paint  # noqa: E402

from dense_perception.core.conversions import cloud_to_points, image_msg_to_array  # noqa: E402

pytestmark = pytest.mark.ros
OK = 0
STRIDE = 4


@pytest.mark.timeout(120)
@pytest.mark.parametrize("min_inliers", [0.15, 0.3])
def test_the_floor_at_a_drop_gives_metres(harness_factory, min_inliers):
    h = harness_factory({"model_path": DA3_TEST_MODEL, "depth_scale_source": "ground_plane",
                         "camera_height": 1.0, "fit": "stretch",
                         "depth_scale_min_inliers": min_inliers,
                         "points_organized": True, "points_stride": STRIDE},
                        subscribe=("depth/image", "points", "/diagnostics"))
    h.wait_matched(("depth/image", "points"))
    header = h.header(sec=80)
    z = drop_scene()
    h.publish_frame(paint(z / DROP_S), header, info=camera_info(WIDTH, HEIGHT, fx=DROP_FX))
    at = lambda m: m.header.stamp == header.stamp  # noqa: E731

    depth = image_msg_to_array(h.wait_for("depth/image", where=at)[0])
    assert np.abs(depth / z - 1).max() < 0.05      # every pixel

    # Truth by the pixel: a level camera, so metres below it = (v - cy) / fx x z.
    v = np.arange(HEIGHT)[:, None] - (HEIGHT - 1) / 2.0
    below = np.broadcast_to(v / DROP_FX * z, z.shape)[::STRIDE, ::STRIDE]
    ahead = z[::STRIDE, ::STRIDE]
    cloud = cloud_to_points(h.wait_for("points", where=at)[0])
    xyz = np.stack([cloud["x"], cloud["y"], cloud["z"]], axis=-1).astype(np.float64)
    own = (np.abs(below - 1.0) < 1e-6) & (ahead <= 2.2)
    lower = np.abs(below - 1.8) < 1e-6
    wall = np.abs(ahead - 5.0) < 1e-6
    assert own.sum() > 1000 and lower.sum() > 300 and wall.sum() > 1000
    assert np.abs(xyz[own][:, 1] / 1.0 - 1).max() < 0.05    # the robot's floor, 1.0 m below
    assert np.abs(xyz[lower][:, 1] / 1.8 - 1).max() < 0.05  # the floor beyond the edge
    assert np.abs(xyz[wall][:, 2] / 5.0 - 1).max() < 0.05   # the wall at 5 m, not 2.0 m

    level, message, values = h.diagnostics(lambda d: d[2]["frames processed"] == "1")
    assert level == OK, message
    assert float(values["depth scale (m per unit)"]) == pytest.approx(DROP_S, rel=0.05)


def grid_truth(width, height):
    """Metres below and ahead of the camera at each published pixel (``width`` x ``height``, the
    whole 1280x720 frame stretched onto it), by the grid scene's geometry: a level camera 1.0 m
    up, its floor to 2.2 m ahead, the lower floor 1.8 m down to the wall at 5 m; NaN within a
    pixel of an edge between them."""
    v = (np.arange(height) + 0.5) * GRID_HEIGHT / height - 0.5    # camera rows
    slope = np.broadcast_to(((v - (GRID_HEIGHT - 1) / 2.0) / GRID_F)[:, None], (height, width))
    pixel = GRID_HEIGHT / height / GRID_F                         # one published row, in slope
    with np.errstate(divide="ignore"):
        own, lower = 1.0 / slope, 1.8 / slope
    below, ahead = np.full(slope.shape, np.nan), np.full(slope.shape, np.nan)
    on_own = (slope > 0) & (own <= 2.2) & (1.0 / (slope - pixel) <= 2.2)
    on_lower = (slope > 0) & (own > 2.2) & (1.8 / (slope - pixel) < 5.0) & \
        (1.0 / (slope + pixel) > 2.2)
    on_wall = (slope <= 0) | (1.8 / (slope + pixel) > 5.0)
    below[on_own], ahead[on_own] = 1.0, own[on_own]
    below[on_lower], ahead[on_lower] = 1.8, lower[on_lower]
    below[on_wall], ahead[on_wall] = slope[on_wall] * 5.0, 5.0
    return below, ahead


@pytest.mark.timeout(120)
@pytest.mark.parametrize("grid", ["model", "input"])
@pytest.mark.parametrize("s", [1.0, 1.02, 1.05, 1.08, 1.13])
def test_the_drop_through_a_stretched_frame_on_either_grid(harness_factory, grid, s):
    """A landscape 1280x720 camera (F = 500) stretched onto the test model's portrait grid
    (``fit:=stretch``), the drop scene painted at s: whichever grid the node publishes on, the
    robot's floor is 1.0 m below the camera, the lower floor 1.8 m and the wall 5 m ahead
    within 2 %, and the scale is s within 2 % (before: 0.93 m and 4.65 m on the model grid)."""
    h = harness_factory({"model_path": DA3_TEST_MODEL, "depth_scale_source": "ground_plane",
                         "camera_height": 1.0, "fit": "stretch", "output_resolution": grid,
                         "depth_scale_min_inliers": 0.15, "points_organized": True,
                         "points_stride": STRIDE},
                        subscribe=("depth/image", "points", "/diagnostics"))
    h.wait_matched(("depth/image", "points"))
    header = h.header(sec=90)
    h.publish_frame(paint(grid_scene() / s), header,
                    info=camera_info(GRID_WIDTH, GRID_HEIGHT, fx=GRID_F))
    at = lambda m: m.header.stamp == header.stamp  # noqa: E731

    depth = image_msg_to_array(h.wait_for("depth/image", where=at)[0])
    assert depth.shape == ((GRID_HEIGHT, GRID_WIDTH) if grid == "input" else (896, 504))
    below, ahead = (x[::STRIDE, ::STRIDE] for x in grid_truth(depth.shape[1], depth.shape[0]))
    cloud = cloud_to_points(h.wait_for("points", where=at)[0])
    xyz = np.stack([cloud["x"], cloud["y"], cloud["z"]], axis=-1).astype(np.float64)
    own, lower, wall = below == 1.0, below == 1.8, ahead == 5.0
    assert own.sum() > 500 and lower.sum() > 100 and wall.sum() > 500
    assert np.abs(xyz[own][:, 1] / 1.0 - 1).max() < 0.02    # the robot's floor, 1.0 m below
    assert np.abs(xyz[own][:, 2] / ahead[own] - 1).max() < 0.02
    assert np.abs(xyz[lower][:, 1] / 1.8 - 1).max() < 0.02  # the floor beyond the edge
    assert np.abs(xyz[wall][:, 2] / 5.0 - 1).max() < 0.02   # the wall at 5 m

    level, message, values = h.diagnostics(lambda d: d[2]["frames processed"] == "1")
    assert level == OK, message
    assert float(values["depth scale (m per unit)"]) == pytest.approx(s, rel=0.02)
