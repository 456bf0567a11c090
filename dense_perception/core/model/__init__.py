# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The models: the known kinds and their descriptions, detection from a file's signature, any
single-image depth network, and what a .tflite file and its tensors hold."""
