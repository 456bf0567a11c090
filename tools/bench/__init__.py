# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Speed and memory figures: ``make bench`` and its siblings (host path, wire, motion, cameras,
fleet, export menu, CPU options), the benchmark models and the soak."""
