"""Real cameras through the node over real DDS: a raw barrel-distorted camera and image_proc's
rectified output at 1280x720 with default parameters, checked against known geometry and against
depth_image_proc's own back-projection of what the node publishes."""

import numpy as np
import pytest

pytest.importorskip("rclpy")

import camera_scenes as cs  # noqa: E402
from conftest import TIPS_TEST_MODEL  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from ros_harness import Harness  # noqa: E402
from sensor_msgs.msg import CameraInfo, RegionOfInterest  # noqa: E402

from dense_perception.core.conversions import cloud_to_points, image_msg_to_array  # noqa: E402

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
