"""Block Gibbs for a column of the orientation map: forward-filter backward-sample (FFBS).

Given everything outside a chain of nodes ``o_0 .. o_{M-1}`` (a grid column), each node's
factor is a mixture ``g_i(o) = sum_c w_ic exp(v_ic . o)`` (neighbours off the chain,
observation and node prior) and consecutive nodes share the edge potential
``psi(o_i, o_{i+1}) = sum_u exp(kappa r_u . (o_i + o_{i+1}))``. Introducing the vertical
auxiliary modes ``u_i`` and integrating every angle out leaves a discrete chain::

    p(u) ∝ prod_i C_i(u_{i-1}, u_i),
    C_i(a, b) = sum_c w_ic 2 pi I0(|v_ic + kappa r_a + kappa r_b|),

which is filtered forward and sampled backward exactly; then each angle is drawn from its
von Mises mixture given its two modes. This is seed note §4.3 with the circle normaliser
``2 pi I0`` in place of the note's ``1 / C_3`` (ERRATA). :func:`sample_chains` is the kernel
shared with the augmented sampler; :func:`ffbs_sweep` is the seed's scheme, which sums out
the horizontal modes of both neighbouring columns (``(R+1)^2`` components per node, so
``(R+1)^4`` work per node) and therefore updates only every other column at a time.

Examples
--------
>>> import numpy as np
>>> from pmctx.vonmises.ffbs import ffbs_sweep
>>> rng = np.random.default_rng(0)
>>> o = ffbs_sweep(np.zeros((4, 3)), np.zeros((4, 3, 2)), 2.0, 3, rng)
>>> o.shape
(4, 3)
"""

from __future__ import annotations

import numpy as np

from pmctx.vonmises.potentials import (
    combine_terms,
    log_circle_normaliser,
    mode_vectors,
    neighbour_terms,
    sample_categorical,
    sample_von_mises,
)

__all__ = ["column_log_potentials", "ffbs_sweep", "sample_chains"]

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


def sample_chains(
    log_weights, vectors, kappa: float, modes, rng, *, log_normaliser=log_circle_normaliser
):
    """Exact joint draw of ``B`` independent chains of angles by FFBS.

    Parameters
    ----------
    log_weights : ndarray, shape (B, M, C)
        Log weights of the mixture terms of each node's off-chain factor (``-inf`` allowed).
    vectors : ndarray, shape (B, M, C, 2)
        Natural-parameter vectors of those terms.
    kappa : float
        Smoothing concentration of the edges along the chain.
    modes : ndarray, shape (K, 2)
        Mode unit vectors (:func:`~pmctx.vonmises.potentials.mode_vectors`).
    rng : numpy.random.Generator
    log_normaliser : callable, optional
        ``log of the integral of exp(v . o)``; the default is the correct circle normaliser.

    Returns
    -------
    angles : ndarray, shape (B, M)
    log_evidence : ndarray, shape (B,)
        ``log`` of the integral of the chain's unnormalised conditional density.
    """
    batch, length, n_comp = log_weights.shape
    n_modes = modes.shape[0]
    null = n_modes
    log_c = column_log_potentials(log_weights, vectors, kappa, modes, log_normaliser=log_normaliser)
    chains = np.arange(batch)
    aux = np.full((batch, length + 1), null, dtype=np.int64)  # aux[:, i + 1] = u_i
    if length == 1:
        log_evidence = log_c[:, 0, null, null]
    else:
        forward = np.empty((batch, length - 1, n_modes))
        forward[:, 0] = log_c[:, 0, null, :n_modes]
        for i in range(1, length - 1):
            forward[:, i] = _lse(
                forward[:, i - 1, :, None] + log_c[:, i, :n_modes, :n_modes], axis=1
            )
        last = forward[:, -1] + log_c[:, -1, :n_modes, null]
        log_evidence = _lse(last, axis=1)
        aux[:, length - 1] = sample_categorical(last, rng)
        for i in range(length - 2, 0, -1):
            nxt = aux[:, i + 1]
            logits = forward[:, i - 1] + log_c[chains, i, :n_modes, nxt]
            aux[:, i] = sample_categorical(logits, rng)
    ext = _extended_modes(kappa, modes)
    natural = vectors + (ext[aux[:, :-1]] + ext[aux[:, 1:]])[:, :, None, :]
    if n_comp > 1:
        logits = log_weights + log_normaliser(np.hypot(natural[..., 0], natural[..., 1]))
        pick = sample_categorical(logits, rng)
        natural = np.take_along_axis(natural, pick[..., None, None], axis=2)
    return sample_von_mises(natural[:, :, 0], rng), log_evidence


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


def ffbs_sweep(o, field, kappa: float, rank: int, rng, *, log_normaliser=log_circle_normaliser):
    """One sweep of the seed's column-block Gibbs sampler (even columns, then odd columns).

    Columns of one parity are conditionally independent given the others, so each half-sweep
    draws all of them at once, each exactly from ``p(column | neighbouring columns, Z)``.

    Parameters
    ----------
    o : ndarray, shape (M, N)
        Current doubled angles (not modified).
    field : ndarray, shape (M, N, 2)
        Natural parameters of observations and node priors
        (:func:`~pmctx.vonmises.potentials.natural_field`).
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
    ndarray, shape (M, N)
        The updated angles.
    """
    o = np.array(o, dtype=np.float64)
    modes = mode_vectors(rank)
    for parity in (0, 1):
        columns = np.arange(parity, o.shape[1], 2)
        if columns.size == 0:
            continue
        log_w, vecs = horizontal_neighbour_terms(o, columns, kappa, modes)
        vecs = vecs + field[:, columns].transpose(1, 0, 2)[:, :, None, :]
        angles, _ = sample_chains(log_w, vecs, kappa, modes, rng, log_normaliser=log_normaliser)
        o[:, columns] = angles.T
    return o
