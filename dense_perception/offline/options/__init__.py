# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The command's options: its own (``ProcessOptions``) and the inputs they name, the settings
table's flags, the metric-scale options, and which flags an input or a model does not read."""
