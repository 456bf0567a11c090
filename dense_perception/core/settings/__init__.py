# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The settings table: every setting's row (type, default, limits, description, runtime or
restart-only, its offline flag) and the typed ``Settings`` built from it. What each part makes
of them is one floor up, in :mod:`dense_perception.core.wiring`."""
