# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""``python -m dense_perception``: the ``dense-perception`` command line (see cli.py)."""

import sys

from .offline.cli import main

sys.exit(main())
