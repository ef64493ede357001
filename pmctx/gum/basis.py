"""Support points of each function and the basis mapping its parameters to the data.

A GP lives on the sorted unique values of its inputs when there are at most ``max_points`` of
them (exact), otherwise on an even grid of ``max_points`` points with linear interpolation to
the data (an inducing-grid sparse GP: each data row has two non-zero basis weights).
Categorical terms live on their levels (one-hot basis), linear terms on one weight
(basis = the regressor). NaN inputs (absent positions of 2-D regressors) get zero rows.

Examples
--------
>>> import numpy as np
>>> from pmctx.gum.basis import _interpolation
>>> _interpolation(np.array([0.25]), np.array([0.0, 1.0])).tolist()
[[0.75, 0.25]]
"""

from __future__ import annotations

import numpy as np

from pmctx.gum.terms import Categorical, Linear

__all__ = ["basis_matrix", "quantile_bins", "support_points"]


def _interpolation(x: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """Linear-interpolation weights (len(x) x len(grid)); rows of NaN inputs are zero."""
    W = np.zeros((x.size, grid.size))
    ok = np.isfinite(x)
    xs = np.clip(x[ok], grid[0], grid[-1])
    idx = np.clip(np.searchsorted(grid, xs, side="right") - 1, 0, grid.size - 2)
    t = (xs - grid[idx]) / (grid[idx + 1] - grid[idx])
    rows = np.flatnonzero(ok)
    W[rows, idx] = 1.0 - t
    W[rows, idx + 1] = t
    return W


def _indicator(x: np.ndarray, support: np.ndarray) -> np.ndarray:
    W = np.zeros((x.size, support.size))
    ok = np.isfinite(x)
    W[np.flatnonzero(ok), np.searchsorted(support, x[ok])] = 1.0
    return W


def quantile_bins(values: np.ndarray, n_bins: int) -> tuple[np.ndarray, np.ndarray]:
    """Inner bin edges at the quantiles of ``values`` (equal counts) and each bin's mean.

    Parameters
    ----------
    values : numpy.ndarray
        Finite input values.
    n_bins : int
        Number of bins.

    Returns
    -------
    edges : numpy.ndarray
        Inner bin edges (unique, at most ``n_bins - 1``).
    means : numpy.ndarray
        Mean of the values in each bin.

    Examples
    --------
    >>> edges, means = quantile_bins(np.arange(8.0), 2)
    >>> edges.tolist(), means.tolist()
    ([3.5], [1.5, 5.5])
    """
    edges = np.unique(np.quantile(values, np.linspace(0, 1, int(n_bins) + 1)[1:-1]))
    index = np.searchsorted(edges, values, side="right")
    means = np.array([values[index == k].mean() for k in range(edges.size + 1)])
    return edges, means


def support_points(leaf, inputs: list[np.ndarray]) -> tuple[np.ndarray, bool, np.ndarray | None]:
    """Support points of ``leaf`` over all its inputs, whether they are exact, and the inner
    bin edges of a binned GP (None otherwise).

    Parameters
    ----------
    leaf : pmctx.gum.terms.Term
        A leaf term (GP, categorical, linear, ...).
    inputs : list of numpy.ndarray
        Every input column of the leaf (NaN where absent).

    Returns
    -------
    support : numpy.ndarray
        The support points.
    exact : bool
        Whether every input is a support point.
    edges : numpy.ndarray or None
        Inner bin edges of a binned GP.
    """
    support, exact = _support(leaf, inputs)
    if getattr(leaf, "binning", None) is None:
        return support, exact, None
    values = np.concatenate([x[np.isfinite(x)] for x in inputs])
    edges, means = quantile_bins(values, leaf.binning)
    return means, False, edges


def _support(leaf, inputs):
    values = np.concatenate([x[np.isfinite(x)] for x in inputs])
    if isinstance(leaf, Linear):
        return np.array([0.0]), True
    unique = np.unique(values)
    if not isinstance(leaf, Categorical) and unique.size < 2:
        shown = "no finite values" if unique.size == 0 else f"the single value {float(unique[0]):g}"
        raise ValueError(
            f"Regressor {leaf.column!r} of the GP {leaf.name!r} has {shown}; a function of a "
            "constant cannot be told apart from the intercept. Drop the term, or check the "
            "column (e.g. a filter that left one condition)."
        )
    if isinstance(leaf, Categorical) or unique.size <= int(leaf.max_points):
        return unique, True
    return np.linspace(unique[0], unique[-1], int(leaf.max_points)), False


def basis_matrix(leaf, fn, x: np.ndarray) -> np.ndarray:
    """Basis (x.shape + (m,)) of ``fn`` (a FunctionDesign) at inputs ``x``.

    Parameters
    ----------
    leaf : pmctx.gum.terms.Term
        The function's leaf term.
    fn : pmctx.gum.design.FunctionDesign
        The function's design (support, edges).
    x : numpy.ndarray
        Inputs (any shape; NaN gives a zero row).

    Returns
    -------
    numpy.ndarray
        Shape ``x.shape + (m,)``: indicator, interpolation or bin weights, times the leaf's scale.
    """
    flat = x.reshape(-1)
    if isinstance(leaf, Linear):
        W = np.where(np.isfinite(flat), flat, 0.0)[:, None]
    elif getattr(fn, "edges", None) is not None:
        W = np.zeros((flat.size, fn.support.size))
        ok = np.isfinite(flat)
        W[np.flatnonzero(ok), np.searchsorted(fn.edges, flat[ok], side="right")] = 1.0
    elif fn.exact:
        W = _indicator(flat, fn.support)
    else:
        W = _interpolation(flat, fn.support)
    return leaf.scale * W.reshape(*x.shape, -1)
