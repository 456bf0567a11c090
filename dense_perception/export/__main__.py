# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""``python -m dense_perception.export``: the ``export-da3`` command (see :mod:`.export_da3`)."""

import sys

from .export_da3 import main

sys.exit(main())
