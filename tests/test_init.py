"""Importing pmctx: what it sets up for the user's session."""

import os
import subprocess
import sys

import pytest


def _import_warns(tmp_path, code):
    # A fresh cache folder makes ArviZ issue its once-a-day refactor notice on import.
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    result = subprocess.run(
        [sys.executable, "-W", "error::FutureWarning", "-c", code],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return result.returncode != 0, result.stderr


def test_arviz_refactor_notice_is_silenced(tmp_path):
    loud, stderr = _import_warns(tmp_path / "bare", "import arviz")
    if not loud:
        pytest.skip("this ArviZ version issues no refactor notice")
    assert "ArviZ is undergoing a major refactor" in stderr
    loud, stderr = _import_warns(tmp_path / "pmctx", "import pmctx, arviz")
    assert not loud, stderr


def test_submodules_are_reachable_after_a_bare_import():
    code = (
        "import pmctx, sys; assert 'pmctx.streaming' not in sys.modules; "
        "assert callable(pmctx.streaming.loo); "
        "import pytest; pytest.raises(AttributeError, getattr, pmctx, 'no_such_module')"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
