"""The documentation site builds without warnings (notebooks not executed here)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(
    shutil.which("sphinx-build", path=str(Path(sys.executable).parent)) is None,
    reason="sphinx is installed by the dev extra",
)


def test_docs_build_without_warnings(tmp_path):
    env = {**os.environ, "PMCTX_DOCS_EXECUTE": "0", "PMCTX_NO_PROGRESS": "1"}
    result = subprocess.run(
        [
            str(Path(sys.executable).parent / "sphinx-build"),
            "-W",
            "--keep-going",
            "-q",
            "-b",
            "html",
            "-d",
            str(tmp_path / "doctrees"),
            str(ROOT / "docs"),
            str(tmp_path / "html"),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-6000:]
    html = tmp_path / "html"
    for page in ("index.html", "api.html", "guides/step_methods.html", "benchmarks.html"):
        assert (html / page).is_file(), page
    for notebook in ROOT.glob("notebooks/*.ipynb"):
        assert (html / "tutorials" / f"{notebook.stem}.html").is_file(), notebook.name
    assert (html / "generated" / "pmctx.models.ibp.html").is_file()
