# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Checks and one-off measurements: the GPU and NPU device checks, the Vulkan install, the node's
camera input and DDS delivery, and the offline command's argument walk."""
