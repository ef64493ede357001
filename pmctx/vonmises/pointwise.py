"""Point-wise Gibbs for the orientation map (the seed author's baseline).

The full conditional of one angle given its (up to four) neighbours and its observation is

    p(o | rest) ∝ exp(f . o) prod_{n in nbrs} sum_k exp(kappa r_k . o_n) exp(kappa r_k . o),

a mixture of ``(R + 1)^{#nbrs}`` von Mises terms ``w_c exp(v_c . o)``. Its exact component
probabilities are ``w_c 2 pi I0(|v_c|)`` (log space, ``i0e``). Nodes of one colour of the
checkerboard are conditionally independent, so a sweep updates all "black" nodes, then all
"white" nodes, each from its exact full conditional.

Examples
--------
>>> import numpy as np
>>> from pmctx.vonmises.pointwise import pointwise_sweep
>>> rng = np.random.default_rng(0)
>>> pointwise_sweep(np.zeros((3, 3)), np.zeros((3, 3, 2)), 2.0, 2, rng).shape
(3, 3)
"""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

from pmctx.vonmises.potentials import (
    combine_terms,
    log_circle_normaliser,
    mode_vectors,
    neighbour_terms,
    sample_categorical,
    sample_von_mises,
)

__all__ = ["log_node_conditional", "node_conditional_terms", "pointwise_sweep"]

_CHUNK_ELEMENTS = 2_000_000
_OFFSETS = ((-1, 0), (1, 0), (0, -1), (0, 1))


def node_conditional_terms(o, rows, cols, field, kappa: float, modes):
    """Mixture terms of the full conditionals of nodes ``(rows[i], cols[i])``.

    Returns ``log_weights`` ``(n, K^4)`` and natural vectors ``(n, K^4, 2)``; absent
    neighbours at the border contribute one neutral term, the rest have weight ``-inf``.

    Parameters
    ----------
    o : numpy.ndarray (M, N)
        Current doubled angles.
    rows, cols : numpy.ndarray of int
        The nodes.
    field : numpy.ndarray (M, N, 2)
        Natural parameters.
    kappa : float
        Smoothing concentration.
    modes : numpy.ndarray (K, 2)
        Mode unit vectors.

    Returns
    -------
    log_weights : numpy.ndarray (n, K^4)
        Log weights of the terms.
    vectors : numpy.ndarray (n, K^4, 2)
        Their natural vectors.
    """
    n_rows, n_cols = o.shape
    log_w = np.zeros((len(rows), 1))
    vecs = field[rows, cols][:, None, :]
    for dr, dc in _OFFSETS:
        r, c = rows + dr, cols + dc
        present = (r >= 0) & (r < n_rows) & (c >= 0) & (c < n_cols)
        o_n = o[np.clip(r, 0, n_rows - 1), np.clip(c, 0, n_cols - 1)]
        lw_n, v_n = neighbour_terms(o_n, present, kappa, modes)
        log_w, vecs = combine_terms(log_w, vecs, lw_n, v_n)
    return log_w, vecs


def log_node_conditional(
    angles,
    o,
    row: int,
    col: int,
    field,
    kappa: float,
    rank: int,
    *,
    log_normaliser=log_circle_normaliser,
):
    """Normalised log density of node ``(row, col)``'s full conditional at ``angles``.

    Normalised through the mixture's component masses ``log_normaliser(|v_c|)``; with the
    default circle normaliser this is exact.

    Parameters
    ----------
    angles : array_like
        Angles at which to evaluate.
    o : numpy.ndarray (M, N)
        Current doubled angles.
    row, col : int
        The node.
    field : numpy.ndarray (M, N, 2)
        Natural parameters.
    kappa : float
        Smoothing concentration.
    rank : int
        Rank of the potential.

    log_normaliser : callable, default log_circle_normaliser
        ``log`` of the integral of ``exp(v . o)`` over the circle for ``|v| = r`` (the sphere
        normaliser exists only to show that it is wrong).

    Returns
    -------
    numpy.ndarray
        Log density at ``angles``.
    """
    modes = mode_vectors(rank)
    log_w, vecs = node_conditional_terms(
        np.asarray(o, dtype=np.float64), np.array([row]), np.array([col]), field, kappa, modes
    )
    log_w, vecs = log_w[0], vecs[0]
    log_mass = logsumexp(log_w + log_normaliser(np.hypot(vecs[:, 0], vecs[:, 1])))
    unit = np.stack([np.cos(angles), np.sin(angles)], axis=-1)
    return logsumexp(log_w + unit @ vecs.T, axis=-1) - log_mass


def _draw_nodes(o, rows, cols, field, kappa, modes, rng, log_normaliser):
    log_w, vecs = node_conditional_terms(o, rows, cols, field, kappa, modes)
    logits = log_w + log_normaliser(np.hypot(vecs[..., 0], vecs[..., 1]))
    pick = sample_categorical(logits, rng)
    chosen = np.take_along_axis(vecs, pick[:, None, None], axis=1)[:, 0]
    return sample_von_mises(chosen, rng)


def pointwise_sweep(
    o, field, kappa: float, rank: int, rng, *, log_normaliser=log_circle_normaliser
):
    """One checkerboard sweep of point-wise Gibbs; returns the updated ``(M, N)`` angles.

    Parameters
    ----------
    o : ndarray, shape (M, N)
        Current doubled angles (not modified).
    field : ndarray, shape (M, N, 2)
        Natural parameters of observations and node priors.
    kappa : float
        Smoothing concentration.
    rank : int
        Rank ``R`` (``R + 1`` modes).
    rng : numpy.random.Generator
    log_normaliser : callable, default log_circle_normaliser
        ``log`` of the integral of ``exp(v . o)`` over the circle for ``|v| = r`` (the sphere
        normaliser exists only to show that it is wrong).

    Returns
    -------
    numpy.ndarray (M, N)
        The updated angles.
    """
    o = np.array(o, dtype=np.float64)
    modes = mode_vectors(rank)
    chunk = max(1, _CHUNK_ELEMENTS // modes.shape[0] ** 4)
    grid_r, grid_c = np.indices(o.shape)
    for colour in (0, 1):
        on = (grid_r + grid_c) % 2 == colour
        rows, cols = grid_r[on], grid_c[on]
        for start in range(0, rows.size, chunk):
            sl = slice(start, start + chunk)
            o[rows[sl], cols[sl]] = _draw_nodes(
                o, rows[sl], cols[sl], field, kappa, modes, rng, log_normaliser
            )
    return o
