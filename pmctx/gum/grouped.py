"""Grouped GP functions ``f(x|g)``: one function of ``x`` per level of ``g``, partially pooled.

A grouped GP ``f_g(x)``, ``g = 1..G``, lives on the product of the levels and one support of
``x`` shared by every level (the support rule of :mod:`pmctx.gum.design` applied to the inputs
of all levels). Its values are stacked level-major, ``theta = (f_1(s), ..., f_G(s))``, with
the prior

``theta ~ N(theta0, P^T P (I_G (x) K(s, s)) P^T P)``

-- the levels are independent GPs *given* the hyperparameters ``lengthscale`` and
``variance``, which they share. Sharing them is the partial pooling: the Laplace evidence
(:func:`pmctx.gum.hyper.fit_evidence`, which fits the shared lengthscale and variance of a
grouped GP by default) learns from all levels together how far and how smoothly the levels'
functions differ, and shrinks each level's function accordingly. An observation ``n`` uses
the function of its own level, ``f_{g_n}(x_n)``, so the basis of a grouped GP is the basis of
``x`` placed into the block of columns of level ``g_n``.

Identifiability: the constraint the default rule assigns (:mod:`pmctx.gum.constraints`)
applies to the stacked vector ``theta`` as a whole -- one linear constraint, like a single
function's. That is exactly the degeneracy a grouped function adds: in a sum the intercept
and a common shift of every level trade off (``mean-zero`` over all levels and support points
removes it, and leaves each level its own offset, partially pooled by the GP variance); in a
product one common scale trades off with the other factors (``mean-one`` over the stack). A
per-level constraint would remove level offsets and level scales the data do identify.

The hierarchical model ``f(x) + f(x|g)`` -- a population function plus level deviations
``delta_g(x)`` that share their hyperparameters -- is one ``pm.Model`` through the same
machinery: ``f_g(x) = f_pop(x) + delta_g(x)``. The split between ``f_pop`` and the average
deviation is set by the priors (as in any hierarchical model: ``w(p) + w(p|s)``, or random
intercepts beside an intercept), not by the data: read ``f_pop`` as the population function
and ``f_pop + delta_g`` as level ``g``'s function.

Examples
--------
>>> import numpy as np
>>> from pmctx.gum import gum
>>> rng = np.random.default_rng(0)
>>> x, g = rng.uniform(0, 2, 90), np.repeat(["s1", "s2", "s3"], 30)
>>> shift = {"s1": 0.3, "s2": 0.0, "s3": -0.3}
>>> y = rng.poisson(np.exp(np.sin(2 * x) + np.array([shift[s] for s in g])))
>>> model = gum("y ~ f(x, max_points=8) + f(x|g, max_points=8, variance=0.2)",
...             {"x": x, "g": g, "y": y}, family="poisson")
>>> model.design.functions["f_x_g"].n_values
24
>>> idata = model.laplace(draws=50)
>>> dict(idata.posterior["f_x_g"].sizes)
{'chain': 1, 'draw': 50, 'f_x_g_level': 3, 'f_x_g_x': 8}
>>> model.function_values("f_x_g", [0.5, 1.5], draws=50).shape
(1, 50, 3, 2)
"""

from __future__ import annotations

import numpy as np

__all__ = ["group_levels", "grouped_basis", "grouped_cov", "level_index"]


def group_levels(values: list[np.ndarray]) -> np.ndarray:
    """Sorted distinct finite level codes over every use's group column.

    Parameters
    ----------
    values : list of ndarray
        Group codes (any shape; NaN marks an absent position).

    Returns
    -------
    ndarray
        The distinct codes, sorted.
    """
    stacked = np.concatenate([np.asarray(v, float).reshape(-1) for v in values])
    return np.unique(stacked[np.isfinite(stacked)])


def level_index(groups: np.ndarray, levels: np.ndarray, name: str) -> np.ndarray:
    """Position of each group code among ``levels`` (-1 for NaN); unseen levels are an error.

    Parameters
    ----------
    groups : ndarray
        Group codes of the rows (NaN: absent).
    levels : ndarray
        The function's levels (:func:`group_levels` of the training data).
    name : str
        The function's name, for the error message.

    Returns
    -------
    ndarray of int
        ``groups``' shape, the level position of each code.
    """
    groups = np.asarray(groups, float)
    ok = np.isfinite(groups)
    index = np.full(groups.shape, -1, dtype=int)
    found = np.clip(np.searchsorted(levels, groups[ok]), 0, len(levels) - 1)
    unseen = groups[ok][levels[found] != groups[ok]]
    if unseen.size:
        raise ValueError(
            f"The grouped GP {name!r} has no function for group level(s) "
            f"{np.unique(unseen)[:5].tolist()} that the training data did not contain. "
            "Predict only at levels seen in training."
        )
    index[ok] = found
    return index


def grouped_basis(basis_x: np.ndarray, index: np.ndarray, n_levels: int) -> np.ndarray:
    """Place the ``x`` basis (N, P, m) of each row into the columns of its level.

    Parameters
    ----------
    basis_x : ndarray of shape (N, P, m)
        Basis of the regressor ``x`` on the shared support.
    index : ndarray of int, shape (N, P)
        Each row's level position (-1: absent, a zero row).
    n_levels : int
        Number of levels.

    Returns
    -------
    ndarray of shape (N, P, n_levels * m)
        Level-major, like the stacked values.
    """
    n, p, m = basis_x.shape
    out = np.zeros((n, p, int(n_levels), m))
    rows, positions = np.nonzero(index >= 0)
    out[rows, positions, index[rows, positions]] = basis_x[rows, positions]
    return out.reshape(n, p, n_levels * m)


def grouped_cov(K: np.ndarray, n_levels: int) -> np.ndarray:
    """Block-diagonal ``I_levels (x) K``: independent levels with one shared covariance.

    Parameters
    ----------
    K : ndarray of shape (m, m)
        One level's prior covariance.
    n_levels : int
        Number of levels.

    Returns
    -------
    ndarray of shape (n_levels * m, n_levels * m)
    """
    return np.kron(np.eye(int(n_levels)), K)
