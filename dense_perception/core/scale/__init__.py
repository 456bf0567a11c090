# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Metric scale for relative depth: the ground plane, reference depth and the temporal filter."""
