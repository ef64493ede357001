"""Collapsed updates of the chain smoother's concentrations: ``x`` summed out exactly.

Given ``kappa`` and ``kappa_obs``, the chain's angles can be integrated out by the forward
pass over the ``R + 1`` modes (:mod:`pmctx.vonmises.chain`), which gives the marginal
likelihood of the observations in closed form:

    log p(y | kappa, kappa_obs) = log E(field(kappa_obs), kappa) - log Z_T(kappa)
                                  - sum_obs log(2 pi I0(s_t kappa_obs)),

with ``E`` the integral of the unnormalised posterior ``prod psi(x_t, x_{t+1}) prod
exp(field_t . x_t)``, ``Z_T`` the prior normaliser (closed form) and the last sum the von
Mises normalisers of the observed samples. :func:`collapsed_update` is a blocked collapsed
Gibbs step (Liu 1994; van Dyk & Park 2008):

1. slice updates (Neal 2003) of ``log kappa`` and ``log kappa_obs`` from ``p(kappa,
   kappa_obs | y)``, the angles integrated out; then
2. an exact joint draw of ``x`` from ``p(x | kappa, kappa_obs, y)`` (FFBS).

Step 1 leaves the marginal posterior of the concentrations invariant and step 2 draws the
angles from their exact conditional, so the pair leaves the joint posterior invariant; the
old ``x`` is never used, which is why it mixes far better than updating the concentrations
given ``x`` (they are strongly coupled to it on long series).

Examples
--------
>>> import numpy as np
>>> from pmctx.vonmises.chain_collapsed import collapsed_update, log_marginal_likelihood
>>> y = np.array([0.3, 0.5, np.nan, 0.2])
>>> observed = ~np.isnan(y)
>>> z = np.where(observed, y, 0.0)
>>> value = log_marginal_likelihood(z, observed, 2.0, 3.0, 3)
>>> bool(np.isfinite(value))
True
>>> state = collapsed_update(z, observed, 2.0, 3.0, 3, np.random.default_rng(0))
>>> state.x.shape, state.kappa > 0, state.kappa_obs > 0
((4,), True, True)
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from pmctx.slice import slice_sample
from pmctx.vonmises._numba_chains import LOG_I0E_TABLE
from pmctx.vonmises._numba_single_chain import forward_log_evidence
from pmctx.vonmises.chain import CHAIN_KAPPA_PRIOR, chain_log_normaliser, sample_chain
from pmctx.vonmises.hyper import KAPPA_OBS_PRIOR, log_gamma_density, log_i0
from pmctx.vonmises.potentials import LOG_2PI, mode_vectors, natural_field

__all__ = [
    "CollapsedState",
    "chain_log_evidence",
    "collapsed_update",
    "log_marginal_likelihood",
    "log_marginal_posterior",
]


def chain_log_evidence(field, kappa: float, rank: int) -> float:
    """``log`` of the integral of ``prod_t psi(x_t, x_{t+1}) prod_t exp(<field_t, x_t>)``.

    Parameters
    ----------
    field : ndarray, shape (T, 2)
        Natural parameters of the observations (zero at missing samples).
    kappa : float
        Smoothing concentration.
    rank : int
        Rank ``R`` (``R + 1`` modes).

    Returns
    -------
    float
        The log evidence of the unnormalised chain (equal to the value
        :func:`pmctx.vonmises.chain.chain_marginals` returns; compiled forward pass only).
    """
    field = np.ascontiguousarray(field, dtype=np.float64)
    ext = np.concatenate([kappa * mode_vectors(rank), np.zeros((1, 2))], axis=0)
    return float(forward_log_evidence(field, ext, LOG_I0E_TABLE))


def _observation_normaliser(kappa_obs, signal_obs) -> float:
    return float(np.sum(LOG_2PI + log_i0(kappa_obs * signal_obs)))


def log_marginal_likelihood(z, observed, kappa, kappa_obs, rank, signal=None) -> float:
    """``log p(y | kappa, kappa_obs)`` with the angles ``x`` integrated out exactly.

    Parameters
    ----------
    z : ndarray, shape (T,)
        Observed angles (anything finite where missing).
    observed : ndarray of bool, shape (T,)
        True where ``z`` is observed.
    kappa, kappa_obs : float
        Concentrations (> 0).
    rank : int
        Rank ``R``.
    signal : ndarray, shape (T,), optional
        Relative signal strength per sample (default 1).

    Returns
    -------
    float
        The log density of the observed samples (with respect to their angles).
    """
    observed = np.asarray(observed, dtype=bool)
    s = np.ones(observed.shape) if signal is None else np.asarray(signal, dtype=np.float64)
    field = natural_field(z, observed, kappa_obs, signal=s)
    return (
        chain_log_evidence(field, kappa, rank)
        - float(chain_log_normaliser(kappa, rank, observed.size))
        - _observation_normaliser(kappa_obs, s[observed])
    )


def log_marginal_posterior(
    z,
    observed,
    kappa,
    kappa_obs,
    rank,
    signal=None,
    *,
    kappa_prior=CHAIN_KAPPA_PRIOR,
    kappa_obs_prior=KAPPA_OBS_PRIOR,
) -> float:
    """Unnormalised ``log p(kappa, kappa_obs | y)`` (density in ``kappa, kappa_obs``).

    Parameters
    ----------
    z, observed, kappa, kappa_obs, rank, signal
        As in :func:`log_marginal_likelihood`.
    kappa_prior, kappa_obs_prior : (float, float) or None
        Gamma(shape, rate) priors; ``None`` leaves that concentration's prior term out
        (a fixed concentration).

    Returns
    -------
    float
        ``log p(y | kappa, kappa_obs)`` plus the log prior densities (``-inf`` outside
        ``kappa, kappa_obs > 0``).
    """
    if kappa <= 0 or kappa_obs <= 0:
        return -np.inf
    value = log_marginal_likelihood(z, observed, kappa, kappa_obs, rank, signal)
    if kappa_prior is not None:
        value += float(log_gamma_density(kappa, *kappa_prior))
    if kappa_obs_prior is not None:
        value += float(log_gamma_density(kappa_obs, *kappa_obs_prior))
    return value


class CollapsedState(NamedTuple):
    """Result of :func:`collapsed_update`.

    Parameters
    ----------
    x : ndarray, shape (T,)
        Angles drawn exactly given the new concentrations.
    kappa, kappa_obs : float
        New concentrations.
    log_likelihood : float
        ``log p(y | kappa, kappa_obs)`` at the new concentrations.
    log_evidence : float
        ``log E``, the evidence of the unnormalised chain (as
        :class:`~pmctx.steps.vonmises.ChainFFBSVonMises` reports it).
    """

    x: np.ndarray
    kappa: float
    kappa_obs: float
    log_likelihood: float
    log_evidence: float


def collapsed_update(
    z,
    observed,
    kappa: float,
    kappa_obs: float,
    rank: int,
    rng,
    *,
    signal=None,
    learn_kappa: bool = True,
    learn_kappa_obs: bool = True,
    kappa_prior=CHAIN_KAPPA_PRIOR,
    kappa_obs_prior=KAPPA_OBS_PRIOR,
    n_steps: int = 1,
    width: float = 1.0,
) -> CollapsedState:
    """One blocked collapsed Gibbs update of ``(kappa, kappa_obs, x)`` (exact).

    Parameters
    ----------
    z, observed, signal
        As in :func:`log_marginal_likelihood`.
    kappa, kappa_obs : float
        Current concentrations (a fixed one is returned unchanged).
    rank : int
        Rank ``R``.
    rng : numpy.random.Generator
    learn_kappa, learn_kappa_obs : bool, default True
        Which concentrations to update (each from its prior given here).
    kappa_prior, kappa_obs_prior : (float, float)
        Gamma(shape, rate) priors; must match the model's.
    n_steps : int, default 1
        Slice updates of each learned concentration before ``x`` is drawn.
    width : float, default 1.0
        Initial slice width on the log scale (any width is exact; ~1 suits both).

    Returns
    -------
    CollapsedState
    """
    observed = np.asarray(observed, dtype=bool)
    s = np.ones(observed.shape) if signal is None else np.asarray(signal, dtype=np.float64)
    s_obs = s[observed]
    unit = np.stack([np.cos(z), np.sin(z)], axis=-1) * (observed * s)[:, None]
    length = observed.size

    def log_joint(k, k_obs):
        # log p(y | k, k_obs) + log priors + Jacobians of the log scales (slice on log k).
        field = k_obs * unit
        value = (
            chain_log_evidence(field, k, rank)
            - float(chain_log_normaliser(k, rank, length))
            - _observation_normaliser(k_obs, s_obs)
        )
        if learn_kappa:
            value += float(log_gamma_density(k, *kappa_prior)) + math.log(k)
        if learn_kappa_obs:
            value += float(log_gamma_density(k_obs, *kappa_obs_prior)) + math.log(k_obs)
        # NaN would never enter a slice (the shrinkage loop would not end): treat it as -inf.
        return value if math.isfinite(value) else -np.inf

    def finite(u):
        return -30.0 < u < 30.0  # concentrations e^-30..e^30: beyond, float64 terms break down

    for _ in range(n_steps):
        if learn_kappa:
            u = slice_sample(
                lambda u, k_obs=kappa_obs: log_joint(math.exp(u), k_obs) if finite(u) else -np.inf,
                math.log(kappa),
                rng,
                width=width,
            )
            kappa = math.exp(u)
        if learn_kappa_obs:
            u = slice_sample(
                lambda u, k=kappa: log_joint(k, math.exp(u)) if finite(u) else -np.inf,
                math.log(kappa_obs),
                rng,
                width=width,
            )
            kappa_obs = math.exp(u)
    field = kappa_obs * unit
    x, log_evidence = sample_chain(field, kappa, rank, rng)
    log_likelihood = (
        log_evidence
        - float(chain_log_normaliser(kappa, rank, length))
        - _observation_normaliser(kappa_obs, s_obs)
    )
    return CollapsedState(x, float(kappa), float(kappa_obs), float(log_likelihood), log_evidence)
