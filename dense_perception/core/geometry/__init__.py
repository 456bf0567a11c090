# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Cameras and geometry: CameraInfo camera models, which CameraInfo a frame uses, fitting frames to
the model and back, rectification, point clouds."""
