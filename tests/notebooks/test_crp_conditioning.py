"""``notebooks/crp_conditioning.ipynb`` runs at its quick size; no figure is empty."""

import pytest

from tests.figure_checks import check_notebook_executes

pytest.importorskip("nbformat")
pytest.importorskip("nbclient")


def test_notebook_executes(monkeypatch, tmp_path):
    check_notebook_executes("crp_conditioning", monkeypatch, tmp_path)
