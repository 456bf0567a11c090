# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""A bag of a painted scene (``tools/common/metric_scene.py``) with a sparse metric reference
depth beside each image, for the reference-depth scale tests."""

from rosbags.rosbag2 import StoragePlugin, Writer

from dense_perception.core.geometry.intrinsics import Intrinsics
from dense_perception.offline.inputs import bag_io
from tools.common.metric_scene import HEIGHT, PITCHED_WITH_BOX, WIDTH, paint, sparse_reference

TS = bag_io.TYPESTORE
T = TS.types


def write_reference_bag(path, frames, rng, reference_offset_ns=0, referenced=None):
    """Images of PITCHED_WITH_BOX at s = 0.35 (1 s apart), a CameraInfo, and a sparse 32FC1
    reference depth (1 % of the pixels, 10 % outliers) per frame (the first ``referenced``
    frames only, if given), logged 5 ms *after* its image and stamped ``reference_offset_ns``
    after it."""
    scene, s = PITCHED_WITH_BOX, 0.35
    z, _ = scene.depth_and_surface()
    k = Intrinsics(scene.fx, scene.fx, scene.cx, scene.cy, WIDTH, HEIGHT)
    with Writer(path, version=9, storage_plugin=StoragePlugin.MCAP) as w:
        img = w.add_connection("/cam/image_raw", bag_io.IMAGE, typestore=TS)
        info = w.add_connection("/cam/camera_info", bag_io.CAMERA_INFO, typestore=TS)
        ref = w.add_connection("/tof/depth", bag_io.IMAGE, typestore=TS)
        for i in range(frames):
            header = T["std_msgs/msg/Header"](
                stamp=T["builtin_interfaces/msg/Time"](sec=1000 + i, nanosec=0), frame_id="cam")
            t = 5_000_000_000 + i * 100_000_000
            w.write(img, t, TS.serialize_cdr(bag_io.array_to_image(paint(z / s), "rgb8", header),
                                             bag_io.IMAGE))
            w.write(info, t, TS.serialize_cdr(bag_io.intrinsics_to_camera_info(k, header),
                                              bag_io.CAMERA_INFO))
            if referenced is not None and i >= referenced:
                continue
            reference, _ = sparse_reference(z, 0.01, 0.10, rng)
            ref_header = T["std_msgs/msg/Header"](stamp=T["builtin_interfaces/msg/Time"](
                sec=1000 + i, nanosec=reference_offset_ns), frame_id="cam")
            w.write(ref, t + 5_000_000, TS.serialize_cdr(
                bag_io.array_to_image(reference, "32FC1", ref_header), bag_io.IMAGE))
    return z, s
