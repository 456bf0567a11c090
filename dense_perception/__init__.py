# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""dense_perception: dense depth, normals and segmentation from a camera stream with LiteRT.

The folders are the layers; each may use the ones below it, never the ones above (``core`` and
``export`` at the bottom, ``ros`` and ``offline`` on ``core``, ``offline`` on ``export`` too):

- ``core``: everything a frame goes through, with no ROS and no torch (model descriptions,
  tflite file reading, camera model and fit, preprocessing, the LiteRT runner, post-processing,
  point clouds, the product table, timing, and ``pipeline``, one frame end to end).
- ``ros``: the node (rclpy): parameters, subscriptions, publishing, diagnostics.
- ``offline``: the ``dense-perception`` command over images, videos and rosbag2 (no ROS install).
- ``export``: the DA3 exporter; the only place torch is imported (in its own environment).

The benchmark, load generator, demo and soak scripts live in the repository's ``tools/`` and
are not installed.
"""

__version__ = "0.1.0"
