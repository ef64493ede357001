"""Low-rank von Mises edge potentials, the circle normaliser and small sampling helpers.

The orientation-map prior couples 4-neighbours ``a, b`` on the grid of doubled angles ``o``
through the rank-``R`` edge potential::

    psi(o_a, o_b) = sum_{k=0}^{R} exp(kappa cos(o_a - phi_k)) exp(kappa cos(o_b - phi_k)),
    phi_k = 2 pi k / (R + 1),

i.e. ``R + 1`` modes ("rank R" means R + 1 auxiliary states, see ERRATA). Every sampler in
:mod:`pmctx.vonmises` writes a node's conditional as a mixture of terms ``w_c exp(v_c . o)``
with natural-parameter vectors ``v_c`` in R^2, whose integrals over the circle are
``2 pi I0(|v_c|)``: :func:`log_circle_normaliser`. The seed note used the 2-sphere constant
``1 / C_3`` instead (:func:`log_sphere_normaliser`, kept only to show that it is wrong).

Examples
--------
>>> import numpy as np
>>> from pmctx.vonmises.potentials import log_circle_normaliser
>>> round(float(np.exp(log_circle_normaliser(0.0)) / (2 * np.pi)), 12)
1.0
"""

from __future__ import annotations

import numpy as np
from scipy.special import i0e, logsumexp

__all__ = [
    "LOG_2PI",
    "combine_terms",
    "log_circle_normaliser",
    "log_edge_potential",
    "log_joint",
    "log_sphere_normaliser",
    "mode_vectors",
    "natural_field",
    "neighbour_terms",
    "sample_categorical",
    "sample_von_mises",
    "wrap_angle",
]

LOG_2PI = float(np.log(2.0 * np.pi))


def wrap_angle(angle):
    """Wrap angles into ``[-pi, pi)``.

    Parameters
    ----------
    angle : array_like
        Angles in radians.

    Returns
    -------
    numpy.ndarray
        Wrapped angles.

    Examples
    --------
    >>> wrap_angle([np.pi, 3 * np.pi / 2]).round(3).tolist()
    [-3.142, -1.571]
    """
    return np.mod(np.asarray(angle, dtype=np.float64) + np.pi, 2.0 * np.pi) - np.pi


def mode_vectors(rank: int) -> np.ndarray:
    """Unit vectors ``r_k`` at angles ``2 pi k / (rank + 1)``, shape ``(rank + 1, 2)``.

    Parameters
    ----------
    rank : int
        Rank ``R``.

    Returns
    -------
    numpy.ndarray (R + 1, 2)
        The unit vectors.
    """
    phases = 2.0 * np.pi * np.arange(rank + 1) / (rank + 1)
    return np.stack([np.cos(phases), np.sin(phases)], axis=-1)


def log_circle_normaliser(r):
    """Log of the integral over the circle of ``exp(v · o) do`` for ``|v| = r``.

    Equals ``log(2 pi I0(r))``, computed as ``log(2 pi) + log(i0e(r)) + r`` so that large
    concentrations do not overflow.

    Parameters
    ----------
    r : array_like
        Lengths of the natural vectors.

    Returns
    -------
    numpy.ndarray
        ``log(2 pi I0(r))``.
    """
    r = np.asarray(r, dtype=np.float64)
    return LOG_2PI + np.log(i0e(r)) + r


def log_sphere_normaliser(r):
    """The seed note's (wrong) normaliser ``log(1 / C_3(r)) = log(4 pi sinh(r) / r)``.

    ``C_3`` normalises the von Mises-Fisher density on the 2-sphere in R^3, not on the circle;
    it is here only so that tests can show that using it gives the wrong conditionals.

    Parameters
    ----------
    r : array_like
        Lengths of the natural vectors.

    Returns
    -------
    numpy.ndarray
        ``log(4 pi sinh(r) / r)``.
    """
    r = np.asarray(r, dtype=np.float64)
    safe = np.maximum(r, 1e-8)
    # log sinh(r) - log(r) written to be stable for large r and exact as r -> 0.
    log_sinh_over_r = np.where(
        r > 1e-8,
        safe + np.log1p(-np.exp(-2.0 * safe)) - np.log(2.0 * safe),
        0.0,
    )
    return np.log(4.0 * np.pi) + log_sinh_over_r


def log_edge_potential(o_a, o_b, kappa: float, rank: int):
    """``log psi(o_a, o_b)`` of the rank-``rank`` von Mises edge potential (broadcasts).

    Parameters
    ----------
    o_a, o_b : array_like
        Endpoint angles (broadcast).
    kappa : float
        Smoothing concentration.
    rank : int
        Rank of the potential.

    Returns
    -------
    numpy.ndarray
        ``log psi``.
    """
    phases = 2.0 * np.pi * np.arange(rank + 1) / (rank + 1)
    a = np.asarray(o_a, dtype=np.float64)[..., None]
    b = np.asarray(o_b, dtype=np.float64)[..., None]
    return logsumexp(kappa * (np.cos(a - phases) + np.cos(b - phases)), axis=-1)


def natural_field(
    z, mask, kappa_obs: float, *, prior_mean=None, prior_kappa: float = 0.0, signal=None
):
    """Per-node natural parameters ``(M, N, 2)`` of the observation and node-prior terms.

    An observed node contributes ``s kappa_obs (cos z, sin z)``, ``s`` its known relative
    signal strength (``signal``, default 1); a von Mises node prior with mean ``prior_mean``
    adds ``prior_kappa (cos mu, sin mu)``. Missing nodes (mask 0) get only the prior. ``z``
    may hold anything finite at missing nodes.

    Parameters
    ----------
    z : array_like (M, N)
        Observed doubled angles.
    mask : array_like (M, N) of 0/1
        1 where observed.
    kappa_obs : float
        Observation concentration.
    prior_mean : array_like, optional
        Node-prior mean.
    prior_kappa : float, default 0.0
        Node-prior concentration.
    signal : array_like, optional
        Relative signal strength per node.

    Returns
    -------
    numpy.ndarray (M, N, 2)
        The natural parameters.
    """
    z = np.asarray(z, dtype=np.float64)
    weight = kappa_obs * np.asarray(mask, dtype=np.float64)
    if signal is not None:
        weight = weight * np.asarray(signal, dtype=np.float64)
    field = np.stack([weight * np.cos(z), weight * np.sin(z)], axis=-1)
    if prior_kappa > 0.0:
        mean = np.broadcast_to(
            np.asarray(0.0 if prior_mean is None else prior_mean, dtype=np.float64), z.shape
        )
        field = field + prior_kappa * np.stack([np.cos(mean), np.sin(mean)], axis=-1)
    return field


def log_joint(o, field, kappa: float, rank: int) -> float:
    """Unnormalised ``log p(O | Z)`` of a grid ``o`` (M, N) given its natural ``field``.

    Parameters
    ----------
    o : array_like (M, N)
        Doubled angles.
    field : numpy.ndarray (M, N, 2)
        Natural parameters.
    kappa : float
        Smoothing concentration.
    rank : int
        Rank of the potential.

    Returns
    -------
    float
        The unnormalised log density.
    """
    o = np.asarray(o, dtype=np.float64)
    total = float(np.sum(field[..., 0] * np.cos(o) + field[..., 1] * np.sin(o)))
    total += float(np.sum(log_edge_potential(o[:, :-1], o[:, 1:], kappa, rank)))
    total += float(np.sum(log_edge_potential(o[:-1, :], o[1:, :], kappa, rank)))
    return total


def sample_categorical(log_weights, rng) -> np.ndarray:
    """Draw one index per leading position from unnormalised ``log_weights`` (last axis).

    Parameters
    ----------
    log_weights : array_like (..., K)
        Unnormalised log weights.

    rng : numpy.random.Generator
        Random generator.

    Returns
    -------
    numpy.ndarray of int
        One index per leading position.
    """
    log_weights = np.asarray(log_weights, dtype=np.float64)
    probs = np.exp(log_weights - log_weights.max(axis=-1, keepdims=True))
    cdf = np.cumsum(probs, axis=-1)
    u = rng.random(log_weights.shape[:-1])[..., None] * cdf[..., -1:]
    index = (cdf < u).sum(axis=-1)
    return np.minimum(index, log_weights.shape[-1] - 1)


def sample_von_mises(natural, rng) -> np.ndarray:
    """Draw angles in ``[-pi, pi)`` with density proportional to ``exp(v · o)``.

    ``natural`` has shape ``(..., 2)``: the mean direction is ``arg v``, the concentration
    ``|v|`` (a zero vector gives a uniform angle).

    Parameters
    ----------
    natural : array_like (..., 2)
        Natural vectors.

    rng : numpy.random.Generator
        Random generator.

    Returns
    -------
    numpy.ndarray
        Angles, shape ``natural.shape[:-1]``.
    """
    natural = np.asarray(natural, dtype=np.float64)
    kappa = np.hypot(natural[..., 0], natural[..., 1])
    mean = np.arctan2(natural[..., 1], natural[..., 0])
    return wrap_angle(rng.vonmises(mean, kappa))


def neighbour_terms(o_neighbour, present, kappa: float, modes):
    """Mixture terms that one neighbour contributes to a node's conditional.

    ``psi(o, o_n) = sum_k exp(kappa r_k . o_n) exp(kappa r_k . o)``: term ``k`` has log weight
    ``kappa r_k . o_n`` and natural vector ``kappa r_k``. Where ``present`` is false (grid
    border) the neighbour contributes the single neutral term (log weight 0, zero vector) and
    ``-inf`` weights elsewhere, so all nodes share one array shape.

    Returns ``log_weights`` of shape ``(..., K)`` and ``vectors`` of shape ``(..., K, 2)``.

    Parameters
    ----------
    o_neighbour : array_like
        The neighbour's angles.
    present : array_like of bool
        Whether the neighbour exists.
    kappa : float
        Smoothing concentration.
    modes : numpy.ndarray (K, 2)
        Mode unit vectors.

    Returns
    -------
    log_weights : numpy.ndarray (..., K)
        Log weights of the terms.
    vectors : numpy.ndarray (..., K, 2)
        Their natural vectors.
    """
    o_neighbour = np.asarray(o_neighbour, dtype=np.float64)
    present = np.asarray(present, dtype=bool)
    n_modes = modes.shape[0]
    unit = np.stack([np.cos(o_neighbour), np.sin(o_neighbour)], axis=-1)
    log_weights = kappa * unit @ modes.T
    neutral = np.full(n_modes, -np.inf)
    neutral[0] = 0.0
    log_weights = np.where(present[..., None], log_weights, neutral)
    vectors = np.where(present[..., None, None], kappa * modes, 0.0)
    vectors = np.broadcast_to(vectors, (*o_neighbour.shape, n_modes, 2))
    return log_weights, vectors


def combine_terms(log_weights_a, vectors_a, log_weights_b, vectors_b):
    """Products of two mixtures of ``exp(v · o)`` terms: all pairs, flattened on the last axis.

    Parameters
    ----------
    log_weights_a, vectors_a : numpy.ndarray
        First mixture (``(..., A)`` and ``(..., A, 2)``).
    log_weights_b, vectors_b : numpy.ndarray
        Second mixture (``(..., B)`` and ``(..., B, 2)``).

    Returns
    -------
    log_weights : numpy.ndarray (..., A*B)
        Log weights of the products.
    vectors : numpy.ndarray (..., A*B, 2)
        Their natural vectors.
    """
    log_weights = log_weights_a[..., :, None] + log_weights_b[..., None, :]
    vectors = vectors_a[..., :, None, :] + vectors_b[..., None, :, :]
    lead = log_weights.shape[:-2]
    return log_weights.reshape(*lead, -1), vectors.reshape(*lead, -1, 2)
