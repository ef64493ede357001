"""Exact inference for angular time series on a low-rank von Mises chain (seed 003 §2, §3.2).

The chain prior over angles ``x_0 .. x_{T-1}`` (e.g. a head direction or a joint angle) is

    p(x | kappa) = prod_t psi(x_t, x_{t+1}) / Z_T(kappa),
    psi(a, b) = sum_{k=0}^{R} exp(kappa r_k . a) exp(kappa r_k . b),

and each observed sample has ``y_t ~ VonMises(x_t, s_t kappa_obs)``. Summing out the angles
leaves a discrete chain over the ``R + 1`` modes, so smoothing marginals, posterior draws
and the evidence are exact forward-backward computations, ``O(T (R + 1)^2)``.

The prior normaliser has a closed form: the mode-to-mode matrix ``G(a, b) = 2 pi I0(kappa
|r_a + r_b|)`` is symmetric circulant, its constant eigenvector has eigenvalue
``lambda_0 = sum_d 2 pi I0(2 kappa |cos(pi d / (R + 1))|)``, and both end nodes contribute
``2 pi I0(kappa)`` times the constant vector, so

    Z_T(kappa) = (2 pi I0(kappa))^2 (R + 1) lambda_0^(T - 2)   (T >= 2).

That makes ``kappa``'s posterior exact as well: the collapsed update
(:mod:`pmctx.vonmises.chain_collapsed`) samples it with the angles summed out, under the
documented prior ``kappa ~ Gamma(2, 0.25)`` (:data:`CHAIN_KAPPA_PRIOR`).

Examples
--------
>>> import numpy as np
>>> from pmctx.vonmises.chain import chain_marginals, sample_chain
>>> field = np.zeros((6, 2)); field[0] = [4.0, 0.0]          # one observation at angle 0
>>> angles, density, _ = chain_marginals(field, 3.0, 5, n_angles=90)
>>> bool(np.allclose(density.sum(axis=1) * 2 * np.pi / 90, 1.0))
True
>>> sample_chain(field, 3.0, 5, np.random.default_rng(0))[0].shape
(6,)
"""

from __future__ import annotations

import math

import numpy as np

from pmctx.vonmises._numba_chains import LOG_I0E_TABLE
from pmctx.vonmises._numba_single_chain import single_chain_modes
from pmctx.vonmises.ffbs import _lse, column_log_potentials
from pmctx.vonmises.hyper import log_i0
from pmctx.vonmises.potentials import (
    LOG_2PI,
    log_edge_potential,
    mode_vectors,
    sample_von_mises,
)

__all__ = [
    "CHAIN_KAPPA_PRIOR",
    "chain_log_normaliser",
    "chain_log_potential",
    "chain_marginals",
    "sample_chain",
]

#: Gamma(shape, rate) prior of the chain's ``kappa`` when declared ``kappa="prior"``.
CHAIN_KAPPA_PRIOR = (2.0, 0.25)


def chain_log_normaliser(kappa, rank: int, length: int):
    """``log Z_T(kappa)`` of the chain prior with flat node priors (closed form; broadcasts).

    Parameters
    ----------
    kappa : array_like
        Smoothing concentration(s).
    rank : int
        Rank ``R`` of the potential.
    length : int
        Chain length ``T``.

    Returns
    -------
    numpy.ndarray
        ``log Z_T(kappa)``, shape of ``kappa``.
    """
    kappa = np.asarray(kappa, dtype=np.float64)
    if length == 1:
        return np.full(kappa.shape, LOG_2PI)
    lags = np.abs(np.cos(np.pi * np.arange(rank + 1) / (rank + 1)))
    log_lambda0 = _lse(LOG_2PI + log_i0(2.0 * np.multiply.outer(kappa, lags)), axis=-1)
    end = LOG_2PI + log_i0(kappa)
    return 2.0 * end + math.log(rank + 1) + (length - 2) * log_lambda0


def chain_log_potential(x, kappa, rank: int) -> float:
    """Unnormalised ``sum_t log psi(x_t, x_{t+1})`` of a chain of angles ``x``.

    Parameters
    ----------
    x : array_like (T,)
        Angles.
    kappa : float
        Smoothing concentration.
    rank : int
        Rank of the potential.

    Returns
    -------
    float
        The sum of log edge potentials.
    """
    x = np.asarray(x, dtype=np.float64)
    return float(np.sum(log_edge_potential(x[:-1], x[1:], kappa, rank)))


def sample_chain(field, kappa: float, rank: int, rng):
    """Exact joint draw of the chain's angles given the node ``field`` (shape ``(T, 2)``).

    ``field[t] = s_t kappa_obs (cos y_t, sin y_t)`` at observed samples, zero where missing
    (:func:`~pmctx.vonmises.potentials.natural_field`). Returns ``(x, log_evidence)``, the
    log evidence being ``log`` of the integral of the unnormalised posterior density.

    Parameters
    ----------
    field : array_like (T, 2)
        Natural parameters of the observations.
    kappa : float
        Smoothing concentration.
    rank : int
        Rank of the potential.

    rng : numpy.random.Generator
        Random generator.

    Returns
    -------
    x : numpy.ndarray (T,)
        The drawn angles.
    log_evidence : float
        Log normaliser of the unnormalised posterior.
    """
    field = np.ascontiguousarray(field, dtype=np.float64)
    # Same law and random stream as sample_single_term_chains(field[None], ...), but serial:
    # for one chain, starting numba's thread pool costs 30x the FFBS itself.
    ext = np.concatenate([kappa * mode_vectors(rank), np.zeros((1, 2))], axis=0)
    uniforms = rng.random(field.shape[0])
    aux, log_evidence = single_chain_modes(field, ext, uniforms, LOG_I0E_TABLE)
    natural = field + ext[aux[:-1]] + ext[aux[1:]]
    return sample_von_mises(natural, rng), float(log_evidence)


def chain_marginals(field, kappa: float, rank: int, *, n_angles: int = 128):
    """Exact smoothing densities ``p(x_t | y)`` of every sample on a grid of angles.

    Parameters
    ----------
    field : ndarray, shape (T, 2)
        Natural parameters of the observations (zero at missing samples).
    kappa : float
        Smoothing concentration.
    rank : int
        Rank ``R`` (``R + 1`` modes).
    n_angles : int, default 128
        Grid size (midpoints of equal bins on ``[-pi, pi)``).

    Returns
    -------
    angles : ndarray, shape (n_angles,)
    density : ndarray, shape (T, n_angles)
        Densities with respect to the angle (each integrates to one).
    log_evidence : float
        ``log`` of the integral of ``prod psi * prod exp(field . x)`` (unnormalised prior).
    """
    field = np.asarray(field, dtype=np.float64)
    length = field.shape[0]
    modes = mode_vectors(rank)
    n_modes = modes.shape[0]
    log_c = column_log_potentials(np.zeros((1, length, 1)), field[None, :, None, :], kappa, modes)[
        0
    ]
    forward = np.zeros((max(length - 1, 1), n_modes))
    backward = np.zeros((max(length - 1, 1), n_modes))
    if length == 1:
        log_evidence = float(log_c[0, n_modes, n_modes])
    else:
        forward[0] = log_c[0, n_modes, :n_modes]
        for t in range(1, length - 1):
            forward[t] = _lse(forward[t - 1, :, None] + log_c[t, :n_modes, :n_modes], 0)
        backward[-1] = log_c[-1, :n_modes, n_modes]
        for t in range(length - 2, 0, -1):
            backward[t - 1] = _lse(log_c[t, :n_modes, :n_modes] + backward[t, None, :], 1)
        log_evidence = float(_lse(forward[-1] + backward[-1], 0))
    angles = -np.pi + (np.arange(n_angles) + 0.5) * 2.0 * np.pi / n_angles
    unit = np.stack([np.cos(angles), np.sin(angles)], axis=-1)
    mode_dot = kappa * unit @ modes.T  # (L, K)
    log_density = unit @ field.T  # (L, T)
    log_density = log_density.T.copy()
    if length > 1:
        log_density[1:] += _lse(forward[:, None, :] + mode_dot[None], 2)
        log_density[:-1] += _lse(backward[:, None, :] + mode_dot[None], 2)
    return angles, np.exp(log_density - log_evidence), log_evidence
