"""``python -m dense_perception``: the ``dense-perception`` command line (see cli.py)."""

import sys

from .cli import main

sys.exit(main())
