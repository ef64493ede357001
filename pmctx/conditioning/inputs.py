"""The CRP conditioning model's data file: trial features with the US found by name.

:func:`load_crp` is what ``pmctx fit crp`` reads (layouts and the shared readers in
:mod:`pmctx.datafiles`): an ``.npz`` with ``features`` (trials x features, 0/1, NaN for an
unknown US), optional ``feature_names`` and option scalars, or a ``.csv`` with a ``US`` column
and one 0/1 column per CS or context. The US comes first in the returned features.

Examples
--------
>>> import tempfile, pathlib
>>> path = pathlib.Path(tempfile.mkdtemp()) / "d.csv"
>>> _ = path.write_text("tone,US\\n1,1\\n1,\\n")
>>> features = load_crp(path)["features"]
>>> [str(f) for f in features["feature"].values], features.values[:, 0].tolist()
(['US', 'tone'], [1.0, nan])
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from pmctx.conditioning.design import as_feature_matrix
from pmctx.datafiles import (
    DataSchema,
    check_array_dtype,
    check_file,
    check_rows,
    numeric_column,
    read_npz_arrays,
    read_table,
)
from pmctx.validation import as_float_array

__all__ = ["SCHEMA", "load_crp"]

#: What ``pmctx fit crp`` reads (:class:`pmctx.datafiles.DataSchema`).
SCHEMA = DataSchema(
    "crp",
    (".npz", ".csv"),
    {"features": "trials x features, 0/1, NaN = unknown US", "feature_names": "names"},
    ("features",),
    ("alpha", "max_causes", "concentration"),
    "a 'US' column and one 0/1 column per CS or context",
)


def _us_first(values: np.ndarray, names: list[str], filename: str):
    if "US" not in names:
        raise ValueError(
            f"{filename} has no 'US' column (columns: {names}); crp needs the US by name. "
            "Rename the unconditioned-stimulus column to 'US'."
        )
    order = [names.index("US")] + [i for i, n in enumerate(names) if n != "US"]
    return values[:, order], [names[i] for i in order]


def load_crp(path, options=None) -> dict:
    """Trial features with the US found by name (layouts in :mod:`pmctx.datafiles`).

    Parameters
    ----------
    path : str or path-like
        An ``.npz`` with ``features`` (and optional ``feature_names`` and scalars), or a ``.csv``
        with a ``US`` column and one 0/1 column per CS or context.
    options : dict, optional
        Not read; the caller merges its ``alpha``, ``max_causes`` and ``concentration`` over
        the scalars the file stores.

    Returns
    -------
    dict
        ``{"features": xarray.DataArray (trial, feature), "options": dict}``, the US first.

    Raises
    ------
    ValueError
        When the file departs from :data:`SCHEMA` (no ``US`` column, only the US, the US
        missing on every trial, non-binary features, too few trials); the message says how to
        fix it.
    """
    schema = SCHEMA
    path = check_file(path, schema)
    file_options = {}
    if path.suffix == ".npz":
        arrays, file_options = read_npz_arrays(path, schema, ("features", "feature_names"))
        if "features" not in arrays:
            raise ValueError(f"{path.name} has no 'features' array; {schema.expected()}.")
        values = arrays["features"]
        check_array_dtype(values, "features", path.name)
        values = as_float_array(values, f"{path.name}: features", ndim=2, allow_nan=True)
        names = None
        if "feature_names" in arrays:
            names = [str(n) for n in np.ravel(arrays["feature_names"])]
            if len(names) != values.shape[1]:
                raise ValueError(
                    f"{path.name}: feature_names has {len(names)} names for "
                    f"{values.shape[1]} feature columns."
                )
            values, names = _us_first(values, names, path.name)
    else:
        frame = read_table(path, schema)
        names = list(frame.columns)
        values = np.column_stack([numeric_column(frame, c, path.name) for c in names])
        values, names = _us_first(values, names, path.name)
    check_rows(values.shape[0], path.name, "trials")
    if values.shape[1] < 2:
        raise ValueError(
            f"{path.name} has only the US; crp needs at least one CS or context column."
        )
    if np.isnan(values[:, 0]).all():
        raise ValueError(
            f"{path.name}: the US is missing on every trial; the model needs observed US "
            "outcomes (leave it empty only on probe trials)."
        )
    as_feature_matrix(values, f"{path.name}: features")
    coords = {"feature": names} if names else None
    features = xr.DataArray(values, dims=("trial", "feature"), coords=coords)
    return {"features": features, "options": file_options}
