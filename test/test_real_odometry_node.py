# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The node's motion from odometry on real frames, over real DDS, played in real time: the shared
7-Scenes frames 0-299 (30 Hz, 10 s) through PyD-Net++ with ``depth_scale_source: motion``, the
trajectory given as a robot's odometry (the camera mounted looking forward, ``camera_in_base``)
at 30 Hz beside the images, at 10 Hz, and at 30 Hz but 200 ms late. Whatever the odometry's
rate or delay, every frame the node finishes once odometry flows has a pose, where the
trajectory has the camera.

The figures (printed with ``-s``): frames finished and with a pose, frames in metres, each
published frame's scale error (median of published / measured depth, minus 1; median and worst
of their sizes) and the TAE of consecutive published frames moved by the true motion
(tools/eval/sequence's measures). The node drops frames while it infers (newest wins), so
consecutive published frames are a few frames apart. On a small machine the motion scale's
optical flow (stage two) sets how many frames are finished, and the figures vary from run to
run with the machine's load: they are printed, not held to a bound."""

import threading
import time

import cv2
import numpy as np
import pytest

pytest.importorskip("rclpy")

from nav_msgs.msg import Odometry  # noqa: E402
from sensor_msgs.msg import CameraInfo  # noqa: E402
from std_msgs.msg import Header  # noqa: E402
from support.motion_bags import CAMERA_IN_BASE  # noqa: E402
from support.ros_harness import wait_until  # noqa: E402
from tools.eval.real_scenes import PYDNET, REAL_SCENES  # noqa: E402

from dense_perception.core.geometry.intrinsics import Intrinsics  # noqa: E402
from dense_perception.core.motion.odometry import mounting_matrix  # noqa: E402
from dense_perception.core.motion.pose import (invert, motion,  # noqa: E402
                                               quaternion_from_rotation)
from dense_perception.core.motion.trajectory import read_tum  # noqa: E402
from dense_perception.core.motion.warp import tae  # noqa: E402
from dense_perception.offline.inputs.camera_yaml import load_camera_info_yaml  # noqa: E402
from dense_perception.ros.messages import array_to_image  # noqa: E402

SEVEN = REAL_SCENES / "7scenes-redkitchen"
MORE = REAL_SCENES / "7scenes-redkitchen-more"
pytestmark = [pytest.mark.ros, pytest.mark.slow, pytest.mark.timeout(300),
              pytest.mark.skipif(not (MORE.is_dir() and PYDNET.is_file()),
                                 reason="../shared/real-scenes/7scenes-redkitchen* is absent")]
T0 = 1000.0  # the first frame's stamp (s)
FRAMES = 300


def stamp(header):
    return header.stamp.sec + header.stamp.nanosec * 1e-9


def to_time(h, t, frame_id):
    return h.header(frame_id=frame_id, sec=int(t), nanosec=int(round((t % 1) * 1e9)))


def play(h, images, info, poses, odometry_every, latency):
    """Frames at 30 Hz in real time, each stamped T0 + i/30; the base's odometry for every
    ``odometry_every``-th frame, stamped with it and sent ``latency`` s after it."""
    odometry_pub = h.client.create_publisher(Odometry, "odometry", 500)
    wait_until(lambda: odometry_pub.get_subscription_count() > 0, 10, "odometry subscribed")
    camera_from_base = invert(mounting_matrix(CAMERA_IN_BASE))
    events = []
    for i in range(FRAMES):
        t = T0 + i / 30
        events.append((i / 30, 0, i))
        if i % odometry_every == 0:
            events.append((i / 30 + latency, 1, i))
    events.sort()
    start = time.monotonic()
    for when, kind, i in events:
        time.sleep(max(0.0, start + when - time.monotonic()))  # the sources' pace
        t = T0 + i / 30
        if kind == 0:
            header = to_time(h, t, "cam_optical")
            info.header = images[i].header = header
            h.info_pub.publish(info)
            h.image_pub.publish(images[i])
        else:
            base = poses[i] @ camera_from_base  # odom_from_base = world_from_camera * camera_from_base
            msg = Odometry()
            msg.header = to_time(h, t, "odom")
            msg.child_frame_id = "base_link"
            p, q = msg.pose.pose.position, msg.pose.pose.orientation
            p.x, p.y, p.z = (float(v) for v in base[:3, 3])
            q.x, q.y, q.z, q.w = (float(v) for v in quaternion_from_rotation(base[:3, :3]))
            odometry_pub.publish(msg)


@pytest.fixture(scope="module")
def scene():
    """Frames 0-299 (10 s): 0-99 and the two stretches after them, one recording."""
    folders = [SEVEN, *(MORE / f"frames-{a:04d}-{a + 99:04d}" for a in (100, 200))]
    colour = [p for folder in folders for p in sorted(folder.glob("frame-*.color.jpg"))]
    poses = [pose for folder in folders
             for _, pose in read_tum(folder / "trajectory.tum").for_frames(100)]
    images = [array_to_image(cv2.cvtColor(cv2.imread(str(p)), cv2.COLOR_BGR2RGB), "rgb8",
                             Header()) for p in colour]
    return images, [str(p).replace(".color.jpg", ".depth.png") for p in colour], poses


def truth(path):
    raw = cv2.imread(path, cv2.IMREAD_UNCHANGED)
    return np.where(raw > 0, raw.astype(np.float32) / 1000, np.nan)


@pytest.mark.parametrize("odometry_every, latency", [(1, 0.0), (3, 0.0), (1, 0.2)],
                         ids=["30 Hz", "10 Hz", "30 Hz, 200 ms late"])
def test_real_frames_have_their_motion_whatever_the_odometrys_rate_or_delay(
        harness_factory, scene, odometry_every, latency):
    images, truths, poses = scene  # truths: the measured depth files
    h = harness_factory({"model_path": str(PYDNET), "model_type": "depth",
                         "input_normalization": "unit", "fit": "stretch",
                         "output_resolution": "input", "depth_scale_source": "motion",
                         "camera_in_base": CAMERA_IN_BASE, "diagnostics_period": 0.5},
                        subscribe=("depth/image", "/diagnostics"))
    h.wait_matched(("depth/image",))
    calibration = load_camera_info_yaml(str(SEVEN / "camera.yaml"))
    info = CameraInfo(width=int(calibration.width), height=int(calibration.height),
                      distortion_model=calibration.distortion_model,
                      d=[float(v) for v in calibration.d], k=[float(v) for v in calibration.k],
                      r=[float(v) for v in calibration.r], p=[float(v) for v in calibration.p])
    kk = np.asarray(info.k, dtype=np.float64).reshape(3, 3)
    k = Intrinsics(kk[0, 0], kk[1, 1], kk[0, 2], kk[1, 2], int(info.width), int(info.height))
    # What the node takes and publishes, read where it does it (called through unchanged).
    channel, taken, published, lock = h.perception.channels[0], [], {}, threading.Lock()
    inputs, publish = channel.motion_inputs, channel.outputs.publish

    def record_pose(header, *args, **kwargs):
        found = inputs(header, *args, **kwargs)
        with lock:
            taken.append((stamp(header), found["pose"], channel.pose_note))
        return found

    def record_depth(products, header, *args, **kwargs):
        if products.depth is not None and products.depth_metric:
            with lock:
                published[round((stamp(header) - T0) * 30)] = products.depth.copy()
        return publish(products, header, *args, **kwargs)
    channel.motion_inputs, channel.outputs.publish = record_pose, record_depth

    play(h, images, info, poses, odometry_every, latency)
    last = T0 + (FRAMES - 1) / 30
    wait_until(lambda: any(abs(s - last) < 1e-6 for s, _, _ in taken), 60, "the last frame")
    # (the frames' count and the scales' tally are read at different moments of a frame's
    # finish: the status that has both at the last frame)
    _, _, values = h.diagnostics(lambda d: d[2].get("frames processed") == str(len(taken))
                                 and d[2].get("frames in metres", "").endswith(
                                     f" of {len(taken)}"), timeout=30)
    # The scale's error and the pose clock's offset are reported over DDS.
    assert "depth scale error, 2 sigma (%)" in values and "pose clock offset (ms)" in values
    # The frames in metres so far, of those finished, and the withheld ones by kind of reason.
    assert values["frames in metres"] == f"{len(published)} of {len(taken)}"
    assert len(published) == len(taken) or " x " in values["frames withheld, by reason"]
    # The motion scale measured off the frame path, in its own worker: frames it measured
    # and frames it skipped (busy: the newest wins) are of the posed frames at most.
    measured = int(values["motion scale frames measured"])
    skipped = int(values["motion scale frames skipped (worker busy)"])
    assert measured > 0 and measured + skipped <= len(taken)
    assert float(values["motion scale measurement (ms)"]) > 0

    flowing = [f for f in taken if f[2] != "no odometry received yet"]
    posed = [f for f in flowing if f[1] is not None]
    for t, pose, _ in posed:  # the camera where the trajectory has it (10 Hz: interpolated)
        i = round((t - T0) * 30)
        # The samples sent around frame i, interpolated linearly (written out here).
        j0 = i - i % odometry_every
        j1 = min(j0 + odometry_every, len(poses) - 1)
        a = 0.0 if j1 == j0 else (i - j0) / (j1 - j0)
        expected = (1 - a) * poses[j0][:3, 3] + a * poses[j1][:3, 3]
        assert np.linalg.norm(pose[:3, 3] - expected) < 0.005, (i, pose, expected)
    idx = sorted(published)
    errors = [abs(float(np.nanmedian(published[i] / truth(truths[i]))) - 1) for i in idx]
    flicker = [tae(published[a], published[b], k, motion(poses[a], poses[b]))
               for a, b in zip(idx, idx[1:])]
    flicker = [f for f in flicker if f is not None]
    print(f"\n{odometry_every=} {latency=}: finished {len(taken)}, with odometry flowing "
          f"{len(flowing)}, with a pose {len(posed)}, in metres {len(idx)}; scale error median "
          f"{np.median(errors) if errors else float('nan'):.3f} worst "
          f"{max(errors) if errors else float('nan'):.3f}; TAE "
          f"{np.mean(flicker) if flicker else float('nan'):.4f} over {len(flicker)} pairs; "
          f"no pose: {sorted({n for _, p, n in flowing if p is None})}")
    # 10 Hz: the last two frames come after the last message, which the recording ends with
    assert len(posed) >= 0.9 * len(flowing) and len(flowing) >= 5, flowing
