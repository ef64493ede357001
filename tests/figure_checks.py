"""Find axes that draw nothing: the check the notebook test runs on every figure a notebook makes.

An Axes counts as drawn when it holds at least one line, collection (scatter, fill, mesh,
colour-bar solids), image, patch (bars, histograms), text or table artist besides its frame
(background patch, spines, ticks, title). Hidden axes (``ax.set_visible(False)``) are skipped.

The notebook test executes the notebooks under the non-interactive Agg backend, so figures stay
open; a cell appended to each notebook then saves every open figure at a small size and runs
:func:`empty_axes` on it (the function's source is sent to the kernel, so the kernel needs no
import from ``tests``).

The same test fails when a cell prints a ``ConvergenceWarning`` unless the cell's metadata
tags it ``expect-convergence-warning`` (a tutorial may show a warning once, on purpose, with
the fix the warning names in the next cell); :func:`check_committed_outputs` checks, without
executing anything, that the notebooks were committed with their outputs (``make notebooks``
re-executes them at full settings).
"""

from __future__ import annotations

import json
from pathlib import Path


def empty_axes(fig) -> list[str]:
    """Labels of the visible axes of ``fig`` that hold no data artist.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The figure to inspect.

    Returns
    -------
    list of str
        One label per empty axes, ``"axes <i> '<title>'"``; empty when every axes draws something.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> fig, (left, right) = plt.subplots(1, 2)
    >>> _ = left.plot([0, 1], [1, 0])
    >>> _ = right.set_title("nothing here")
    >>> empty_axes(fig)
    ["axes 1 'nothing here'"]
    >>> plt.close(fig)
    """
    empty = []
    for index, ax in enumerate(fig.axes):
        if not ax.get_visible():
            continue
        artists = (
            list(ax.lines)
            + list(ax.collections)
            + list(ax.images)
            + list(ax.patches)
            + list(ax.texts)
            + list(ax.tables)
            + list(ax.artists)
        )
        if not any(artist.get_visible() for artist in artists):
            empty.append(f"axes {index} {ax.get_title()!r}")
    return empty


def check_open_figures(out_dir, *, dpi: int = 20) -> dict:
    """Save every open matplotlib figure small into ``out_dir`` and list its empty axes.

    Parameters
    ----------
    out_dir : str or path-like
        Folder for the PNG files (``figure_<n>.png``), created if missing.
    dpi : int, default 20
        Resolution of the saved files: small, the check is on artists, not on pixels.

    Returns
    -------
    dict
        ``{"n_figures": int, "empty": {"figure_<n>": [labels of empty axes]}}``, only
        figures with empty axes listed under ``"empty"``.
    """
    import matplotlib.pyplot as plt

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    numbers = plt.get_fignums()
    empty = {}
    for number in numbers:
        fig = plt.figure(number)
        fig.savefig(out / f"figure_{number}.png", dpi=dpi)
        found = empty_axes(fig)
        if found:
            empty[f"figure_{number}"] = found
    return {"n_figures": len(numbers), "empty": empty}


REPORT_MARKER = "PMCTX-FIGURE-REPORT "


def kernel_check_source(out_dir) -> str:
    """Code for a notebook cell that runs :func:`check_open_figures` and prints its report.

    Parameters
    ----------
    out_dir : str or path-like
        Where the kernel saves the small PNGs.

    Returns
    -------
    str
        Python source: the two functions above, then one call printing
        ``REPORT_MARKER + json``.
    """
    import inspect

    return "\n\n".join(
        [
            "import json\nfrom pathlib import Path",
            inspect.getsource(empty_axes),
            inspect.getsource(check_open_figures),
            f"print({REPORT_MARKER!r} + json.dumps(check_open_figures({str(out_dir)!r})))",
        ]
    )


def parse_report(text: str) -> dict:
    """The report printed by the cell :func:`kernel_check_source` writes.

    Parameters
    ----------
    text : str
        The cell's standard output.

    Returns
    -------
    dict
        The report of :func:`check_open_figures`.
    """
    for line in text.splitlines():
        if line.startswith(REPORT_MARKER):
            return json.loads(line[len(REPORT_MARKER) :])
    raise AssertionError(f"the figure-check cell printed no report: {text[-500:]!r}")


def execute_notebook(notebook, path, figure_dir) -> dict:
    """Run ``notebook`` (from ``path``) with the figure-check cell appended; its report.

    Parameters
    ----------
    notebook : nbformat.NotebookNode
        The notebook (the check cell is appended to it).
    path : path-like
        Where it lives (the kernel runs in its folder).
    figure_dir : path-like
        Where the check cell saves the figures.

    Returns
    -------
    dict
        The report of :func:`check_open_figures`; an error in any cell fails an assertion.
    """
    import nbclient
    import nbformat

    path = Path(path)
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


NOTEBOOK_DIR = Path(__file__).resolve().parents[1] / "notebooks"


def check_notebook_executes(stem, monkeypatch, tmp_path):
    """Execute ``notebooks/<stem>.ipynb`` at its quick size and check its figures.

    Each notebook has its own test file (``tests/notebooks/test_<stem>.py``), so that
    ``pytest --dist loadfile`` spreads the notebooks over the workers.

    Parameters
    ----------
    stem : str
        The notebook's file name without ``.ipynb``.
    monkeypatch : pytest.MonkeyPatch
        Sets ``PMCTX_QUICK=1`` and the Agg backend for the kernel.
    tmp_path : pathlib.Path
        Where the figures go.
    """
    import nbformat

    path = NOTEBOOK_DIR / f"{stem}.ipynb"
    monkeypatch.setenv("PMCTX_QUICK", "1")
    monkeypatch.setenv("MPLBACKEND", "Agg")  # figures stay open for the figure check
    notebook = nbformat.read(path, as_version=4)
    report = execute_notebook(notebook, path, tmp_path / "figures")
    assert report["n_figures"] > 0, f"{path.name} made no figure"
    assert not report["empty"], f"{path.name}: axes with no artist {report['empty']}"
    assert len(list((tmp_path / "figures").glob("*.png"))) == report["n_figures"]
    stray = [(index, line) for index, tagged, line in convergence_warnings(notebook) if not tagged]
    assert not stray, (
        f"{path.name} printed {WARNING_NAME} outside cells tagged {EXPECT_TAG!r} "
        f"(cell index, line): {stray}"
    )


EXPECT_TAG = "expect-convergence-warning"
WARNING_NAME = "ConvergenceWarning"
#: Output lines naming any of these count: DivergenceWarning is a ConvergenceWarning.
WARNING_NAMES = (WARNING_NAME, "DivergenceWarning")


def output_text(output) -> str:
    """All the text one cell output carries.

    Parameters
    ----------
    output : dict
        A code cell's output (stream, display data, execute result or error).

    Returns
    -------
    str
        Its stream text, its ``text/plain`` data and its traceback, joined by newlines.
    """
    parts = [output.get("text", ""), output.get("data", {}).get("text/plain", "")]
    parts.extend(output.get("traceback", []))
    return "\n".join(part if isinstance(part, str) else "".join(part) for part in parts)


def convergence_warnings(notebook) -> list[tuple[int, bool, str]]:
    """The ``ConvergenceWarning`` (or ``DivergenceWarning``) lines in a notebook's outputs.

    Parameters
    ----------
    notebook : nbformat.NotebookNode
        An executed notebook.

    Returns
    -------
    list of tuple
        ``(cell index, tagged, line)`` for each output line naming the warning; ``tagged`` says
        whether the cell's metadata tags hold ``expect-convergence-warning``.

    Examples
    --------
    >>> import nbformat
    >>> cell = nbformat.v4.new_code_cell("fit()")
    >>> cell.outputs = [
    ...     nbformat.v4.new_output("stream", name="stderr", text="ConvergenceWarning: R-hat 1.09")
    ... ]
    >>> convergence_warnings(nbformat.v4.new_notebook(cells=[cell]))
    [(0, False, 'ConvergenceWarning: R-hat 1.09')]
    >>> cell.metadata["tags"] = [EXPECT_TAG]
    >>> convergence_warnings(nbformat.v4.new_notebook(cells=[cell]))
    [(0, True, 'ConvergenceWarning: R-hat 1.09')]
    >>> cell.outputs[0].text = "DivergenceWarning: 3 of 4000 draws"
    >>> convergence_warnings(nbformat.v4.new_notebook(cells=[cell]))
    [(0, True, 'DivergenceWarning: 3 of 4000 draws')]
    """
    found = []
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "code":
            continue
        tagged = EXPECT_TAG in cell.get("metadata", {}).get("tags", [])
        for output in cell.get("outputs", []):
            for line in output_text(output).splitlines():
                if any(name in line for name in WARNING_NAMES):
                    found.append((index, tagged, line.strip()))
    return found


def check_committed_outputs(path) -> None:
    """Fail unless the notebook at ``path`` was committed executed, with its outputs.

    Every non-empty code cell must have an execution count, the counts must run 1, 2, ... in
    cell order (one top-to-bottom run, as ``make notebooks`` makes), no output may be an error,
    and the notebook must embed at least one figure (``image/png``). Nothing is executed.

    Parameters
    ----------
    path : path-like
        The ``.ipynb`` file.
    """
    import nbformat

    path = Path(path)
    notebook = nbformat.read(path, as_version=4)
    code = [cell for cell in notebook.cells if cell.cell_type == "code" and cell.source.strip()]
    assert code, f"{path.name} has no code cell"
    counts = [cell.get("execution_count") for cell in code]
    missing = [index for index, count in enumerate(counts) if count is None]
    assert not missing, (
        f"{path.name}: code cells {missing} (of {len(code)}) were not executed; "
        "commit the notebook with its outputs (make notebooks)"
    )
    assert counts == list(range(1, len(code) + 1)), (
        f"{path.name}: execution counts {counts} are not one top-to-bottom run (make notebooks)"
    )
    outputs = [out for cell in code for out in cell.get("outputs", [])]
    assert outputs, f"{path.name}: no code cell has an output (make notebooks)"
    errors = [out.get("ename") for out in outputs if out.get("output_type") == "error"]
    assert not errors, f"{path.name}: committed with errors {errors}"
    figures = [out for out in outputs if "image/png" in out.get("data", {})]
    assert figures, f"{path.name}: no embedded figure (make notebooks)"
