"""Through the node over DDS: at the top of a drop the node publishes metres
from the floor the robot stands on, not from the lower floor beyond the edge.

Level camera 1.0 m up (fx 600 on the 504 x 896 frame, ``fit:=stretch``); its floor ends 2.2 m
ahead (39 % of the lower view) and drops 0.8 m; a wall 5 m ahead. The frame is painted so the
DA3 test model outputs depth / DROP_S. The old rule took the lower floor: with
``depth_scale_min_inliers:=0.15`` the wall was published at 2.0 m; with the default 0.3 nothing.
"""

import numpy as np
import pytest

pytest.importorskip("rclpy")

from support.floor_scenes import DROP_FX, DROP_S, HEIGHT, WIDTH, drop_scene  # noqa: E402
from support.common import DA3_TEST_MODEL  # noqa: E402
from support.ros_harness import camera_info  # noqa: E402
from tools.metric_scene import paint  # noqa: E402

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
