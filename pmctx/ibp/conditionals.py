"""Densities and continuous conditionals of the IBP visuo-motor model (pure numpy).

Model (seed 000, truncated at ``K_max`` columns): ``pi_k ~ Beta(alpha/K_max, 1)``,
``z_ik ~ Bernoulli(pi_k)``, rows of ``A ~ N(0, sigma_A^2 I)``, ``y_kt ~ Bernoulli(phi)``,
``F = Z A + N(0, sigma_n^2 I)`` and the noisy-OR
``P(x_it = 1) = 1 - (1 - lambda)^{z_i . y_t} (1 - eps)``, computed in log space.
"""

from __future__ import annotations

import numpy as np
from scipy.special import betaln, gammaln

from pmctx.ibp.continuous import (
    sample_a_kernel,
    sample_pi_logit_kernel,
    solve_lower,
    solve_upper_t,
)

__all__ = [
    "a_posterior",
    "collapsed_log_prior_z",
    "force_loglik",
    "log_joint",
    "noisy_or_log_p",
    "noisy_or_loglik",
    "sample_a",
    "sample_pi_logit",
]


def noisy_or_log_p(counts, lam: float, eps: float):
    """``(log P(x=0), log P(x=1))`` given the number of active causes, elementwise.

    Parameters
    ----------
    counts : array_like of int
        Number of active causes of each entry.
    lam : float
        Probability that one active cause turns the entry on.
    eps : float
        Probability that the entry is on without a cause.

    Returns
    -------
    log_p0 : numpy.ndarray
        ``log P(x = 0)``.
    log_p1 : numpy.ndarray
        ``log P(x = 1)``.

    Examples
    --------
    >>> log_p0, log_p1 = noisy_or_log_p([0, 2], lam=0.9, eps=0.05)
    >>> np.exp(log_p0 + 0.0).round(4).tolist()
    [0.95, 0.0095]
    """
    log_q = np.asarray(counts, dtype=np.float64) * np.log1p(-lam) + np.log1p(-eps)
    log_p1 = np.where(log_q > -np.log(2.0), np.log(-np.expm1(log_q)), np.log1p(-np.exp(log_q)))
    return log_q, log_p1


def noisy_or_loglik(X, Z, Y, lam: float, eps: float) -> np.ndarray:
    """Per-entry log-likelihood of the binary cues ``X`` (N x T) under the noisy-OR.

    Parameters
    ----------
    X : array_like (N, T) of 0/1
        Binary cues.
    Z : array_like (N, K) of 0/1
        Feature ownership.
    Y : array_like (K, T) of 0/1
        Cue images of the features.
    lam : float
        Noisy-OR strength of one cause.
    eps : float
        Noisy-OR leak probability.

    Returns
    -------
    numpy.ndarray (N, T)
        Log-likelihood of each cue entry.
    """
    log_q, log_p1 = noisy_or_log_p(np.asarray(Z) @ np.asarray(Y), lam, eps)
    return np.where(np.asarray(X) == 1, log_p1, log_q)


def force_loglik(F, Z, A, sigma_n: float) -> np.ndarray:
    """Per-entry Gaussian log-likelihood of the forces ``F`` (N x D).

    Parameters
    ----------
    F : array_like (N, D)
        Forces.
    Z : array_like (N, K) of 0/1
        Feature ownership.
    A : array_like (K, D)
        Force bases.
    sigma_n : float
        Noise sd.

    Returns
    -------
    numpy.ndarray (N, D)
        Log-likelihood of each force entry.
    """
    resid = np.asarray(F) - np.asarray(Z) @ np.asarray(A)
    return -0.5 * (np.log(2 * np.pi * sigma_n**2) + resid**2 / sigma_n**2)


def collapsed_log_prior_z(Z, alpha: float, k_max: int | None = None) -> float:
    """``log P(Z)`` of the finite model with ``pi_k ~ Beta(alpha/K_max, 1)`` integrated out.

    Parameters
    ----------
    Z : array_like (N, K) of 0/1
        Feature ownership.
    alpha : float
        IBP concentration.
    k_max : int, optional
        Truncation level (default ``K``).

    Returns
    -------
    float
        ``log P(Z)``.
    """
    Z = np.asarray(Z)
    n, k = Z.shape
    k_max = k if k_max is None else k_max
    a = alpha / k_max
    m = Z.sum(axis=0)
    return float(np.sum(betaln(a + m, 1.0 + n - m) - betaln(a, 1.0)))


def log_joint(Z, A, Y, F, X, *, alpha, sigma_n, sigma_a, phi, lam, eps) -> float:
    """``log p(Z, A, Y, F, X)`` with ``pi`` integrated out; ``F``/``X`` may be ``None``.

    Parameters
    ----------
    Z : array_like (N, K) of 0/1
        Feature ownership.
    A : array_like (K, D)
        Force bases.
    Y : array_like (K, T) of 0/1
        Cue images.
    F : array_like (N, D) or None
        Forces.
    X : array_like (N, T) or None
        Binary cues.
    alpha, sigma_n, sigma_a, phi, lam, eps : float
        Hyperparameters (see :class:`pmctx.ibp.sampler.IBPHyper`).

    Returns
    -------
    float
        The log joint density.
    """
    Z = np.asarray(Z)
    out = collapsed_log_prior_z(Z, alpha)
    if F is not None:
        A = np.asarray(A, dtype=np.float64)
        out += float(np.sum(-0.5 * (np.log(2 * np.pi * sigma_a**2) + A**2 / sigma_a**2)))
        out += float(force_loglik(F, Z, A, sigma_n).sum())
    if X is not None:
        Y = np.asarray(Y)
        out += float(np.sum(Y * np.log(phi) + (1 - Y) * np.log1p(-phi)))
        out += float(noisy_or_loglik(X, Z, Y, lam, eps).sum())
    return out


def a_posterior(Z, F, sigma_n: float, sigma_a: float):
    """Mean and Cholesky factor of the precision of ``p(A | F, Z)`` (seed eq. 2).

    Precision (per force dimension) is ``(Z^T Z + sigma_n^2/sigma_A^2 I) / sigma_n^2``;
    returns ``(mean, L)`` with ``L L^T = Z^T Z + sigma_n^2/sigma_A^2 I``.

    Parameters
    ----------
    Z : array_like (N, K) of 0/1
        Feature ownership.
    F : array_like (N, D)
        Forces.
    sigma_n : float
        Noise sd.
    sigma_a : float
        Prior sd of the bases.

    Returns
    -------
    mean : numpy.ndarray (K, D)
        Posterior mean of ``A``.
    L : numpy.ndarray (K, K)
        Lower Cholesky factor of ``Z^T Z + sigma_n^2/sigma_A^2 I``.
    """
    Z = np.asarray(Z, dtype=np.float64)
    gram = Z.T @ Z + (sigma_n**2 / sigma_a**2) * np.eye(Z.shape[1])
    chol = np.linalg.cholesky(gram)
    rhs = np.ascontiguousarray(Z.T @ np.asarray(F, dtype=np.float64))
    mean = solve_upper_t(chol, solve_lower(chol, rhs))
    return mean, chol


def sample_a(Z, F, sigma_n: float, sigma_a: float, rng) -> np.ndarray:
    """Draw ``A ~ p(A | F, Z)`` through the Cholesky factor (no matrix inverse).

    Parameters
    ----------
    Z : array_like (N, K) of 0/1
        Feature ownership.
    F : array_like (N, D)
        Forces.
    sigma_n : float
        Noise sd.
    sigma_a : float
        Prior sd of the bases.
    rng : numpy.random.Generator
        Random generator.

    Returns
    -------
    numpy.ndarray (K, D)
        A draw of ``A``.
    """
    Z = np.ascontiguousarray(Z, dtype=np.int64)
    F = np.ascontiguousarray(F, dtype=np.float64)
    return sample_a_kernel(Z, F, float(sigma_n), float(sigma_a), rng)


def sample_pi_logit(m, n: int, alpha: float, k_max: int, rng) -> np.ndarray:
    """``logit(pi_k)`` drawn from ``Beta(alpha/K_max + m_k, 1 + N - m_k)``, in log space.

    Parameters
    ----------
    m : array_like (K,) of int
        Column counts of ``Z``.
    n : int
        Number of rows.
    alpha : float
        IBP concentration.
    k_max : int
        Truncation level.
    rng : numpy.random.Generator
        Random generator.

    Returns
    -------
    numpy.ndarray (K,)
        ``logit(pi_k)``.
    """
    m = np.ascontiguousarray(m, dtype=np.int64)
    return sample_pi_logit_kernel(m, int(n), float(alpha) / k_max, rng)


def log_binomial(n, k):
    """``log C(n, k)``.

    Parameters
    ----------
    n, k : array_like
        Counts.

    Returns
    -------
    numpy.ndarray or float
        ``log C(n, k)``.

    Examples
    --------
    >>> float(np.exp(log_binomial(5, 2)).round(6))
    10.0
    """
    return gammaln(n + 1.0) - gammaln(k + 1.0) - gammaln(n - k + 1.0)
