"""Execute every notebook in ``notebooks/`` at its quick size (``PMCTX_QUICK=1``).

Each run also checks the notebook's figures: the kernel uses the non-interactive Agg backend,
so every figure stays open, and a cell appended to the notebook saves them all at a small size
and fails the test if any visible axes draws nothing (see ``tests/figure_checks.py``).
"""

from pathlib import Path

import pytest

from tests.figure_checks import (
    check_open_figures,
    empty_axes,
    kernel_check_source,
    parse_report,
)

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


def test_notebooks_exist():
    assert NOTEBOOKS, "notebooks/ holds no .ipynb file"


def _execute(notebook, path, figure_dir):
    notebook.cells.append(nbformat.v4.new_code_cell(kernel_check_source(figure_dir)))
    client = nbclient.NotebookClient(
        notebook,
        timeout=600,
        kernel_name="python3",  # jupyter_client maps it to this interpreter
        resources={"metadata": {"path": str(path.parent)}},
    )
    client.execute()
    errors = [
        out
        for cell in notebook.cells
        if cell.cell_type == "code"
        for out in cell.get("outputs", [])
        if out.get("output_type") == "error"
    ]
    assert not errors
    stdout = "".join(
        out.get("text", "")
        for out in notebook.cells[-1].get("outputs", [])
        if out.get("output_type") == "stream" and out.get("name") == "stdout"
    )
    return parse_report(stdout)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_executes(path, monkeypatch, tmp_path):
    monkeypatch.setenv("PMCTX_QUICK", "1")
    monkeypatch.setenv("MPLBACKEND", "Agg")  # figures stay open for the figure check
    report = _execute(nbformat.read(path, as_version=4), path, tmp_path / "figures")
    assert report["n_figures"] > 0, f"{path.name} made no figure"
    assert not report["empty"], f"{path.name}: axes with no artist {report['empty']}"
    assert len(list((tmp_path / "figures").glob("*.png"))) == report["n_figures"]


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
    report = _execute(notebook, path, tmp_path / "figures")
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
