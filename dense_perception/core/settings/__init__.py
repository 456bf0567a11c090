# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The settings: the typed table and its rows, the allowed values, how a message names a setting,
where each setting acts, and the configuration each part derives from them."""
