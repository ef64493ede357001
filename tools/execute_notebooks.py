"""Re-execute the tutorial notebooks in place at their full settings, keeping the outputs.

``make notebooks`` runs this for every ``notebooks/*.ipynb``; give paths to run only some::

    .venv/bin/python tools/execute_notebooks.py notebooks/gum_gp.ipynb

``PMCTX_QUICK`` is removed from the kernel's environment (the committed outputs are the full
run's) and figures are drawn by the inline backend (``matplotlib_inline``, which renders with
Agg: nothing needs a display), so they are embedded in the notebook as PNGs. Each notebook is
written back only when every cell ran; the script prints each one's wall time and the
``ConvergenceWarning`` outputs it found, and exits 1 when one appears in a cell not tagged
``expect-convergence-warning`` (the tag marks a cell that shows a warning on purpose; the next
cell shows the fix the warning names).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import nbclient
import nbformat

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests.figure_checks import EXPECT_TAG, WARNING_NAME, convergence_warnings  # noqa: E402


def execute(path: Path, timeout: int) -> tuple[float, list]:
    """Execute ``path`` in place; its wall time in seconds and its warnings."""
    notebook = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        notebook,
        timeout=timeout,
        kernel_name="python3",  # jupyter_client maps it to this interpreter
        record_timing=False,  # no timestamps in the committed cells' metadata
        resources={"metadata": {"path": str(path.parent)}},
    )
    start = time.perf_counter()
    client.execute()
    seconds = time.perf_counter() - start
    nbformat.write(notebook, path)
    return seconds, convergence_warnings(notebook)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "paths", nargs="*", type=Path, help="notebooks (default: all of notebooks/)"
    )
    parser.add_argument("--timeout", type=int, default=1800, help="seconds per cell (default 1800)")
    args = parser.parse_args(argv)
    paths = args.paths or sorted((ROOT / "notebooks").glob("*.ipynb"))
    os.environ.pop("PMCTX_QUICK", None)
    os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
    stray = 0
    for path in paths:
        seconds, warnings = execute(path.resolve(), args.timeout)
        outside = [w for w in warnings if not w[1]]
        stray += len(outside)
        print(
            f"{path.name}: {seconds:.0f} s, {len(warnings)} {WARNING_NAME} output line(s), "
            f"{len(outside)} outside cells tagged {EXPECT_TAG!r}",
            flush=True,
        )
        for index, tagged, line in warnings:
            print(f"    cell {index}{' (tagged)' if tagged else ''}: {line}", flush=True)
    return 1 if stray else 0


if __name__ == "__main__":
    sys.exit(main())
