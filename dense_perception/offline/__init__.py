# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The dense-perception command: the node's pipeline over images, videos and rosbag2, one input or
a Ray fleet, with no ROS install."""
