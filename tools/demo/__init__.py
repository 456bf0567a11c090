# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The demo: the real node on a sample scene (``make demo``) and the README's picture from it."""
