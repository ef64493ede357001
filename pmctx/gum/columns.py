"""Data columns of a GUM: the response, the regressors a formula reads, new data to predict at.

Pure functions from user data (a ``DataFrame`` or a dict of arrays) to the validated arrays
:func:`pmctx.gum.gum` builds its design from and :meth:`~pmctx.gum.GumModel.predict` evaluates
at: 2-D regressors (rows x positions, NaN where a position is absent), categorical labels
mapped to integer codes, derived columns (interactions, lags) built.

Examples
--------
>>> import numpy as np
>>> from pmctx.gum.formula import parse_formula
>>> from pmctx.gum.terms import normalize
>>> _, term, _ = parse_formula("y ~ f(x) + cat(g)")
>>> blocks = normalize(term)
>>> data = {"x": np.array([0.1, 0.5, 0.9]), "g": np.array(["b", "a", "b"]), "y": np.zeros(3)}
>>> y, prepared, labels = prepare_columns(blocks, data_columns(data), "y", "gaussian")
>>> prepared["g"].ravel(), labels["w_g"]
(array([1., 0., 1.]), array(['a', 'b'], dtype='<U1'))
>>> new, n = new_columns(blocks, labels, {"x": [0.2], "g": ["a"]})
>>> n, new["g"].ravel()
(1, array([0.]))
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from pmctx.gum.derived import derive_column
from pmctx.gum.terms import Categorical
from pmctx.validation import as_binary_array, as_count_array, as_float_array, check_nonempty

__all__ = [
    "add_derived",
    "data_columns",
    "leaf_columns",
    "new_columns",
    "prepare_columns",
    "regressor_values",
    "response_values",
]


def data_columns(data) -> dict:
    """The named columns of ``data`` as arrays.

    Parameters
    ----------
    data : pandas.DataFrame or dict of arrays
        Named columns.

    Returns
    -------
    dict
        ``{column name: numpy.ndarray}``.
    """
    if isinstance(data, pd.DataFrame):
        return {str(c): data[c].to_numpy() for c in data.columns}
    if isinstance(data, Mapping):
        return {str(k): np.asarray(v) for k, v in data.items()}
    raise TypeError(
        f"data must be a pandas DataFrame or a dict of arrays, got {type(data).__name__}."
    )


def response_values(family: str, values, name: str) -> np.ndarray:
    """The response validated for ``family`` (0/1, counts or reals), as floats.

    Parameters
    ----------
    family : str
        The GUM family.
    values : array_like
        The response column.
    name : str
        Its name in error messages.

    Returns
    -------
    numpy.ndarray, shape (N,)
        The response.
    """
    if family == "bernoulli":
        return as_binary_array(values, name, ndim=1).astype(float)
    if family in ("poisson", "negative_binomial"):
        return as_count_array(values, name, ndim=1).astype(float)
    return as_float_array(values, name, ndim=1)


def regressor_values(values, name: str, n: int, categorical: bool, allow_empty: bool = False):
    """A regressor column as a 2-D float array; categorical text mapped to integer codes.

    Parameters
    ----------
    values : numpy.ndarray, shape (n,) or (n, positions)
        The column; ``''`` marks an absent position of a 2-D categorical column.
    name : str
        Its name in error messages.
    n : int
        Rows of the response.
    categorical : bool
        Map text labels to codes (sorted labels).
    allow_empty : bool, default False
        Allow rows where every position is NaN (derived columns, new data).

    Returns
    -------
    values : numpy.ndarray, shape (n, positions)
        The regressor.
    labels : numpy.ndarray or None
        The sorted category labels of a categorical text column.
    """
    labels = None
    if values.dtype.kind in "OUSb" and categorical:
        # '' marks an absent position of a 2-D categorical (e.g. a nested w(p|g) column)
        text = values.astype(str)
        present = text != ""
        labels, codes = np.unique(text[present], return_inverse=True)
        values = np.full(text.shape, np.nan)
        values[present] = codes
    arr = as_float_array(values, f"data[{name!r}]", allow_nan=np.ndim(values) == 2)
    if arr.ndim not in (1, 2) or arr.shape[0] != n:
        raise ValueError(
            f"data[{name!r}] must have shape ({n},) or ({n}, positions) to match the response, "
            f"got shape {arr.shape}."
        )
    if arr.ndim == 2 and not allow_empty and np.isnan(arr).all(axis=1).any():
        raise ValueError(f"data[{name!r}] has rows where every position is NaN (missing).")
    return (arr[:, None] if arr.ndim == 1 else arr), labels


def leaf_columns(leaf) -> list[str]:
    """Data columns a leaf reads: its regressor, and the group of a grouped GP ``f(x|g)``.

    Parameters
    ----------
    leaf : pmctx.gum.terms.Term
        A leaf term.

    Returns
    -------
    list of str
        Column names.
    """
    group = getattr(leaf, "group", None)
    return [leaf.column] if group is None else [leaf.column, group]


def add_derived(blocks, columns: dict) -> None:
    """Build the columns of interaction and lag terms (in place).

    Parameters
    ----------
    blocks : list
        Product blocks of the expanded formula.
    columns : dict
        Data columns; derived columns are added to it.
    """
    for block in blocks:
        for factor in block:
            for leaf in factor:
                if leaf.derive is not None:
                    columns[leaf.column] = derive_column(leaf.derive, columns)


def _leaves(blocks):
    return [leaf for block in blocks for factor in block for leaf in factor]


def prepare_columns(blocks, columns: dict, response: str, family: str):
    """Validated response and regressors of the training data, with category labels.

    Parameters
    ----------
    blocks : list
        Product blocks of the expanded formula.
    columns : dict
        Data columns (:func:`data_columns`); derived columns are added to it.
    response : str
        The response column.
    family : str
        The GUM family.

    Returns
    -------
    y : numpy.ndarray, shape (N,)
        The response.
    prepared : dict
        2-D regressor columns by name.
    labels : dict
        Category labels by function name, and ``"<column>|group"`` for the groups of grouped
        GPs.
    """
    add_derived(blocks, columns)
    leaves = _leaves(blocks)
    needed = [response] + [c for leaf in leaves for c in leaf_columns(leaf)]
    missing = sorted({c for c in needed if c not in columns})
    if missing:
        raise ValueError(
            f"Unknown column(s) {missing} in the GUM; the data has columns "
            f"{sorted(columns)}. Fix the formula or rename the data columns."
        )
    y = response_values(family, columns[response], f"data[{response!r}]")
    check_nonempty(y, f"data[{response!r}]", unit="observation")
    derived = {leaf.column for leaf in leaves if leaf.derive is not None}
    categorical = {leaf.column for leaf in leaves if isinstance(leaf, Categorical)}
    groups = {leaf.group for leaf in leaves if getattr(leaf, "group", None)}
    prepared, labels = {}, {}
    for column in {c for leaf in leaves for c in leaf_columns(leaf)}:
        prepared[column], lab = regressor_values(
            columns[column], column, len(y), column in categorical | groups, column in derived
        )
        if lab is not None:
            labels.update({leaf.name: lab for leaf in leaves if leaf.column == column})
            if column in groups:  # level names of grouped GPs f(x|column)
                labels[f"{column}|group"] = lab
    return y, prepared, labels


def new_columns(blocks, labels: dict, data) -> tuple[dict, int]:
    """Validated 2-D regressor columns of new data (categorical labels mapped to codes).

    Parameters
    ----------
    blocks : list
        Product blocks of the model's formula.
    labels : dict
        The model's category labels (as :func:`prepare_columns` returns them).
    data : pandas.DataFrame or dict of arrays
        The new data.

    Returns
    -------
    columns : dict
        2-D regressor columns by name.
    n : int
        Rows of the new data.
    """
    columns = data_columns(data)
    add_derived(blocks, columns)
    leaves = _leaves(blocks)
    needed = sorted({c for leaf in leaves for c in leaf_columns(leaf)})
    missing = [c for c in needed if c not in columns]
    if missing:
        raise ValueError(
            f"New data lacks column(s) {missing} that the GUM uses; it has {sorted(columns)}."
        )
    lengths = {np.shape(columns[c])[0] if np.ndim(columns[c]) else 0 for c in needed}
    if len(lengths) != 1 or 0 in lengths:
        raise ValueError(
            f"New data columns {needed} must have the same number of rows, got {lengths}."
        )
    n = lengths.pop()
    prepared = {}
    for column in needed:
        values = np.asarray(columns[column])
        known = next(
            (labels[leaf.name] for leaf in leaves if leaf.column == column and leaf.name in labels),
            labels.get(f"{column}|group"),
        )
        if known is not None and values.dtype.kind in "OUSb":
            text = values.astype(str)
            codes = np.clip(np.searchsorted(known, text), 0, len(known) - 1)
            unseen = sorted(set(text[(known[codes] != text) & (text != "")]))
            if unseen:
                raise ValueError(
                    f"data[{column!r}] has level(s) {unseen[:5]} not seen in training "
                    f"(levels: {list(known)}). Predict only at training levels."
                )
            values = np.where(text == "", np.nan, codes.astype(float))
        prepared[column], _ = regressor_values(values, column, n, False, allow_empty=True)
    return prepared, n
