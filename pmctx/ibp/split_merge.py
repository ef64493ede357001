"""Split-merge Metropolis-Hastings move for IBP features (after Meeds et al. 2007).

Gibbs updates change one row at a time, so turning one feature into two (or two into one) has
to pass through states where many rows are half-moved. A split-merge move does it at once:

* **split**: pick an active column ``k`` uniformly and an empty column ``k2`` uniformly; each
  row owning ``k`` goes to ``k`` only, ``k2`` only or both, uniformly among the ``3^m - 2``
  allocations that leave both columns non-empty;
* **merge**: pick an ordered pair ``(k, k2)`` of active columns uniformly; column ``k`` gets
  the union of the two, ``k2`` is emptied.

A merge of ``(k, k2)`` is the only reverse of a split of ``k`` into ``(k, k2)`` and vice
versa. ``A`` is proposed from its full conditional ``p(A | F, Z')`` (eq. 2) and the affected
rows of ``Y`` from their exact per-pixel conditional given ``Z'`` and the other rows (an
emptied row from the prior), so ``A`` and those rows of ``Y`` drop out of the acceptance
ratio, which becomes

    r = p(Z') p(F | Z') M_X(Z') q(Z | Z') / [p(Z) p(F | Z) M_X(Z) q(Z' | Z)]

with ``p(Z)`` the finite-K collapsed prior, ``p(F | Z)`` the linear-Gaussian marginal
likelihood (``A`` integrated) and ``M_X`` the noisy-OR likelihood of the rows involved with
the moved rows of ``Y`` summed out, pixel by pixel. ``pi`` must be redrawn from ``pi | Z``
after the move (the move targets the posterior with ``pi`` integrated out).
Restricted-Gibbs launch states (Jain & Neal 2004) would raise the acceptance rate of splits
in large data sets; the uniform allocation keeps the ratio simple and exact.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import logsumexp

from pmctx.ibp.conditionals import collapsed_log_prior_z, noisy_or_log_p, sample_a

__all__ = ["force_log_marginal", "log_allocations", "moved_rows_log_marginal", "split_merge_move"]

_LOG3 = math.log(3.0)


def log_allocations(m: int) -> float:
    """``log(3^m - 2)``: allocations of ``m`` rows to two columns, both left non-empty.

    Parameters
    ----------
    m : int
        Rows to allocate (>= 1).

    Returns
    -------
    float
        ``log(3^m - 2)``.

    Examples
    --------
    >>> round(float(np.exp(log_allocations(2))), 6)
    7.0
    """
    return m * _LOG3 + math.log1p(-2.0 * 3.0 ** (-m))


def force_log_marginal(Z, F, sigma_n: float, sigma_a: float) -> float:
    """``log p(F | Z)`` with ``A ~ N(0, sigma_A^2)`` integrated out, through K x K algebra.

    Parameters
    ----------
    Z : array_like (N, K)
        Ownership.
    F : array_like (N, D)
        Forces.
    sigma_n : float
        Noise sd.
    sigma_a : float
        Prior sd of the bases.

    Returns
    -------
    float
        ``log p(F | Z)``.
    """
    F = np.asarray(F, dtype=np.float64)
    n, d = F.shape
    if d == 0:
        return 0.0
    Z = np.asarray(Z, dtype=np.float64)
    k = Z.shape[1]
    rho = sigma_n**2 / sigma_a**2
    chol = np.linalg.cholesky(Z.T @ Z + rho * np.eye(k))
    proj = np.linalg.solve(chol, Z.T @ F)
    quad = float(np.sum(F * F) - np.sum(proj * proj))
    # |sigma_n^2 I + sigma_A^2 Z Z^T| = sigma_n^{2(N-K)} sigma_A^{2K} |Z^T Z + rho I|.
    logdet = 2 * (n - k) * math.log(sigma_n) + 2 * k * math.log(sigma_a)
    logdet += 2 * float(np.log(np.diag(chol)).sum())
    return -0.5 * (n * d * math.log(2 * math.pi) + d * logdet + quad / sigma_n**2)


def moved_rows_log_marginal(Z, Y, X, cols, phi, lam, eps):
    """Per-pixel log weights of the states of ``Y[cols]`` and their log-sum over pixels.

    Rows that own none of ``cols`` do not depend on them and are left out (they are the same
    before and after a split or merge). Returns ``(total, states, logw)`` with ``logw`` of
    shape (2^len(cols), T).

    Parameters
    ----------
    Z : array_like (N, K)
        Ownership.
    Y : array_like (K, T)
        Cue images.
    X : array_like (N, T)
        Binary cues.
    cols : sequence of int
        The columns whose images are summed out.
    phi : float
        Prior probability of an image pixel.
    lam, eps : float
        Noisy-OR strength and leak.

    Returns
    -------
    total : float
        Log marginal over the states.
    states : numpy.ndarray
        The ``2^len(cols)`` pixel states.
    logw : numpy.ndarray (2^len(cols), T)
        Log weight of each state per pixel.
    """
    Z, Y, X = np.asarray(Z), np.asarray(Y), np.asarray(X)
    cols = list(cols)
    rows = np.flatnonzero(Z[:, cols].any(axis=1))
    states = np.array([[(s >> j) & 1 for j in range(len(cols))] for s in range(1 << len(cols))])
    if X.shape[1] == 0:
        return 0.0, states, np.zeros((len(states), 0))
    others = [c for c in range(Z.shape[1]) if c not in cols]
    base = Z[np.ix_(rows, others)] @ Y[others]
    zc = Z[np.ix_(rows, cols)]
    logw = np.empty((len(states), X.shape[1]))
    for s, state in enumerate(states):
        counts = base + (zc @ state)[:, None]
        log_q, log_p1 = noisy_or_log_p(counts, lam, eps)
        lik = np.where(X[rows] == 1, log_p1, log_q).sum(axis=0)
        prior = state.sum() * math.log(phi) + (len(cols) - state.sum()) * math.log1p(-phi)
        logw[s] = prior + lik
    return float(logsumexp(logw, axis=0).sum()), states, logw


def _sample_states(logw, rng):
    p = np.exp(logw - logw.max(axis=0))
    p /= p.sum(axis=0)
    u = rng.random(p.shape[1])
    return (np.cumsum(p, axis=0) < u).sum(axis=0).clip(max=p.shape[0] - 1)


def split_merge_move(Z, A, Y, F, X, hyper, rng, *, broken: str | None = None):
    """One split-or-merge proposal, accepted by Metropolis-Hastings; updates in place.

    Parameters
    ----------
    Z : ndarray (N, K_max) int
        Feature ownership (updated in place).
    A : ndarray (K_max, D)
        Force bases (updated in place).
    Y : ndarray (K_max, T) int
        Cue images (updated in place).
    F : ndarray (N, D)
        Forces; D may be 0.
    X : ndarray (N, T)
        Binary cues; T may be 0.
    hyper : pmctx.ibp.sampler.IBPHyper
        Hyperparameters.
    rng : numpy.random.Generator
        Random generator.
    broken : str, optional
        For tests only: ``"no_allocation"`` drops the allocation count from the ratio.

    Returns
    -------
    (str, bool)
        ``"split"``, ``"merge"`` or ``"none"`` (no move possible), and whether it was
        accepted.

    Examples
    --------
    >>> from pmctx.ibp.sampler import IBPHyper
    >>> rng = np.random.default_rng(0)
    >>> Z = np.array([[1, 0, 0], [1, 0, 0], [1, 0, 0]])
    >>> A, Y = np.ones((3, 1)), np.zeros((3, 0), dtype=np.int64)
    >>> kind, accepted = split_merge_move(Z, A, Y, np.ones((3, 1)), np.zeros((3, 0)),
    ...                                   IBPHyper(), rng)
    >>> kind in ("split", "merge", "none")
    True
    """
    k_max = Z.shape[1]
    m = Z.sum(axis=0)
    active, empty = np.flatnonzero(m > 0), np.flatnonzero(m == 0)
    new = Z.copy()
    if rng.random() < 0.5:
        kind = "split"
        if active.size == 0 or empty.size == 0:
            return "none", False
        k, k2 = int(rng.choice(active)), int(rng.choice(empty))
        rows = np.flatnonzero(Z[:, k])
        while True:  # uniform over the allocations that leave both columns non-empty
            alloc = rng.integers(0, 3, rows.size)  # 0: k only, 1: k2 only, 2: both
            if np.any(alloc != 0) and np.any(alloc != 1):
                break
        new[rows, k] = alloc != 1
        new[rows, k2] = alloc != 0
        log_q_fwd = -math.log(active.size) - math.log(empty.size) - log_allocations(rows.size)
        log_q_rev = -math.log((active.size + 1) * active.size)
        if broken == "no_allocation":
            log_q_fwd += log_allocations(rows.size)
        old_cols, new_cols = [k], [k, k2]
    else:
        kind = "merge"
        if active.size < 2:
            return "none", False
        k, k2 = (int(c) for c in rng.choice(active, size=2, replace=False))
        new[:, k] = Z[:, k] | Z[:, k2]
        new[:, k2] = 0
        log_q_fwd = -math.log(active.size * (active.size - 1))
        log_q_rev = -math.log(active.size - 1) - math.log(empty.size + 1)
        log_q_rev -= log_allocations(int(new[:, k].sum()))
        if broken == "no_allocation":
            log_q_rev += log_allocations(int(new[:, k].sum()))
        old_cols, new_cols = [k, k2], [k]
    h = hyper
    log_r = collapsed_log_prior_z(new, h.alpha, k_max) - collapsed_log_prior_z(Z, h.alpha, k_max)
    log_r += force_log_marginal(new, F, h.sigma_n, h.sigma_a)
    log_r -= force_log_marginal(Z, F, h.sigma_n, h.sigma_a)
    mx_new, states, logw = moved_rows_log_marginal(new, Y, X, new_cols, h.phi, h.lam, h.eps)
    mx_old, _, _ = moved_rows_log_marginal(Z, Y, X, old_cols, h.phi, h.lam, h.eps)
    log_r += mx_new - mx_old + log_q_rev - log_q_fwd
    if math.log(rng.random()) >= log_r:
        return kind, False
    Z[:, :] = new
    if A.shape[1] > 0:
        A[:, :] = sample_a(Z, F, h.sigma_n, h.sigma_a, rng)
    if Y.shape[1] > 0:
        picks = _sample_states(logw, rng)
        Y[new_cols] = states[picks].T
        if kind == "merge":  # the emptied column's basis is a prior draw
            Y[k2] = rng.random(Y.shape[1]) < h.phi
    return kind, True
