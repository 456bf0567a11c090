# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The continuous integration's own tools: the timing table that closes ``.ci/run``."""
