"""``python -m trustgate``: the ``trustgate`` command, run from a checkout or a venv without its script."""

import sys

from .cli import main

sys.exit(main())
