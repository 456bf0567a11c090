# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The inputs and what they are read and written with: a bag (rosbag2 in and out), a video, a
folder of images or one image, each as a class that opens itself, plus its cameras, motion,
calibration file, poses and reference depth."""
