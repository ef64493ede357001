"""Columns that formula operators build from the data: interactions and lags.

* ``cat(a):cat(b)`` -- one level per observed pair of levels (``"a_level:b_level"``);
* ``w(p|g)`` -- one level per pair (level of ``p``, level of ``g``), ``p`` may be 2-D
  (positions; absent positions stay absent, written ``''``);
* ``lag(x, lags=1:3)`` -- a (N x lags) matrix of past values ``x[t - lag]`` (NaN before the
  start, so those positions drop out) and the matching lag index, so that
  ``w(lag index) * [lagged x]`` is the temporal kernel ``sum_k w_k x[t - k]``.

Examples
--------
>>> import numpy as np
>>> from pmctx.gum.derived import derive_column
>>> derive_column(("lag", ("x", (1, 2))), {"x": np.array([1.0, 2.0, 3.0])}).tolist()
[[nan, nan], [1.0, nan], [2.0, 1.0]]
>>> derive_column(("interaction", ("a", "b")), {"a": np.array([0, 1]), "b": ["u", "v"]}).tolist()
['0:u', '1:v']
>>> p = np.array([[0.0, 1.0], [0.0, np.nan]])
>>> derive_column(("nested", ("p", "g")), {"p": p, "g": np.array(["s1", "s2"])}).tolist()
[['0|s1', '1|s1'], ['0|s2', '']]
"""

from __future__ import annotations

import numpy as np

__all__ = ["derive_column", "source_columns"]


def source_columns(derive) -> tuple[str, ...]:
    """Data columns a derived column is built from.

    Parameters
    ----------
    derive : tuple
        ``(kind, args)`` of a derived column (``interaction``, ``nested``, ``lag``, ...).

    Returns
    -------
    tuple of str
        The data columns it reads.

    Examples
    --------
    >>> source_columns(("interaction", ("a", "b")))
    ('a', 'b')
    """
    kind, args = derive
    return tuple(args) if kind in ("interaction", "nested") else (args[0],)


def _lagged(x: np.ndarray, lags) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    if x.ndim != 1:
        raise ValueError(f"lag(...) needs a 1-D regressor, got shape {x.shape}.")
    out = np.full((x.size, len(lags)), np.nan)
    for k, lag in enumerate(lags):
        if lag < x.size:
            out[lag:, k] = x[: x.size - lag]
    return out


def derive_column(derive, columns: dict) -> np.ndarray:
    """Build the derived column ``derive = (kind, args)`` from data ``columns``.

    Parameters
    ----------
    derive : tuple
        ``(kind, args)`` of a derived column.
    columns : dict
        Data columns by name.

    Returns
    -------
    numpy.ndarray
        The derived column.
    """
    kind, args = derive
    missing = [c for c in source_columns(derive) if c not in columns]
    if missing:
        raise ValueError(f"{kind} term needs column(s) {missing}; the data has {sorted(columns)}.")
    if kind == "interaction":
        parts = [np.asarray(columns[c]).astype(str) for c in args]
        if len({p.shape for p in parts}) != 1 or parts[0].ndim != 1:
            raise ValueError(f"Interaction columns {list(args)} must be 1-D of equal length.")
        out = parts[0]
        for part in parts[1:]:
            out = np.char.add(np.char.add(out, ":"), part)
        return out
    if kind == "nested":
        inner, group = np.asarray(columns[args[0]]), np.asarray(columns[args[1]])
        if group.ndim != 1 or group.shape[0] != inner.shape[0]:
            raise ValueError(f"The group column {args[1]!r} of w({args[0]}|{args[1]}) must be 1-D.")
        if inner.dtype.kind in "fc":
            present = np.isfinite(inner)
            text = np.char.mod("%g", np.where(present, inner, 0.0))
        else:
            present = np.ones(inner.shape, bool)
            text = inner.astype(str)
        group = group.astype(str).reshape(-1, *([1] * (inner.ndim - 1)))
        pairs = np.char.add(np.char.add(text, "|"), np.broadcast_to(group, inner.shape))
        return np.where(present, pairs, "")
    if kind == "lag":
        return _lagged(columns[args[0]], args[1])
    if kind == "lagindex":
        lagged = _lagged(columns[args[0]], args[1])
        index = np.broadcast_to(np.arange(len(args[1]), dtype=float), lagged.shape)
        return np.where(np.isfinite(lagged), index, np.nan)
    raise ValueError(f"Unknown derived column kind {kind!r}.")
