"""Importing pmctx: what it sets up for the user's session."""

import subprocess
import sys


def test_submodules_are_reachable_after_a_bare_import():
    code = (
        "import pmctx, sys; assert 'pmctx.streaming' not in sys.modules; "
        "assert callable(pmctx.streaming.loo); "
        "import pytest; pytest.raises(AttributeError, getattr, pmctx, 'no_such_module')"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
