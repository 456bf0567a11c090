# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""What the rooms and the tests share: the generated scenes, the plain reference formulas, and
the node run as its own process and played to over DDS."""
