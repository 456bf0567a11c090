# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The ROS 2 node: parameters, camera subscriptions, publishers, diagnostics and the lifecycle
around the core."""
