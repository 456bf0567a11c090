"""``python -m dense_perception``: the ``dense-perception`` command line (see cli.py)."""

import sys

from .offline.cli import main

sys.exit(main())
