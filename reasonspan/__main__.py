"""``python -m reasonspan`` is the ``reasonspan`` command."""

import sys

from reasonspan.cli import main

sys.exit(main())
