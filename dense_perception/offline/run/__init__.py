# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""One run of the model: the session (the model, the settings and the options, made once) and
the frame loop that takes an input's frames through the pipeline to its target."""
