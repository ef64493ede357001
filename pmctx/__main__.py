"""``python -m pmctx`` is the ``pmctx`` command."""

import sys

from pmctx.cli import main

if __name__ == "__main__":  # importing the module (e.g. to document it) must not run the CLI
    sys.exit(main())
