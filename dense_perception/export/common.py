# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Names every part of the DA3 exporter shares: the command's name, the model's constants and
the one error type the command prints as a single line."""

from __future__ import annotations

from pathlib import Path

PROG = "dense-perception export-da3"
PATCH = 14  # the ViT patch: both model sides are multiples of it
DEFAULT_LONG_SIDE = 504  # DA3's own process_res (api.py, InputProcessor); the card used 896
MODEL_NAME = "da3-small"
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
EXIT_OK, EXIT_ERROR = 0, 2
REPO = Path(__file__).resolve().parents[2]


class ExportError(RuntimeError):
    """A user-facing error: printed as one line, exit status 2."""
