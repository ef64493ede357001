"""The GUM's data file: the columns a formula names, and the formula itself.

:func:`load_gum` is what ``pmctx fit gum`` reads (layouts and the shared readers in
:mod:`pmctx.datafiles`): an ``.npz`` with one array per column (and optional ``formula``,
``family``), or a ``.csv`` with a header naming exactly the columns the formula uses; the
formula then comes from ``--set formula=...`` or a sidecar ``<file>.formula`` (formula on the
first line, family on the second).

Examples
--------
>>> import tempfile, pathlib
>>> path = pathlib.Path(tempfile.mkdtemp()) / "d.csv"
>>> _ = path.write_text("x,y\\n0.0,1.0\\n0.5,1.5\\n1.0,0.5\\n")
>>> data = load_gum(path, {"formula": "y ~ f(x)"})
>>> list(data["columns"].columns), data["options"]
(['x', 'y'], {})
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from pmctx import datafiles
from pmctx.datafiles import DataSchema
from pmctx.gum.formula import parse_formula
from pmctx.gum.terms import normalize

__all__ = ["SCHEMA", "load_gum"]

#: What ``pmctx fit gum`` reads (:class:`pmctx.datafiles.DataSchema`).
SCHEMA = DataSchema(
    "gum",
    (".npz", ".csv"),
    {"formula": "model formula", "family": "gaussian/bernoulli/poisson"},
    (),
    (),
    "a header naming the response and the regressors of the formula",
)


def load_gum(path, options=None) -> dict:
    """Columns for a GUM formula (layouts in :mod:`pmctx.datafiles`).

    Parameters
    ----------
    path : str or path-like
        An ``.npz`` with one array per column (and optional ``formula``, ``family``), or a
        ``.csv`` with a header naming the columns; the formula then comes from ``options`` or a
        sidecar file ``<data>.formula``.
    options : dict, optional
        The caller's options (``--set`` or Python); their ``formula`` (and ``family``) win
        over the file's own. The caller merges the rest over the returned file options.

    Returns
    -------
    dict
        ``{"columns": dict of str to array, "options": dict}`` (options include ``formula``
        and ``family``).

    Raises
    ------
    ValueError
        When no formula comes with the file, a column the formula uses is missing or one it
        does not use is present, there are too few observations or the response is all
        missing; the message says how to fix it.
    """
    schema = SCHEMA
    path = datafiles.check_file(path, schema)
    options = dict(options or {})
    file_options = {}
    if path.suffix == ".npz":
        columns = datafiles.read_npz(path)
        for key in ("formula", "family"):
            if key in columns:
                file_options[key] = str(columns.pop(key))
    else:
        columns = datafiles.read_table(path, schema)
        sidecar = path.with_suffix(".formula")
        if sidecar.exists():
            lines = [ln.strip() for ln in sidecar.read_text().splitlines() if ln.strip()]
            if lines:
                file_options["formula"] = lines[0]
            if len(lines) > 1:
                file_options["family"] = lines[1]
    formula = options.get("formula", file_options.get("formula"))
    if not formula:
        raise ValueError(
            f"{path.name} comes without a formula. Pass --set formula='y ~ f(x)', save one "
            "in the .npz (np.savez(path, formula='y ~ f(x)', x=..., y=...)) or write it to "
            f"{path.with_suffix('.formula').name}."
        )
    response, term, _ = parse_formula(formula)
    needed = {response} | {leaf.column for b in normalize(term) for f in b for leaf in f}
    names = list(columns.columns if isinstance(columns, pd.DataFrame) else columns)
    datafiles.check_keys(names, needed, path.name, schema, what="column(s) not in the formula")
    missing = sorted(needed - set(names))
    if missing:
        raise ValueError(
            f"{path.name} lacks column(s) {missing} that the formula {formula!r} uses; it has "
            f"{sorted(names)}."
        )
    if isinstance(columns, pd.DataFrame):
        n_rows = len(columns)
    else:
        n_rows = min((np.shape(v)[0] if np.ndim(v) else 0) for v in columns.values())
    datafiles.check_rows(n_rows, path.name, "observations")
    response_values = columns[response]
    if isinstance(columns, pd.DataFrame):
        response_values = datafiles.numeric_column(columns, response, path.name)
    else:
        datafiles.check_array_dtype(np.asarray(response_values), response, path.name)
    if np.isnan(np.asarray(response_values, dtype=float)).all():
        raise ValueError(f"{path.name}: the response {response!r} is missing everywhere.")
    return {"columns": columns, "options": file_options}
