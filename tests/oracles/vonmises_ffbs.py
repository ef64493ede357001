"""Exact joint draws of columns of the orientation map by FFBS: oracles for the tests.

:func:`sample_chains` filters the chain of auxiliary modes forward with
:func:`pmctx.vonmises.ffbs.column_log_potentials` and samples it backward, then draws each
angle from its von Mises mixture given its two modes. The augmented sampler's compiled chain
draw (:func:`pmctx.vonmises.augmented.augmented_sweep`) has the same law with one component
per node; the tests compare the two, and check this one against quadrature.
:func:`ffbs_sweep` is the seed note's column-block Gibbs sampler built on it (the horizontal
modes of both neighbouring columns summed out): a second exact sampler of the map, by another
algorithm, that the augmented sampler must agree with where exact enumeration cannot reach.
"""

from __future__ import annotations

import numpy as np

from pmctx.vonmises.ffbs import (
    _extended_modes,
    _lse,
    column_log_potentials,
    horizontal_neighbour_terms,
)
from pmctx.vonmises.potentials import (
    log_circle_normaliser,
    mode_vectors,
    sample_categorical,
    sample_von_mises,
)


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
