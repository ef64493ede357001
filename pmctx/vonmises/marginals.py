"""Marginals of each node given the neighbouring columns, by forward-backward (seed §4.4).

For column ``j`` with the columns ``j - 1`` and ``j + 1`` held fixed, integrating the column's
angles out leaves a discrete chain over the vertical modes (see :mod:`pmctx.vonmises.ffbs`).
Forward messages ``F`` and backward messages ``B`` of that chain give the exact density of
each node,

    p(o_i | neighbouring columns, Z) = g_i(o) * sum_a F_{i-1}(a) exp(kappa r_a . o)
                                       * sum_b B_i(b) exp(kappa r_b . o) / Z,

evaluated here on a grid of angles, normalised by the chain's exact evidence ``Z``. Averaged
over posterior draws of the neighbouring columns (Rao-Blackwellisation) they show posterior
uncertainty more smoothly than histograms.

Examples
--------
>>> import numpy as np
>>> from pmctx.vonmises.marginals import column_marginals
>>> angles, dens = column_marginals(np.zeros((3, 2)), np.zeros((3, 2, 2)), 2.0, 3, n_angles=64)
>>> dens.shape, bool(np.allclose(dens.sum(axis=-1) * 2 * np.pi / 64, 1.0))
((2, 3, 64), True)
"""

from __future__ import annotations

import numpy as np

from pmctx.vonmises.ffbs import _lse, column_log_potentials, horizontal_neighbour_terms
from pmctx.vonmises.potentials import mode_vectors

__all__ = ["column_marginals"]


def column_marginals(o, field, kappa: float, rank: int, *, columns=None, n_angles: int = 128):
    """Exact densities of every node of ``columns`` given the other columns.

    Parameters
    ----------
    o : ndarray, shape (M, N)
        Doubled angles; only the neighbours of ``columns`` matter.
    field : ndarray, shape (M, N, 2)
        Natural parameters of observations and node priors.
    kappa : float
        Smoothing concentration.
    rank : int
        Rank ``R``.
    columns : array_like of int, optional
        Columns to evaluate (default: all).
    n_angles : int, default 128
        Size of the angle grid (midpoints of equal bins on ``[-pi, pi)``).

    Returns
    -------
    angles : ndarray, shape (n_angles,)
    density : ndarray, shape (len(columns), M, n_angles)
        Densities with respect to the angle (each integrates to one).
    """
    o = np.asarray(o, dtype=np.float64)
    n_rows = o.shape[0]
    columns = np.arange(o.shape[1]) if columns is None else np.atleast_1d(columns).astype(int)
    modes = mode_vectors(rank)
    n_modes = modes.shape[0]
    null = n_modes
    log_w, vecs = horizontal_neighbour_terms(o, columns, kappa, modes)
    vecs = vecs + field[:, columns].transpose(1, 0, 2)[:, :, None, :]
    log_c = column_log_potentials(log_w, vecs, kappa, modes)
    batch = len(columns)

    forward = np.zeros((batch, max(n_rows - 1, 1), n_modes))
    backward = np.zeros((batch, max(n_rows - 1, 1), n_modes))
    if n_rows == 1:
        log_evidence = log_c[:, 0, null, null]
    else:
        forward[:, 0] = log_c[:, 0, null, :n_modes]
        for i in range(1, n_rows - 1):
            forward[:, i] = _lse(forward[:, i - 1, :, None] + log_c[:, i, :n_modes, :n_modes], 1)
        backward[:, -1] = log_c[:, -1, :n_modes, null]
        for i in range(n_rows - 2, 0, -1):
            backward[:, i - 1] = _lse(log_c[:, i, :n_modes, :n_modes] + backward[:, i, None, :], 2)
        log_evidence = _lse(forward[:, -1] + backward[:, -1], 1)

    angles = -np.pi + (np.arange(n_angles) + 0.5) * 2.0 * np.pi / n_angles
    unit = np.stack([np.cos(angles), np.sin(angles)], axis=-1)  # (L, 2)
    mode_dot = kappa * unit @ modes.T  # (L, K)
    density = np.empty((batch, n_rows, n_angles))
    for i in range(n_rows):
        log_node = _lse(log_w[:, i, :, None] + vecs[:, i] @ unit.T, 1)  # (B, L)
        if i > 0:
            log_node = log_node + _lse(forward[:, i - 1, None, :] + mode_dot, 2)
        if i < n_rows - 1:
            log_node = log_node + _lse(backward[:, i, None, :] + mode_dot, 2)
        density[:, i] = np.exp(log_node - log_evidence[:, None])
    return angles, density
