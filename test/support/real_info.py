# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""A CameraInfo for one of the shared real frames (its measured intrinsics, no distortion)."""


def frame_info(frame, width: int, height: int):
    """sensor_msgs/CameraInfo of ``frame`` (a ``tools.eval.real_scenes.RealFrame``) for a
    ``width`` x ``height`` image: K and P from its intrinsics, plumb_bob with zero distortion."""
    from sensor_msgs.msg import CameraInfo
    fx, fy, cx, cy = frame.k
    info = CameraInfo()
    info.width, info.height = width, height
    info.k = [fx, 0.0, cx, 0.0, fy, cy, 0.0, 0.0, 1.0]
    info.p = [fx, 0.0, cx, 0.0, 0.0, fy, cy, 0.0, 0.0, 0.0, 1.0, 0.0]
    info.r = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
    info.distortion_model = "plumb_bob"
    info.d = [0.0] * 5
    return info
