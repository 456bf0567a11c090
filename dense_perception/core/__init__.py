# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The ROS-free core: one frame's way (fit, preprocess, inference backends, post-processing, scale,
clouds), no ROS and no torch."""
