"""Ground truth for the specialised kernel: seed Algorithm 2 untruncated, and enumeration.

:func:`reference_sweep` is a direct, pure-numpy transcription of the seed's Algorithm 2 for
the *infinite* IBP: ``K`` grows and shrinks, the prior conditional is ``m_-ik / N`` (eq. 7)
and ``K_new ~ Poisson(alpha / N)`` times the marginal likelihood of eq. 12-13. It is slow
(whole-row likelihoods, no caches) on purpose: it shares no code with the numba kernel.
Two choices make it an exact Gibbs sampler where the seed is loose: the ``K_new`` posterior is
evaluated up to ``k_new_cap`` (the Poisson tail beyond it is below 1e-12 for the sizes used),
and ``Y_new`` is drawn exactly from its conditional rather than by one Gibbs pass started at
zero (lines 24-28).

:func:`enumerate_posterior` gives the exact ``p(Z, Y | F, X)`` of the truncated model on a
tiny problem (``A`` and ``pi`` integrated analytically).
"""

from __future__ import annotations

import itertools

import numpy as np
from scipy import stats
from scipy.special import gammaln

from pmctx.ibp.conditionals import (
    collapsed_log_prior_z,
    force_loglik,
    noisy_or_log_p,
    noisy_or_loglik,
    sample_a,
)

__all__ = ["enumerate_posterior", "reference_sweep", "sample_ibp_prior"]


def _row_loglik(f, x, z, A, Y, hyper):
    out = 0.0
    if f is not None:
        out += float(force_loglik(f[None], z[None], A, hyper.sigma_n).sum())
    if x is not None:
        out += float(noisy_or_loglik(x[None], z[None], Y, hyper.lam, hyper.eps).sum())
    return out


def _sample_log_weights(logw, rng):
    p = np.exp(logw - logw.max())
    return int(rng.choice(len(p), p=p / p.sum()))


def reference_sweep(Z, A, Y, F, X, hyper, rng, *, k_new_cap: int = 12):
    """One sweep of untruncated Algorithm 2; returns the new ``(Z, A, Y)`` (K may change).

    Parameters
    ----------
    Z : ndarray (N, K) int
    A : ndarray (K, D)
    Y : ndarray (K, T) int
    F : ndarray (N, D) or None
    X : ndarray (N, T) or None
    hyper : pmctx.ibp.sampler.IBPHyper
    rng : numpy.random.Generator
    k_new_cap : int, default 12
        Largest number of new features proposed per row.

    Returns
    -------
    tuple of numpy.ndarray
        The new ``(Z, A, Y)``.

    Examples
    --------
    >>> from pmctx.ibp.sampler import IBPHyper
    >>> rng = np.random.default_rng(0)
    >>> F, X = rng.normal(size=(4, 2)), rng.integers(0, 2, (4, 3))
    >>> Z, A, Y = np.zeros((4, 0), int), np.zeros((0, 2)), np.zeros((0, 3), int)
    >>> Z, A, Y = reference_sweep(Z, A, Y, F, X, IBPHyper(), rng)
    >>> Z.shape[0], A.shape[0] == Z.shape[1] == Y.shape[0]
    (4, True)
    """
    Z, A, Y = Z.copy(), A.copy(), Y.copy()
    n = Z.shape[0]
    d = 0 if F is None else F.shape[1]
    t = 0 if X is None else X.shape[1]
    if F is not None and Z.shape[1] > 0:
        A = sample_a(Z, F, hyper.sigma_n, hyper.sigma_a, rng)
    if X is not None:
        for k, tt in itertools.product(range(Y.shape[0]), range(t)):
            logw = np.empty(2)
            for a in (0, 1):
                Y[k, tt] = a
                log_q, log_p1 = noisy_or_log_p(Z @ Y[:, tt], hyper.lam, hyper.eps)
                lik = np.where(X[:, tt] == 1, log_p1, log_q).sum()
                logw[a] = lik + (np.log(hyper.phi) if a else np.log1p(-hyper.phi))
            Y[k, tt] = _sample_log_weights(logw, rng)
    for i in range(n):
        f_i = None if F is None else F[i]
        x_i = None if X is None else X[i]
        m = Z.sum(axis=0)
        for k in range(Z.shape[1]):
            m_minus = m[k] - Z[i, k]
            if m_minus == 0:
                Z[i, k] = 0
                continue
            logw = np.empty(2)
            for a in (0, 1):
                Z[i, k] = a
                prior = np.log(m_minus / n) if a else np.log1p(-m_minus / n)
                logw[a] = prior + _row_loglik(f_i, x_i, Z[i], A, Y, hyper)
            Z[i, k] = _sample_log_weights(logw, rng)
        # K_new (eq. 10-13), with the new A and Y integrated out.
        ks = np.arange(k_new_cap + 1)
        logw = stats.poisson(hyper.alpha / n).logpmf(ks)
        if F is not None:
            resid = f_i - Z[i] @ A
            var = hyper.sigma_n**2 + ks * hyper.sigma_a**2
            logw += -0.5 * d * np.log(2 * np.pi * var) - 0.5 * (resid @ resid) / var
        if X is not None:
            log_q, _ = noisy_or_log_p(Z[i] @ Y, hyper.lam, hyper.eps)
            log_q = log_q[None, :] + ks[:, None] * np.log1p(-hyper.lam * hyper.phi)
            log_p1 = np.log(-np.expm1(log_q))
            logw += np.where(x_i[None, :] == 1, log_p1, log_q).sum(axis=1)
        k_new = _sample_log_weights(logw, rng)
        if k_new:
            rho = hyper.sigma_n**2 / hyper.sigma_a**2
            a_new = np.zeros((k_new, d))
            if F is not None:
                prec = np.ones((k_new, k_new)) + rho * np.eye(k_new)
                cov = hyper.sigma_n**2 * np.linalg.inv(prec)
                mean = np.linalg.solve(prec, np.ones(k_new))[:, None] * resid[None, :]
                a_new = mean + (np.linalg.cholesky(cov) @ rng.normal(size=(k_new, d)))
            y_new = np.zeros((k_new, t), dtype=Y.dtype)
            if X is not None:
                base_q, _ = noisy_or_log_p(Z[i] @ Y, hyper.lam, hyper.eps)
                s = np.arange(k_new + 1)
                for tt in range(t):
                    lq = base_q[tt] + s * np.log1p(-hyper.lam)
                    lik = np.log(-np.expm1(lq)) if x_i[tt] == 1 else lq
                    prior = (
                        gammaln(k_new + 1)
                        - gammaln(s + 1)
                        - gammaln(k_new - s + 1)
                        + s * np.log(hyper.phi)
                        + (k_new - s) * np.log1p(-hyper.phi)
                    )
                    on = _sample_log_weights(prior + lik, rng)
                    y_new[rng.permutation(k_new)[:on], tt] = 1
            z_new = np.zeros((n, k_new), dtype=Z.dtype)
            z_new[i] = 1
            Z = np.concatenate([Z, z_new], axis=1)
            A = np.concatenate([A, a_new], axis=0)
            Y = np.concatenate([Y, y_new], axis=0)
        keep = Z.sum(axis=0) > 0
        Z, A, Y = Z[:, keep], A[keep], Y[keep]
    return Z, A, Y


def sample_ibp_prior(n, d, t, hyper, rng):
    """Draw ``(Z, A, Y)`` from the untruncated IBP prior (the Indian buffet), used by Geweke.

    Parameters
    ----------
    n : int
        Rows (trials).
    d : int
        Force dimensions.
    t : int
        Cue pixels.
    hyper : pmctx.ibp.sampler.IBPHyper
        Hyperparameters.
    rng : numpy.random.Generator
        Random generator.

    Returns
    -------
    tuple of numpy.ndarray
        ``(Z, A, Y)``.
    """
    cols = []
    for i in range(n):
        m = np.sum(cols, axis=0) if cols else np.zeros(0)
        row = (rng.random(m.size) < m / (i + 1)).astype(np.int64)
        k_new = rng.poisson(hyper.alpha / (i + 1))
        cols = [np.concatenate([c, np.zeros(k_new, np.int64)]) for c in cols]
        cols.append(np.concatenate([row, np.ones(k_new, np.int64)]))
    Z = np.array(cols, dtype=np.int64).reshape(n, -1)
    k = Z.shape[1]
    A = hyper.sigma_a * rng.normal(size=(k, d))
    Y = (rng.random((k, t)) < hyper.phi).astype(np.int64)
    return Z, A, Y


def enumerate_posterior(F, X, k_max: int, hyper):
    """Exact ``p(Z, Y | F, X)`` of the truncated model over all binary ``Z`` and ``Y``.

    Returns ``(states, probs)``: each state is ``concat(Z.ravel(), Y.ravel())``. ``A`` and
    ``pi`` are integrated analytically (``F[:, d] ~ N(0, sigma_n^2 I + sigma_A^2 Z Z^T)``).
    Only for tiny problems: ``2^(N K + K T)`` states.

    Parameters
    ----------
    F : numpy.ndarray (N, D)
        Forces.
    X : numpy.ndarray (N, T)
        Binary cues.
    k_max : int
        Truncation level.
    hyper : pmctx.ibp.sampler.IBPHyper
        Hyperparameters.

    Returns
    -------
    states : numpy.ndarray
        One state per row.
    probs : numpy.ndarray
        Their posterior probabilities.
    """
    n, t = X.shape
    states, logps = [], []
    for zbits in itertools.product([0, 1], repeat=n * k_max):
        Z = np.reshape(zbits, (n, k_max))
        cov = hyper.sigma_n**2 * np.eye(n) + hyper.sigma_a**2 * Z @ Z.T
        mvn = stats.multivariate_normal(np.zeros(n), cov)
        lf = sum(mvn.logpdf(F[:, j]) for j in range(F.shape[1]))
        lz = collapsed_log_prior_z(Z, hyper.alpha)
        for ybits in itertools.product([0, 1], repeat=k_max * t):
            Y = np.reshape(ybits, (k_max, t))
            ly = np.sum(Y * np.log(hyper.phi) + (1 - Y) * np.log1p(-hyper.phi))
            lx = noisy_or_loglik(X, Z, Y, hyper.lam, hyper.eps).sum()
            states.append(np.concatenate([zbits, ybits]))
            logps.append(lz + lf + ly + lx)
    logps = np.array(logps)
    probs = np.exp(logps - logps.max())
    return np.array(states), probs / probs.sum()
