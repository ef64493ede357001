"""Gradient and Hessians of the GUM log joint through the functions' support values (sparse).

The predictor depends on the free vector ``u`` only through the support values ``theta`` of
the functions (plus offsets and the intercept), ``theta = theta0 + Q u``, and every data row
touches few support points: an exact or binned GP and a categorical term one (indicator
basis), an inducing-grid GP two (linear interpolation), a linear term one weight. So
``d rho / d theta`` is a sparse N x M matrix with a handful of non-zeros per row, and

``J^T W J = Q^T (J_theta^T W J_theta) Q``

costs O(N k^2) (k non-zeros per row) instead of the O(N D^2) of the dense N x D Jacobian
(``docs/benchmarks.md``). The same holds for the
curvature term ``sum_n d1_n d^2 rho_n / du du^T`` of products. The bases' sparse form
depends on the data only and is computed once per design; ``Q`` changes with the
hyperparameters and enters as a small dense M x D matrix.

Examples
--------
>>> import numpy as np
>>> from pmctx.gum import gum
>>> from pmctx.gum.curvature import derivatives
>>> rng = np.random.default_rng(0)
>>> data = {"x": rng.uniform(0, 2, 30), "y": rng.poisson(2.0, 30)}
>>> g = gum("y ~ f(x, max_points=8)", data, family="poisson")
>>> d = g.design
>>> u = np.zeros(d.n_free)
>>> rho = d.predictor(u)
>>> _, d1, w = d.loglik(rho)
>>> grad, fisher, exact = derivatives(d, u, d.factor_values(u), d1, w)
>>> bool(np.allclose(grad, d.jacobian(u).T @ d1 - u))
True
"""

from __future__ import annotations

import numba
import numpy as np

from pmctx.gum.design import GumDesign, _product_except, offset_name

__all__ = ["derivatives", "theta_map"]


def _ell(basis: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Padded sparse form of a basis (N, P, m): columns and values (N, P, k), k = max
    non-zeros of a row (padding entries have value 0)."""
    nonzero = basis != 0
    k = max(int(nonzero.sum(axis=-1).max(initial=0)), 1)
    cols = np.argsort(~nonzero, axis=-1, kind="stable")[..., :k]
    return cols, np.take_along_axis(basis, cols, axis=-1)


def _layout(design: GumDesign):
    """Theta-space columns of every free slot and the factors' sparse derivatives (cached)."""
    # data-only (survives hyperparameter changes, which reset design._jacobian_cache)
    key = tuple((name, s.start, s.stop) for name, s in design.slices.items())
    cache = design.__dict__.setdefault("_sparse_cache", {})
    if key in cache:
        return cache[key]
    starts, width = {}, 0
    for name, slot in design.slices.items():
        if slot.stop == slot.start:
            continue
        starts[name] = width
        width += design.functions[name].n_values if name in design.functions else 1
    factors = {}
    for i, block in enumerate(design.blocks):
        shape = design.masks[i].shape
        for j, factor in enumerate(block):
            cols, vals = [], []
            for use in factor:
                if use.basis is None or use.name not in starts:
                    continue
                c, v = _ell(use.basis)
                cols.append(c + starts[use.name])
                vals.append(v)
            label = offset_name((i, j))
            if design.offsets.get((i, j)) == "free":
                cols.append(np.full((*shape, 1), starts[label]))
                vals.append(np.ones((*shape, 1)))
            if cols:
                factors[(i, j)] = (np.concatenate(cols, axis=-1), np.concatenate(vals, axis=-1))
    cache[key] = (starts, width, factors)
    return cache[key]


def theta_map(design: GumDesign) -> np.ndarray:
    """Dense M x D matrix ``d theta / d u`` (block diagonal: ``Q`` per function, the prior
    sds of offsets and intercept); cached until the hyperparameters change.

    Parameters
    ----------
    design : GumDesign
        The model's design.

    Returns
    -------
    numpy.ndarray (M, D)
        The Jacobian of the parameter vector in the free vector.
    """
    cache = design._jacobian_cache
    if "theta_map" in cache:
        return cache["theta_map"]
    starts, width, _ = _layout(design)
    T = np.zeros((width, design.n_free))
    for name, start in starts.items():
        slot = design.slices[name]
        if name in design.functions:
            Q = design.functions[name].Q
            T[start : start + Q.shape[0], slot] = Q
        else:
            T[start, slot] = design.intercept_sd if name == "intercept" else design.offset_sd
    cache["theta_map"] = T
    return T


@numba.njit(cache=True)
def _cross(cols_a, vals_a, cols_b, vals_b, weight, out):  # pragma: no cover - numba
    """``out += A^T diag(weight) B`` for padded sparse rows A, B (rows x k)."""
    for r in range(vals_a.shape[0]):
        wr = weight[r]
        if wr == 0.0:
            continue
        for a in range(vals_a.shape[1]):
            va = wr * vals_a[r, a]
            if va == 0.0:
                continue
            ca = cols_a[r, a]
            for b in range(vals_b.shape[1]):
                out[ca, cols_b[r, b]] += va * vals_b[r, b]


@numba.njit(cache=True)
def _transpose_times(cols, vals, vector, width):  # pragma: no cover - numba
    """``A^T vector`` for padded sparse rows A."""
    out = np.zeros(width)
    for r in range(vals.shape[0]):
        for a in range(vals.shape[1]):
            out[cols[r, a]] += vals[r, a] * vector[r]
    return out


def theta_jacobian(design: GumDesign, values) -> tuple[np.ndarray, np.ndarray]:
    """``d rho / d theta`` (N x M) at the factor values ``values``, as padded sparse rows
    (columns and values, N x k).

    Parameters
    ----------
    design : GumDesign
        The model's design.
    values : list
        Factor values per block, at the current free vector.

    Returns
    -------
    cols : numpy.ndarray (N, k)
        Column index of each non-zero.
    vals : numpy.ndarray (N, k)
        Its value.
    """
    starts, _, factors = _layout(design)
    n = design.n_obs
    cols, vals = [], []
    for (i, j), (c, v) in factors.items():
        others = design.masks[i] * _product_except(values[i], (j,))
        cols.append(c.reshape(n, -1))
        vals.append((v * others[..., None]).reshape(n, -1))
    if "intercept" in starts:
        cols.append(np.full((n, 1), starts["intercept"]))
        vals.append(np.ones((n, 1)))
    return np.concatenate(cols, axis=1), np.ascontiguousarray(np.concatenate(vals, axis=1))


def _theta_curvature(design: GumDesign, values, d1: np.ndarray) -> np.ndarray:
    """``sum_n d1_n d^2 rho_n / dtheta dtheta^T`` (M x M): cross terms of factor pairs."""
    _, width, factors = _layout(design)
    C = np.zeros((width, width))
    for i, row in enumerate(values):
        for j in range(len(row)):
            for k in range(j + 1, len(row)):
                if (i, j) not in factors or (i, k) not in factors:
                    continue
                weight = d1[:, None] * design.masks[i] * _product_except(row, (j, k))
                cj, vj = factors[(i, j)]
                ck, vk = factors[(i, k)]
                block = np.zeros((width, width))
                _cross(
                    cj.reshape(-1, cj.shape[-1]),
                    vj.reshape(-1, cj.shape[-1]),
                    ck.reshape(-1, ck.shape[-1]),
                    vk.reshape(-1, ck.shape[-1]),
                    weight.ravel(),
                    block,
                )
                C += block + block.T
    return C


def derivatives(design: GumDesign, u: np.ndarray, values, d1: np.ndarray, w: np.ndarray):
    """Gradient of the log joint, Gauss-Newton/Fisher matrix ``J^T W J + I`` and the exact
    negative Hessian at ``u`` (``values``, ``d1``, ``w`` from the same ``u``).

    Parameters
    ----------
    design : GumDesign
        The model's design.
    u : numpy.ndarray (D,)
        Free vector.
    values : list
        Factor values at ``u``.
    d1 : numpy.ndarray (N,)
        First derivative of the log-likelihood in the predictor at ``u``.
    w : numpy.ndarray (N,)
        Negative second derivative (curvature weight) at ``u``.

    Returns
    -------
    grad : numpy.ndarray (D,)
        Gradient of the log joint.
    fisher : numpy.ndarray (D, D)
        ``J^T W J + I``.
    exact : numpy.ndarray (D, D)
        The exact negative Hessian.
    """
    T = theta_map(design)
    cols, vals = theta_jacobian(design, values)
    grad = T.T @ _transpose_times(cols, vals, d1, T.shape[0]) - u
    JWJ = np.zeros((T.shape[0], T.shape[0]))
    _cross(cols, vals, cols, vals, np.ascontiguousarray(w, dtype=float), JWJ)
    fisher = T.T @ JWJ @ T + np.eye(len(u))
    exact = fisher - T.T @ _theta_curvature(design, values, d1) @ T
    return grad, fisher, exact
