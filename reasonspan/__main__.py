"""``python -m reasonspan`` is the ``reasonspan`` command."""

import sys

from .cli import main

sys.exit(main())
