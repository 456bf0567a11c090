# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Who runs when: newest-wins hand-overs, the round robin of several cameras, the two-stage overlap
and the host threads."""
