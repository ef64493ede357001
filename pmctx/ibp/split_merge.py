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
With ``allocation="sequential"`` the split allocates the rows one at a time instead, in a
random order, each row's three choices weighted by the collapsed likelihood of the rows
allocated so far (Dahl's sequentially-allocated split, as in restricted-Gibbs launch states,
Jain & Neal 2004): a merged feature whose rows fall into two groups with different forces or
images is split along them, where a uniform allocation of tens of rows almost never is. Its
``q(Z' | Z)`` is the product of the realised choices' probabilities (the order is an
auxiliary variable drawn afresh each move, the same for a split and its reverse merge), which
the merge computes for the split that would undo it.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import betaln, logsumexp

from pmctx.ibp.conditionals import collapsed_log_prior_z, noisy_or_log_p, sample_a

__all__ = [
    "ALLOCATIONS",
    "force_log_marginal",
    "log_allocations",
    "moved_rows_log_marginal",
    "sequential_allocation",
    "split_merge_move",
]

ALLOCATIONS = ("uniform", "sequential")

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


def _force_terms(ZtZ, ZtF, FtF, n, sigma_n, sigma_a):
    """``force_log_marginal`` from stacked sufficient statistics ``Z'Z``, ``Z'F``, ``sum F^2``.

    ``ZtZ`` (c, K, K) and ``ZtF`` (c, K, D) hold ``c`` candidate states; returns (c,).
    """
    k, d = ZtF.shape[-2:]
    rho = sigma_n**2 / sigma_a**2
    chol = np.linalg.cholesky(ZtZ + rho * np.eye(k))
    proj = np.linalg.solve(chol, ZtF)
    quad = FtF - np.sum(proj * proj, axis=(-2, -1))
    logdet = 2 * (n - k) * math.log(sigma_n) + 2 * k * math.log(sigma_a)
    logdet = logdet + 2 * np.log(np.diagonal(chol, axis1=-2, axis2=-1)).sum(axis=-1)
    return -0.5 * (n * d * math.log(2 * math.pi) + d * logdet + quad / sigma_n**2)


# Row choices of a split: (owns k, owns k2).
_CHOICES = np.array([[1, 0], [0, 1], [1, 1]])


def sequential_allocation(Z, Y, F, X, k, k2, rows, hyper, rng, alloc=None):
    """Allocate ``rows`` to columns ``k`` / ``k2`` / both one at a time; ``(alloc, log q)``.

    ``Z`` has columns ``k`` and ``k2`` empty. The rows are taken in the given order; each
    row's three choices are weighted by ``exp`` of the collapsed log posterior of the rows
    allocated so far (columns' finite-K prior given their counts, forces with ``A`` integrated
    out, the two columns' images summed out pixel by pixel; rows not yet allocated own
    neither column). With ``alloc`` given (0: ``k`` only, 1: ``k2`` only, 2: both) nothing
    is drawn and its log probability is returned: what a merge needs for its reverse split.

    Parameters
    ----------
    Z : ndarray (N, K_max) int
        Ownership with columns ``k`` and ``k2`` empty (not modified).
    Y : ndarray (K_max, T) int
        Images (rows ``k``, ``k2`` ignored).
    F : ndarray (N, D)
        Forces; D may be 0.
    X : ndarray (N, T)
        Cues; T may be 0.
    k, k2 : int
        The two columns.
    rows : ndarray of int
        Rows to allocate, in order.
    hyper : pmctx.ibp.sampler.IBPHyper
        Hyperparameters.
    rng : numpy.random.Generator or None
        Random generator (unused when ``alloc`` is given).
    alloc : ndarray of int, optional
        Allocation to score instead of drawing one.

    Returns
    -------
    alloc : numpy.ndarray of int
        Choice per row (0, 1 or 2).
    log_q : float
        Log probability of the allocation.

    Examples
    --------
    >>> from pmctx.ibp.sampler import IBPHyper
    >>> Z = np.zeros((3, 2), dtype=np.int64)
    >>> F, X = np.array([[1.0], [1.0], [-1.0]]), np.zeros((3, 0), dtype=np.int64)
    >>> alloc, log_q = sequential_allocation(Z, np.zeros((2, 0), int), F, X, 0, 1,
    ...                                      np.arange(3), IBPHyper(), np.random.default_rng(0))
    >>> alloc.shape, bool(log_q <= 0.0)
    ((3,), True)
    """
    h = hyper
    n, k_max = Z.shape
    Zf = Z.astype(np.float64)
    F = np.asarray(F, dtype=np.float64)
    use_f = F.shape[1] > 0
    if use_f:
        ZtZ, ZtF, FtF = Zf.T @ Zf, Zf.T @ F, float(np.sum(F * F))
    use_x = X.shape[1] > 0
    if use_x:
        others = [c for c in range(k_max) if c not in (k, k2)]
        base = Z[np.ix_(rows, others)] @ Y[others]  # active causes of the other columns
        states = np.array([[0, 0], [1, 0], [0, 1], [1, 1]])
        n_on = states.sum(axis=1)
        log_prior_y = n_on * math.log(h.phi) + (2 - n_on) * math.log1p(-h.phi)
        acc = np.zeros((4, X.shape[1]))  # per image state and pixel: allocated rows' loglik
    a = h.alpha / k_max
    counts = np.zeros(2, dtype=np.int64)
    out = np.empty(len(rows), dtype=np.int64) if alloc is None else np.asarray(alloc)
    log_q = 0.0
    for j, i in enumerate(rows):
        m = counts + _CHOICES  # (3, 2) column counts after each choice
        logw = betaln(a + m, 1.0 + n - m).sum(axis=1)
        if use_f:
            zi = np.repeat(Zf[i][None, :], 3, axis=0)  # row i under each choice
            zi[:, k], zi[:, k2] = _CHOICES[:, 0], _CHOICES[:, 1]
            d_ztz = zi[:, :, None] * zi[:, None, :] - np.outer(Zf[i], Zf[i])
            d_ztf = (zi - Zf[i])[:, :, None] * F[i][None, None, :]
            logw = logw + _force_terms(ZtZ + d_ztz, ZtF + d_ztf, FtF, n, h.sigma_n, h.sigma_a)
        if use_x:
            # (choice, image state, pixel): active causes and row i's log-likelihood
            cnt = base[j][None, None, :] + (_CHOICES @ states.T)[:, :, None]
            log_q0, log_p1 = noisy_or_log_p(cnt, h.lam, h.eps)
            lik = np.where(X[i] == 1, log_p1, log_q0)
            terms = log_prior_y[None, :, None] + acc[None] + lik
            logw = logw + logsumexp(terms, axis=1).sum(axis=1)
        logp = logw - logsumexp(logw)
        c = int(out[j]) if alloc is not None else _draw(logp, rng)
        out[j] = c
        log_q += float(logp[c])
        counts += _CHOICES[c]
        if use_f:
            ZtZ += d_ztz[c]
            ZtF += d_ztf[c]
            Zf[i] = zi[c]
        if use_x:
            acc += lik[c]
    return out, log_q


def _draw(logp, rng):
    return min(int(np.searchsorted(np.cumsum(np.exp(logp)), rng.random())), len(logp) - 1)


def split_merge_move(Z, A, Y, F, X, hyper, rng, *, broken: str | None = None,
                     allocation: str = "uniform"):  # fmt: skip
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
        For tests only: ``"no_allocation"`` drops the allocation's probability from the
        ratio.
    allocation : {"uniform", "sequential"}, default "uniform"
        How a split allocates the rows (module docstring).

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
    if allocation not in ALLOCATIONS:
        raise ValueError(f"allocation must be one of {ALLOCATIONS}; got {allocation!r}.")
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
        if allocation == "sequential":
            rows = rng.permutation(rows)
            rest = Z.copy()
            rest[:, k] = 0
            alloc, log_alloc = sequential_allocation(rest, Y, F, X, k, k2, rows, hyper, rng)
            if np.all(alloc == 0) or np.all(alloc == 1):  # a column left empty: no split
                return kind, False
        else:
            while True:  # uniform over the allocations that leave both columns non-empty
                alloc = rng.integers(0, 3, rows.size)  # 0: k only, 1: k2 only, 2: both
                if np.any(alloc != 0) and np.any(alloc != 1):
                    break
            log_alloc = -log_allocations(rows.size)
        new[rows, k] = alloc != 1
        new[rows, k2] = alloc != 0
        log_q_fwd = -math.log(active.size) - math.log(empty.size) + log_alloc
        log_q_rev = -math.log((active.size + 1) * active.size)
        if broken == "no_allocation":
            log_q_fwd -= log_alloc
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
        if allocation == "sequential":  # scored below, after the cheaper parts of the ratio
            log_alloc = 0.0
        else:
            log_alloc = -log_allocations(int(new[:, k].sum()))
        log_q_rev += log_alloc
        if broken == "no_allocation":
            log_q_rev -= log_alloc
        old_cols, new_cols = [k, k2], [k]
    h = hyper
    log_r = collapsed_log_prior_z(new, h.alpha, k_max) - collapsed_log_prior_z(Z, h.alpha, k_max)
    log_r += force_log_marginal(new, F, h.sigma_n, h.sigma_a)
    log_r -= force_log_marginal(Z, F, h.sigma_n, h.sigma_a)
    mx_new, states, logw = moved_rows_log_marginal(new, Y, X, new_cols, h.phi, h.lam, h.eps)
    mx_old, _, _ = moved_rows_log_marginal(Z, Y, X, old_cols, h.phi, h.lam, h.eps)
    log_r += mx_new - mx_old + log_q_rev - log_q_fwd
    log_u = math.log(rng.random())
    if kind == "merge" and allocation == "sequential" and log_u < log_r:
        # The reverse split's log probability is <= 0, so only a merge that would pass
        # without it needs it: score the allocation of the union's rows.
        rows = rng.permutation(np.flatnonzero(new[:, k]))
        alloc = np.where(Z[rows, k2] == 0, 0, np.where(Z[rows, k] == 0, 1, 2))
        rest = Z.copy()
        rest[:, [k, k2]] = 0
        if broken != "no_allocation":
            log_r += sequential_allocation(rest, Y, F, X, k, k2, rows, hyper, None, alloc)[1]
    if log_u >= log_r:
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
