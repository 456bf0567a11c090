# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The inference backends behind one Runner protocol: XNNPACK and CompiledModel on the CPU, the GPU
in a worker process, the NPU plugins, and LiteRT's native log."""
