"""``python -m kfmt``: the ``kfmt`` command line."""

import sys

from kfmt.tools.cli import main

sys.exit(main())
