"""Every notebook in ``notebooks/`` executes at its quick size (``PMCTX_QUICK=1``).

The runs themselves are in ``tests/notebooks/`` (one file per notebook, so that the
``--dist loadfile`` workers share them); this file checks that each notebook has one and
tests the figure check.

Each run also checks the notebook's figures: the kernel uses the non-interactive Agg backend,
so every figure stays open, and a cell appended to the notebook saves them all at a small size
and fails the test if any visible axes draws nothing (see ``tests/figure_checks.py``).
"""

from pathlib import Path

import pytest

from tests.figure_checks import (
    NOTEBOOK_DIR,
    check_open_figures,
    empty_axes,
    execute_notebook,
)

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))


def test_notebooks_exist():
    assert NOTEBOOKS, "notebooks/ holds no .ipynb file"


def test_every_notebook_has_its_test_file():
    # Each notebook runs in its own file, tests/notebooks/test_<stem>.py (one file per
    # notebook lets `pytest --dist loadfile` spread them over the workers).
    here = Path(__file__).resolve().parent / "notebooks"
    for path in NOTEBOOKS:
        test_file = here / f"test_{path.stem}.py"
        assert test_file.is_file(), f"{path.name} has no test file {test_file}"
        assert f'check_notebook_executes("{path.stem}"' in test_file.read_text()


def test_empty_axes_flags_a_figure_with_nothing_drawn():
    import matplotlib.pyplot as plt

    fig, (drawn, blank) = plt.subplots(1, 2)
    drawn.imshow([[0, 1], [1, 0]])
    fig.colorbar(drawn.images[0], ax=drawn)
    blank.set_title("blank")  # a title and ticks are not data
    try:
        assert empty_axes(fig) == ["axes 1 'blank'"]
        blank.set_visible(False)  # hidden axes are not checked
        assert empty_axes(fig) == []
    finally:
        plt.close(fig)


def test_figure_check_cell_fails_a_notebook_with_an_empty_figure(tmp_path, monkeypatch):
    """The same path the notebook test takes, on a notebook whose only figure is empty."""
    monkeypatch.setenv("MPLBACKEND", "Agg")
    path = tmp_path / "empty.ipynb"
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell(
            "import matplotlib.pyplot as plt\n"
            "fig, axes = plt.subplots(1, 2)\n"
            "axes[0].plot([0, 1])\n"
            "axes[1].set_title('forgot to plot')"
        )
    ]
    report = execute_notebook(notebook, path, tmp_path / "figures")
    assert report == {"n_figures": 1, "empty": {"figure_1": ["axes 1 'forgot to plot'"]}}


def test_check_open_figures_saves_small_pngs(tmp_path):
    import matplotlib.pyplot as plt

    plt.close("all")
    fig, ax = plt.subplots()
    ax.plot([0, 1])
    try:
        report = check_open_figures(tmp_path)
    finally:
        plt.close(fig)
    assert report == {"n_figures": 1, "empty": {}}
    assert len(list(tmp_path.glob("figure_*.png"))) == 1
