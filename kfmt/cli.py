"""The command line's earlier home, kept so that ``python -m kfmt.cli`` and ``from kfmt.cli import main``
work as before; it lives in :mod:`kfmt.tools.cli`."""

import sys

from kfmt.tools.cli import build_parser, main

__all__ = ["build_parser", "main"]

if __name__ == "__main__":
    sys.exit(main())
