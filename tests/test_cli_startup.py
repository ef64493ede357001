"""``pmctx --help``, ``--version`` and argument errors start without the numerical stack.

Issue 28 item 5: the command must answer those in under 0.5 s, so building the parser and
handling them must not import PyMC, PyTensor, ArviZ, Dask, NumPy, pandas or xarray (nor any
model module). A structural check, not a timed one: each case runs in a fresh interpreter and
reports which of those packages ended up in ``sys.modules``
(``benchmarks/bench_cli_start.py`` has the timings).
"""

import json
import subprocess
import sys

import pytest

HEAVY = (
    "pymc",
    "pytensor",
    "arviz",
    "dask",
    "distributed",
    "numpy",
    "pandas",
    "xarray",
    "pmctx.models.ibp",
)

SCRIPT = """
import contextlib, io, json, sys
import pmctx.cli
pmctx.cli._build_parser()
argv = json.loads(sys.argv[1])
if argv is not None:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            pmctx.cli.main(argv)
        except SystemExit:
            pass
heavy = json.loads(sys.argv[2])
print(json.dumps(sorted(m for m in heavy if m in sys.modules)))
"""


def _heavy_imports(argv):
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT, json.dumps(argv), json.dumps(HEAVY)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(
    "argv",
    [
        None,  # building the parser only
        ["--version"],
        ["--help"],
        ["fit", "--help"],
        ["demo", "--help"],
        ["fit", "nosuchmodel", "--data", "x"],
        ["compare", "--help"],
        ["batch", "--help"],
    ],
    ids=lambda argv: "parser" if argv is None else " ".join(argv),
)
def test_cli_start_imports_no_numerical_stack(argv):
    assert _heavy_imports(argv) == []


def test_import_pmctx_imports_no_numerical_stack():
    code = (
        "import json, sys, pmctx; pmctx.LooReliabilityWarning; "
        f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert json.loads(result.stdout) == []
