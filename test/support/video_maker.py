# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Test videos for the offline command's tests: uniform colours (support/bag_maker.py's frames,
whose outputs the test models give in closed form) written with OpenCV."""

import cv2
import pytest

from support.bag_maker import H, W, frame_of


def write_video(path_stem, colours):
    """A short video: lossless FFV1 when this OpenCV has it, else MJPG (lossy)."""
    for suffix, fourcc, tolerance in ((".mkv", "FFV1", 0), (".avi", "MJPG", 6)):
        path = path_stem.with_suffix(suffix)
        writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*fourcc), 10, (W, H))
        if writer.isOpened():
            for rgb in colours:
                writer.write(frame_of(rgb)[:, :, ::-1].copy())
            writer.release()
            return path, tolerance
    pytest.skip("OpenCV cannot write FFV1 or MJPG video here")

