# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Accuracy on real RGB-D frames and sequences (``make eval-real``, docs/accuracy.md)."""
