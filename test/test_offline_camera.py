# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""``dense-perception process`` on a bag from a real camera: the bag's CameraInfo is used as the
node uses it (raw distorted frames rectified; ``--input-rectified`` for image_rect topics)."""

import numpy as np
import pytest

import support.camera_scenes as cs
from support.common import TIPS_TEST_MODEL

pytest.importorskip("rosbags")

from rosbags.rosbag2 import Reader, StoragePlugin, Writer  # noqa: E402

from dense_perception.core import conversions  # noqa: E402
from dense_perception.offline import cli  # noqa: E402
from dense_perception.offline.inputs import bag_io  # noqa: E402

TS = bag_io.TYPESTORE
T = TS.types


def write_camera_bag(path, camera, rectified):
    """One 1280x720 frame of the plane and its CameraInfo, on /cam/image_{raw,rect}."""
    header = T["std_msgs/msg/Header"](stamp=T["builtin_interfaces/msg/Time"](sec=7, nanosec=0),
                                      frame_id="cam_optical_frame")
    image = bag_io.array_to_image(cs.film(camera, cs.PLANE, rectified), "rgb8", header)
    info = camera.camera_info()
    info_msg = T["sensor_msgs/msg/CameraInfo"](
        header=header, height=info.height, width=info.width,
        distortion_model=info.distortion_model, d=np.array(info.d, np.float64),
        k=np.array(info.k, np.float64), r=np.array(info.r, np.float64),
        p=np.array(info.p, np.float64), binning_x=0, binning_y=0,
        roi=T["sensor_msgs/msg/RegionOfInterest"](x_offset=0, y_offset=0, height=0, width=0,
                                                  do_rectify=False))
    topic = "/cam/image_rect" if rectified else "/cam/image_raw"
    with Writer(path, version=9, storage_plugin=StoragePlugin.MCAP) as w:
        img = w.add_connection(topic, bag_io.IMAGE, typestore=TS)
        cam = w.add_connection("/cam/camera_info", bag_io.CAMERA_INFO, typestore=TS)
        w.write(cam, 1_000, TS.serialize_cdr(info_msg, bag_io.CAMERA_INFO))
        w.write(img, 2_000, TS.serialize_cdr(image, bag_io.IMAGE))
    return path


@pytest.mark.parametrize("camera,rectified", [(cs.BARREL, False), (cs.FISHEYE, False),
                                              (cs.RECTIFIED, True)])
def test_process_bag_uses_the_whole_camera_info(tmp_path, capsys, camera, rectified):
    src = write_camera_bag(tmp_path / "in", camera, rectified)
    out = tmp_path / "out"
    argv = ["process", str(src), "--model", TIPS_TEST_MODEL, "--backend", "cpu",
            "--out", str(out), "--copy", "none"] + (["--input-rectified"] if rectified else [])
    assert cli.main(argv) == 0, capsys.readouterr().err
    msgs = {}
    with Reader(out) as reader:
        for conn, _, data in reader.messages():
            msgs[conn.topic] = TS.deserialize_cdr(data, conn.msgtype)
    info = msgs["/cam/depth/camera_info"]
    assert list(info.d) == [0.0] * 5 and list(info.r) == [1.0, 0, 0, 0, 1.0, 0, 0, 0, 1.0]
    cloud = conversions.cloud_to_points(msgs["/cam/points"]).reshape(-1)
    off = cs.PLANE.plane_distance(cloud["x"], cloud["y"], cloud["z"])
    assert cloud.size > 0.9 * 224 * 224
    assert np.percentile(off, 95) < 0.020
