"""``python -m pmctx`` is the ``pmctx`` command."""

import sys

from pmctx.cli import main

sys.exit(main())
