# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The generated files the repository commits: the docs pages (``make docs``) and the constraint
locks (``make lock``)."""
