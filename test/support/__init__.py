# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Shared test helpers, imported as ``support.<module>``: common (paths, test models,
timeouts), model_truth (the test models' laws, written once), camera_scenes, bag_maker,
ros_harness (the node in-process over DDS) and worker_procs (GPU worker processes)."""
