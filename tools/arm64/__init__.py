# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""make test-arm64: the core tests on an emulated Debian 12 arm64 userland, and the models they
need."""
