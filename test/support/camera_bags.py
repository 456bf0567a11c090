# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""A bag with two cameras (front and rear: each its own colour, focal length, frame size and
frame_id), for the tests of several cameras in one run."""

from rosbags.rosbag2 import StoragePlugin, Writer

from dense_perception.core.geometry.intrinsics import Intrinsics
from dense_perception.offline.inputs import bag_io
from support.bag_maker import STAMP0, T, TS, frame_of, log_time

# camera -> (colour, fx, frame size, frame_id); every value differs between the two
CAMERAS = {"front": ((40, 200, 10), 100.0, (64, 48), "front_optical"),
           "rear": ((230, 60, 120), 60.0, (48, 48), "rear_optical")}
FRAMES = 3


def header(camera, i):
    return T["std_msgs/msg/Header"](
        stamp=T["builtin_interfaces/msg/Time"](sec=STAMP0 + i, nanosec=1000 + i
                                               + (500 if camera == "rear" else 0)),
        frame_id=CAMERAS[camera][3])


def write_two_camera_bag(path, info_topic="/{camera}/camera_info"):
    with Writer(path, version=9, storage_plugin=StoragePlugin.MCAP) as w:
        for offset, camera in enumerate(CAMERAS):
            colour, fx, (width, height), _ = CAMERAS[camera]
            img = w.add_connection(f"/{camera}/image_raw", bag_io.IMAGE, typestore=TS)
            info = w.add_connection(info_topic.format(camera=camera), bag_io.CAMERA_INFO,
                                    typestore=TS)
            for i in range(FRAMES):
                k = Intrinsics(fx=fx, fy=fx, cx=(width - 1) / 2, cy=(height - 1) / 2,
                               width=width, height=height)
                w.write(info, log_time(i) + offset, TS.serialize_cdr(
                    bag_io.intrinsics_to_camera_info(k, header(camera, i)), bag_io.CAMERA_INFO))
                w.write(img, log_time(i) + offset + 1_000_000, TS.serialize_cdr(
                    bag_io.array_to_image(frame_of(colour, width, height), "rgb8",
                                         header(camera, i)), bag_io.IMAGE))
    return path
