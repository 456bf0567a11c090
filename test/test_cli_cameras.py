# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""``dense-perception process`` with several ``--topic`` values from one bag: one model, each
camera's outputs in its own image topic's namespace, with its own headers and intrinsics (as
the node's ``cameras`` parameter does)."""

import numpy as np
import pytest

from support.common import TIPS_TEST_MODEL, run_cli as run

pytest.importorskip("rosbags")

from rosbags.rosbag2 import StoragePlugin, Writer  # noqa: E402

from support.bag_maker import (STAMP0, TS, frame_of, log_time, read_bag,  # noqa: E402
                       tips_depth)
from support.camera_bags import CAMERAS, FRAMES, header, write_two_camera_bag  # noqa: E402
from dense_perception.core import conversions  # noqa: E402
from dense_perception.core.geometry.intrinsics import Intrinsics  # noqa: E402
from dense_perception.offline.inputs import bag_io  # noqa: E402

def test_two_topics_write_each_camera_under_its_own_namespace(tmp_path, capsys):
    src = write_two_camera_bag(tmp_path / "two")
    out = tmp_path / "out"
    code, stdout, stderr = run(["process", src, "--model", TIPS_TEST_MODEL, "--backend", "cpu",
                                "--topic", "/front/image_raw", "--topic", "/rear/image_raw",
                                "--output-resolution", "input", "--out", out], capsys)
    assert code == 0, stderr
    assert f"{2 * FRAMES} frames" in stdout
    msgs, _ = read_bag(out)
    for camera, (colour, fx, (width, height), frame_id) in CAMERAS.items():
        depths = msgs[f"/{camera}/depth/image"]
        infos = msgs[f"/{camera}/depth/camera_info"]
        assert len(depths) == len(infos) == FRAMES
        for i, ((_, depth), (_, info)) in enumerate(zip(depths, infos)):
            want = header(camera, i)
            for msg in (depth, info):
                assert msg.header.frame_id == frame_id
                assert (msg.header.stamp.sec, msg.header.stamp.nanosec) == \
                    (want.stamp.sec, want.stamp.nanosec)
            # the test model's depth of this camera's colour (bag_maker's closed form)
            values = conversions.image_msg_to_array(depth)
            assert values.shape == (height, width)
            # fit crop: the model sees the centre square (48x48); outside it is NaN
            centre = values[:, (width - height) // 2:(width + height) // 2]
            assert np.isfinite(centre).all() and np.isfinite(values).sum() == height * height
            np.testing.assert_allclose(centre, tips_depth(colour), rtol=2e-3)
            np.testing.assert_allclose(
                info.k, [fx, 0, (width - 1) / 2, 0, fx, (height - 1) / 2, 0, 0, 1], rtol=1e-6)
        assert len(msgs[f"/{camera}/segmentation/classes"]) == 1


def test_several_topics_refuse_one_camera_options(tmp_path, capsys):
    src = write_two_camera_bag(tmp_path / "two")
    code, _, stderr = run(["process", src, "--model", TIPS_TEST_MODEL, "--backend", "cpu",
                           "--topic", "/front/image_raw", "--topic", "/rear/image_raw",
                           "--out-namespace", "/x", "--out", tmp_path / "out"], capsys)
    assert code != 0 and "--out-namespace names one camera's topic" in stderr


# ---- each camera its own calibration -------------------------------------------------------------
def write_front_info_only_bag(path):
    """/front/image and /rear/image, two cameras of one model (64x48 frames), but a CameraInfo
    for the front camera only."""
    with Writer(path, version=9, storage_plugin=StoragePlugin.MCAP) as w:
        front_info = w.add_connection("/front/camera_info", bag_io.CAMERA_INFO, typestore=TS)
        images = {camera: w.add_connection(f"/{camera}/image", bag_io.IMAGE, typestore=TS)
                  for camera in CAMERAS}
        for i in range(FRAMES):
            colour, fx, (width, height), _ = CAMERAS["front"]
            k = Intrinsics(fx=fx, fy=fx, cx=(width - 1) / 2, cy=(height - 1) / 2,
                           width=width, height=height)
            w.write(front_info, log_time(i), TS.serialize_cdr(
                bag_io.intrinsics_to_camera_info(k, header("front", i)), bag_io.CAMERA_INFO))
            for offset, camera in enumerate(CAMERAS):
                colour = CAMERAS[camera][0]  # the front's frame size for both
                w.write(images[camera], log_time(i) + 1_000_000 + offset, TS.serialize_cdr(
                    bag_io.array_to_image(frame_of(colour, width, height), "rgb8",
                                         header(camera, i)), bag_io.IMAGE))
    return path


def test_a_camera_without_camera_info_never_gets_another_cameras(tmp_path, capsys):
    """--topic /front/image --topic /rear/image, a CameraInfo for the front only: the rear's
    depth/camera_info is the 60 deg pinhole guess of its own frame (it carried the front's
    fx = 100, silently), and stderr and summary.json say so."""
    import json
    import math
    src = write_front_info_only_bag(tmp_path / "front_only")
    out = tmp_path / "out"
    code, _, stderr = run(["process", src, "--model", TIPS_TEST_MODEL, "--backend", "cpu",
                           "--topic", "/front/image", "--topic", "/rear/image",
                           "--output-resolution", "input", "--outputs", "depth",
                           "--out", out], capsys)
    assert code == 0, stderr
    msgs, _ = read_bag(out)
    front = [m for _, m in msgs["/front/depth/camera_info"]]
    rear = [m for _, m in msgs["/rear/depth/camera_info"]]
    assert len(front) == len(rear) == FRAMES
    guess = (64 / 2) / math.tan(math.radians(60.0) / 2)  # the rear frame's own pinhole guess
    for f, r in zip(front, rear):
        assert f.k[0] == pytest.approx(CAMERAS["front"][1])
        assert r.k[0] == pytest.approx(guess) and r.k[0] != pytest.approx(f.k[0])
    assert "no CameraInfo for /rear/image" in stderr and "pinhole guess" in stderr
    assert "/front/image" not in stderr
    summary = json.loads((out / "summary.json").read_text())
    assert [w for w in summary["warnings"] if "no CameraInfo for /rear/image" in w]
    assert summary["camera_infos"] == [FRAMES, 0]
    assert summary["camera_info_topic"][0] == "/front/camera_info"
    assert summary["camera_info_topic"][1].startswith("none")


def test_camera_info_topics_pair_with_topics_in_order(tmp_path, capsys):
    """CameraInfo topics away from the images (/calib/front, /calib/rear): without a pairing
    each camera gets the guess (and a warning); with one --camera-info-topic per --topic, in
    the same order, each its own calibration. Refused when the counts differ."""
    src = write_two_camera_bag(tmp_path / "two", info_topic="/calib/{camera}")
    topics = ["--topic", "/front/image_raw", "--topic", "/rear/image_raw"]
    for pairing in ([], ["--camera-info-topic", "/calib/front",
                         "--camera-info-topic", "/calib/rear"]):
        out = tmp_path / f"out{len(pairing)}"
        code, _, stderr = run(["process", src, "--model", TIPS_TEST_MODEL, "--backend", "cpu",
                               *topics, *pairing, "--output-resolution", "input",
                               "--outputs", "depth", "--out", out], capsys)
        assert code == 0, stderr
        assert ("no CameraInfo for /front/image_raw" in stderr) == (not pairing)
        msgs, _ = read_bag(out)
        for camera, (_, fx, (width, _), _) in CAMERAS.items():
            want = fx if pairing else (width / 2) / np.tan(np.radians(30.0))
            got = [m.k[0] for _, m in msgs[f"/{camera}/depth/camera_info"]]
            np.testing.assert_allclose(got, [want] * FRAMES, rtol=1e-6)
    code, _, stderr = run(["process", src, "--model", TIPS_TEST_MODEL, "--backend", "cpu",
                           "--topic", "/front/image_raw", "--topic", "/rear/image_raw",
                           "--camera-info-topic", "/front/camera_info",
                           "--out", tmp_path / "refused"], capsys)
    assert code == 2 and "give one per --topic, in the same order" in stderr


def test_two_cameras_on_one_moving_robot_each_keep_their_own_motion_state(tmp_path, capsys):
    """Two cameras of one robot driving sideways past a flat wall, each seeing another colour
    (so another depth, 12 % apart: close enough to be blended were their streams mixed). Each
    camera's depth, aligned over time with its own past, stays its own colour's closed form;
    a motion state shared by the two would blend one camera's depth into the other's."""
    from support.motion_bags import CAMERA_IN_BASE, ODOMETRY, header_at, odometry_msg
    colours = {"front": (100, 100, 100), "rear": (130, 100, 100)}
    times = [0.1 * i for i in range(6)]
    path = tmp_path / "moving"
    with Writer(path, version=9, storage_plugin=StoragePlugin.MCAP) as w:
        odo = w.add_connection("/odom", ODOMETRY, typestore=TS)
        for i in range(13):  # sideways (base y) at 0.2 m/s, 20 Hz
            t = 0.05 * i - 0.05
            w.write(odo, int((STAMP0 + t) * 1e9) + 1, TS.serialize_cdr(
                odometry_msg(t, 0.0, (0.0, 0.0, 0.0, 1.0), 0.2 * t), ODOMETRY))
        for offset, (camera, colour) in enumerate(colours.items()):
            img = w.add_connection(f"/{camera}/image_raw", bag_io.IMAGE, typestore=TS)
            for t in times:
                w.write(img, int((STAMP0 + t) * 1e9) + 2 + offset, TS.serialize_cdr(
                    bag_io.array_to_image(frame_of(colour, 48, 48), "rgb8",
                                          header_at(t, f"{camera}_optical")), bag_io.IMAGE))
    out = tmp_path / "out"
    code, _, stderr = run(["process", path, "--model", TIPS_TEST_MODEL, "--backend", "cpu",
                           "--topic", "/front/image_raw", "--topic", "/rear/image_raw",
                           "--odometry-topic", "/odom",
                           "--camera-in-base", *map(str, CAMERA_IN_BASE * 2),
                           "--outputs", "depth", "--output-resolution", "input",
                           "--out", out], capsys)
    assert code == 0, stderr
    msgs, _ = read_bag(out)
    for camera, colour in colours.items():
        depths = [conversions.image_msg_to_array(m) for _, m in msgs[f"/{camera}/depth/image"]]
        assert len(depths) == len(times)
        for depth in depths:
            valid = np.isfinite(depth)
            assert valid.mean() > 0.9
            np.testing.assert_allclose(depth[valid], tips_depth(colour), rtol=2e-3)
