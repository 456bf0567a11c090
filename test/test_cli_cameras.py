"""``dense-perception process`` with several ``--topic`` values from one bag: one model, each
camera's outputs in its own image topic's namespace, with its own headers and intrinsics (as
the node's ``cameras`` parameter does)."""

import numpy as np
import pytest

from support.common import TIPS_TEST_MODEL, run_cli as run

pytest.importorskip("rosbags")

from rosbags.rosbag2 import StoragePlugin, Writer  # noqa: E402

from support.bag_maker import (STAMP0, T, TS, frame_of, log_time, read_bag,  # noqa: E402
                       tips_depth)
from dense_perception.core import conversions  # noqa: E402
from dense_perception.core.intrinsics import Intrinsics  # noqa: E402
from dense_perception.offline import bagio  # noqa: E402

# camera -> (colour, fx, frame size, frame_id); every value differs between the two
CAMERAS = {"front": ((40, 200, 10), 100.0, (64, 48), "front_optical"),
           "rear": ((230, 60, 120), 60.0, (48, 48), "rear_optical")}
FRAMES = 3


def header(camera, i):
    return T["std_msgs/msg/Header"](
        stamp=T["builtin_interfaces/msg/Time"](sec=STAMP0 + i, nanosec=1000 + i
                                               + (500 if camera == "rear" else 0)),
        frame_id=CAMERAS[camera][3])


def write_two_camera_bag(path):
    with Writer(path, version=9, storage_plugin=StoragePlugin.MCAP) as w:
        for offset, camera in enumerate(CAMERAS):
            colour, fx, (width, height), _ = CAMERAS[camera]
            img = w.add_connection(f"/{camera}/image_raw", bagio.IMAGE, typestore=TS)
            info = w.add_connection(f"/{camera}/camera_info", bagio.CAMERA_INFO, typestore=TS)
            for i in range(FRAMES):
                k = Intrinsics(fx=fx, fy=fx, cx=(width - 1) / 2, cy=(height - 1) / 2,
                               width=width, height=height)
                w.write(info, log_time(i) + offset, TS.serialize_cdr(
                    bagio.intrinsics_to_camera_info(k, header(camera, i)), bagio.CAMERA_INFO))
                w.write(img, log_time(i) + offset + 1_000_000, TS.serialize_cdr(
                    bagio.array_to_image(frame_of(colour, width, height), "rgb8",
                                         header(camera, i)), bagio.IMAGE))
    return path


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
