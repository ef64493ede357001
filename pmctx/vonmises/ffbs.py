"""Forward filtering of a column of the orientation map: the chain of auxiliary modes.

Given everything outside a chain of nodes ``o_0 .. o_{M-1}`` (a grid column), each node's
factor is a mixture ``g_i(o) = sum_c w_ic exp(v_ic . o)`` (neighbours off the chain,
observation and node prior) and consecutive nodes share the edge potential
``psi(o_i, o_{i+1}) = sum_u exp(kappa r_u . (o_i + o_{i+1}))``. Introducing the vertical
auxiliary modes ``u_i`` and integrating every angle out leaves a discrete chain::

    p(u) ∝ prod_i C_i(u_{i-1}, u_i),
    C_i(a, b) = sum_c w_ic 2 pi I0(|v_ic + kappa r_a + kappa r_b|),

which is filtered forward and sampled backward exactly; then each angle is drawn from its
von Mises mixture given its two modes (seed note §4.3, with the circle normaliser ``2 pi I0``
in place of the note's ``1 / C_3``, ERRATA). :func:`column_log_potentials` is ``log C_i``;
the node marginals of :mod:`pmctx.vonmises.marginals` and the chain smoother
(:mod:`pmctx.vonmises.chain`) filter with it, and :func:`horizontal_neighbour_terms` gives
the factors a column's neighbours contribute.

Examples
--------
>>> import numpy as np
>>> from pmctx.vonmises.potentials import mode_vectors
>>> log_c = column_log_potentials(np.zeros((1, 4, 1)), np.zeros((1, 4, 1, 2)), 2.0,
...                               mode_vectors(3))
>>> log_c.shape
(1, 4, 5, 5)
"""

from __future__ import annotations

import numpy as np

from pmctx.vonmises.potentials import combine_terms, log_circle_normaliser, neighbour_terms

__all__ = ["column_log_potentials", "horizontal_neighbour_terms"]

# Elements of the largest temporary array built at once (bounds memory at high rank).
_CHUNK_ELEMENTS = 2_000_000


def _lse(x, axis):
    peak = np.max(x, axis=axis, keepdims=True)
    peak = np.where(np.isfinite(peak), peak, 0.0)
    return np.squeeze(peak, axis=axis) + np.log(np.sum(np.exp(x - peak), axis=axis))


def _extended_modes(kappa: float, modes) -> np.ndarray:
    # Row K is the "no neighbour" mode (zero vector) used at both ends of a chain.
    return np.concatenate([kappa * modes, np.zeros((1, 2))], axis=0)


def column_log_potentials(
    log_weights, vectors, kappa: float, modes, *, log_normaliser=log_circle_normaliser
):
    """``log C_i(a, b)`` for every chain and node, shape ``(B, M, K + 1, K + 1)``.

    ``log_weights`` ``(B, M, C)`` and ``vectors`` ``(B, M, C, 2)`` describe the node factors;
    index ``K`` of ``a`` or ``b`` stands for "no vertical neighbour".

    Parameters
    ----------
    log_weights : numpy.ndarray (B, M, C)
        Log weights of the node factors' mixture terms.
    vectors : numpy.ndarray (B, M, C, 2)
        Natural vectors of those terms.
    kappa : float
        Smoothing concentration.
    modes : numpy.ndarray (K, 2)
        Mode unit vectors.

    log_normaliser : callable, default log_circle_normaliser
        ``log`` of the integral of ``exp(v . o)`` over the circle for ``|v| = r`` (the sphere
        normaliser exists only to show that it is wrong).

    Returns
    -------
    numpy.ndarray (B, M, K + 1, K + 1)
        ``log C_i(a, b)``.
    """
    ext = _extended_modes(kappa, modes)
    n_ext = ext.shape[0]
    # C_i(a, b) depends on r_a + r_b only, so it is symmetric: evaluate the upper triangle.
    upper_a, upper_b = np.triu_indices(n_ext)
    pair = ext[upper_a] + ext[upper_b]  # (P, 2)
    pair_sq = np.sum(pair**2, axis=-1)
    batch, length, n_comp = log_weights.shape
    out = np.empty((batch, length, n_ext, n_ext))
    per_row = batch * n_comp * pair.shape[0]
    rows = max(1, _CHUNK_ELEMENTS // max(per_row, 1))
    for start in range(0, length, rows):
        stop = min(start + rows, length)
        v = vectors[:, start:stop]  # (B, m, C, 2)
        # |v + w|^2 expanded so that the cross term is one matrix product.
        sq = np.sum(v**2, axis=-1)[..., None] + pair_sq + 2.0 * (v @ pair.T)
        terms = log_normaliser(np.sqrt(np.maximum(sq, 0.0)))
        if n_comp > 1:
            terms = _lse(log_weights[:, start:stop, :, None] + terms, axis=2)
        else:
            terms = log_weights[:, start:stop, 0, None] + terms[:, :, 0]
        out[:, start:stop, upper_a, upper_b] = terms
        out[:, start:stop, upper_b, upper_a] = terms
    return out


def horizontal_neighbour_terms(o, columns, kappa: float, modes):
    """Mixture terms ``(len(columns), M, K*K)`` from the left and right neighbours of columns.

    ``psi(o_left, o) psi(o, o_right)`` summed over both horizontal modes (the seed's scheme).

    Parameters
    ----------
    o : numpy.ndarray (M, N)
        Current doubled angles.
    columns : numpy.ndarray of int
        The columns to be redrawn.
    kappa : float
        Smoothing concentration.
    modes : numpy.ndarray (K, 2)
        Mode unit vectors.

    Returns
    -------
    log_weights : numpy.ndarray (len(columns), M, K*K)
        Log weights of the terms.
    vectors : numpy.ndarray (len(columns), M, K*K, 2)
        Their natural vectors.
    """
    n_cols = o.shape[1]
    left_idx = np.clip(columns - 1, 0, n_cols - 1)
    right_idx = np.clip(columns + 1, 0, n_cols - 1)
    shape = (len(columns), o.shape[0])
    lw_l, v_l = neighbour_terms(
        o[:, left_idx].T, np.broadcast_to((columns > 0)[:, None], shape), kappa, modes
    )
    lw_r, v_r = neighbour_terms(
        o[:, right_idx].T, np.broadcast_to((columns < n_cols - 1)[:, None], shape), kappa, modes
    )
    return combine_terms(lw_l, v_l, lw_r, v_r)
