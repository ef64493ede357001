"""Full conditional of one node of the orientation map, as a von Mises mixture.

The full conditional of one angle given its (up to four) neighbours and its observation is

    p(o | rest) ∝ exp(f . o) prod_{n in nbrs} sum_k exp(kappa r_k . o_n) exp(kappa r_k . o),

a mixture of ``(R + 1)^{#nbrs}`` von Mises terms ``w_c exp(v_c . o)``; its exact component
masses are ``w_c 2 pi I0(|v_c|)`` (log space, ``i0e``). :func:`node_conditional_terms` gives
those terms for many nodes at once; the held-out pixel densities of
:mod:`pmctx.vonmises.select` integrate them against the observation model.

Examples
--------
>>> import numpy as np
>>> from pmctx.vonmises.potentials import mode_vectors
>>> log_w, vecs = node_conditional_terms(np.zeros((3, 3)), np.array([1]), np.array([1]),
...                                      np.zeros((3, 3, 2)), 2.0, mode_vectors(2))
>>> log_w.shape, vecs.shape
((1, 81), (1, 81, 2))
"""

from __future__ import annotations

import numpy as np

from pmctx.vonmises.potentials import combine_terms, neighbour_terms

__all__ = ["node_conditional_terms"]

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
