"""Data-driven birth/death Metropolis-Hastings move for small shared IBP features.

At a thousand trials the features owned by a handful of trials (2-19) come and go slowly:
the row updates change one trial at a time, and a uniform split-merge cannot propose the
exact set of rows a merge's reverse split needs. This move deletes a small feature outright,
or creates one, and the reverse of each is the other:

* **death** (probability 1/2): pick a column ``k`` owned by ``2 <= m_k <= m_max`` rows
  uniformly among such columns; empty it; its ``A_k`` and ``Y_k`` are redrawn from the prior
  (an empty column's exact conditional);
* **birth** (probability 1/2): pick an empty column ``k`` uniformly; pick a seed row ``i0``
  uniformly and propose ``A_k ~ N(r_i0, sigma_n^2 I)`` (``r = F - Z A``, the residual) and
  ``Y_kt ~ Bernoulli(g_on)`` where trial ``i0`` shows pixel ``t`` with no active cause, else
  ``Bernoulli(g_off)``; then every row joins independently with probability
  ``sigmoid(gain_i + bias)``, ``gain_i`` its log-likelihood gain from owning ``(A_k, Y_k)``.
  Proposals with fewer than 2 or more than ``m_max`` rows are rejected.

Both directions see the same "rest of the state" (``Z, A, Y`` without column ``k``), so the
reverse-move density is exact: ``q(A_k, Y_k)`` is the mixture over all ``N`` seeds and the
row-set probability the product of the rows' Bernoulli terms. For a birth ``Z -> Z'``,

    log r = log p(Z') - log p(Z) + sum_{i in S} gain_i + log N(A_k; 0, sigma_A^2)
            + log Bern(Y_k; phi) - log q(A_k, Y_k) - log P(S | A_k, Y_k)
            + log(1 / n_small(Z')) - log(1 / n_empty(Z))

(``p(Z)`` the finite-K collapsed prior, ``pi`` integrated out: redraw ``pi | Z`` after the
move); a death uses ``-log r`` of its reverse birth. The emptied or filled column's prior
values cancel against the prior redraw of the reverse move.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import betaln, expit, log_expit, logsumexp

__all__ = ["birth_death_move", "birth_log_ratio", "row_gains"]

_LOG_2PI = math.log(2.0 * math.pi)


def _context(Z, A, Y, F, X, k):
    """Residual ``F - Z A`` and counts ``Z Y`` without column ``k``."""
    keep = np.arange(Z.shape[1]) != k
    R = F - Z[:, keep] @ A[keep] if F.shape[1] else np.zeros((Z.shape[0], 0))
    if X.shape[1]:  # float product (BLAS), exact for these small integer counts
        C = (Z[:, keep].astype(np.float64) @ Y[keep].astype(np.float64)).astype(np.int64)
    else:
        C = np.zeros((Z.shape[0], 0), dtype=np.int64)
    return R, C


def row_gains(R, C, X, a, y, hyper) -> np.ndarray:
    """Per row, the log-likelihood gain from owning a feature with force ``a`` and image ``y``.

    Parameters
    ----------
    R : ndarray (N, D)
        Force residuals without the feature.
    C : ndarray (N, T)
        Active causes per pixel without the feature.
    X : ndarray (N, T)
        Binary cues.
    a : ndarray (D,)
        The feature's force.
    y : ndarray (T,)
        The feature's image.
    hyper : pmctx.ibp.sampler.IBPHyper
        Hyperparameters.

    Returns
    -------
    numpy.ndarray (N,)
        ``log p(f_i, x_i | owns) - log p(f_i, x_i | does not)``.

    Examples
    --------
    >>> from pmctx.ibp.sampler import IBPHyper
    >>> R, C, X = np.array([[1.0], [0.0]]), np.zeros((2, 0), int), np.zeros((2, 0), int)
    >>> row_gains(R, C, X, np.array([1.0]), np.zeros(0, int), IBPHyper(sigma_n=1.0)).tolist()
    [0.5, -0.5]
    """
    gain = np.zeros(R.shape[0])
    if R.shape[1]:
        gain -= (((R - a) ** 2).sum(axis=1) - (R**2).sum(axis=1)) / (2.0 * hyper.sigma_n**2)
    if X.shape[1] and y.any():
        on = y == 1
        Xs, Cs = X[:, on], C[:, on]
        l0 = np.log1p(-hyper.lam)
        # The gain of a pixel depends on C only: tabulate it over the counts that occur.
        c = np.arange(int(Cs.max()) + 1)
        ll0_off = c * l0 + np.log1p(-hyper.eps)  # log P(x = 0 | C)
        ll0_on = ll0_off + l0
        d1 = np.log(-np.expm1(ll0_on)) - np.log(-np.expm1(ll0_off))
        gain += np.where(Xs == 1, d1[Cs], l0).sum(axis=1)
    return gain


def _seed_tables(R, C, X, hyper, g_on, g_off):
    g = np.where((X == 1) & (C == 0), g_on, g_off)
    return g


def _log_q(a, y, R, g, hyper):
    """log density of proposing ``(a, y)``: mixture over the N seed rows."""
    n = R.shape[0]
    lq = np.full(n, -math.log(n))
    if R.shape[1]:
        s2 = hyper.sigma_n**2
        lq += -0.5 * R.shape[1] * (_LOG_2PI + math.log(s2)) - ((a - R) ** 2).sum(1) / (2 * s2)
    if g.shape[1]:
        lq += np.where(y == 1, np.log(g), np.log1p(-g)).sum(axis=1)
    return float(logsumexp(lq))


def _log_prior_column(m, n, alpha, k_max):
    a = alpha / k_max
    return float(betaln(a + m, 1.0 + n - m) - betaln(a, 1.0))


def birth_log_ratio(Z, A, Y, F, X, k, S, a, y, hyper, *, m_max=19, bias=-3.0,
                    g_on=0.9, g_off=0.05, broken=None) -> float:  # fmt: skip
    """``log r`` of the birth of the empty column ``k`` with rows ``S``, force ``a``, image ``y``.

    A death of that column from the resulting state has ``log r_death = -log r``.

    Parameters
    ----------
    Z : ndarray (N, K_max)
        Ownership before the birth (column ``k`` empty).
    A : ndarray (K_max, D)
        Force bases (column ``k`` ignored).
    Y : ndarray (K_max, T)
        Images (column ``k`` ignored).
    F : ndarray (N, D)
        Forces.
    X : ndarray (N, T)
        Cues.
    k : int
        The column born.
    S : ndarray of int
        Rows that own it after the birth.
    a : ndarray (D,)
        Its force.
    y : ndarray (T,)
        Its image.
    hyper : pmctx.ibp.sampler.IBPHyper
        Hyperparameters.
    m_max : int, default 19
        Largest feature the move deletes (and creates).
    bias : float, default -3.0
        Added to a row's gain in its join probability.
    g_on, g_off : float, default 0.9 and 0.05
        Pixel probabilities of the proposed image (unexplained pixel of the seed / other).
    broken : str, optional
        For tests only: ``"no_row_set"`` drops ``log P(S)`` from the ratio.

    Returns
    -------
    float
        The log acceptance ratio.

    Examples
    --------
    >>> from pmctx.ibp.sampler import IBPHyper
    >>> Z = np.array([[1, 0], [1, 0], [0, 0]])
    >>> A, Y = np.array([[1.0], [0.0]]), np.zeros((2, 0), int)
    >>> F, X = np.array([[1.0], [1.0], [2.0]]), np.zeros((3, 0), int)
    >>> r = birth_log_ratio(Z, A, Y, F, X, 1, np.array([0, 2]), np.array([1.0]),
    ...                     np.zeros(0, int), IBPHyper())
    >>> bool(np.isfinite(r))
    True
    """
    n, k_max = Z.shape
    R, C = _context(Z, A, Y, F, X, k)
    gain = row_gains(R, C, X, a, y, hyper)
    g = _seed_tables(R, C, X, hyper, g_on, g_off)
    inside = np.zeros(n, dtype=bool)
    inside[S] = True
    log_p_set = float(np.where(inside, log_expit(gain + bias), log_expit(-(gain + bias))).sum())
    m = Z.sum(axis=0)
    n_empty = int((m == 0).sum())
    n_small_after = int(((m >= 2) & (m <= m_max)).sum()) + 1
    lr = _log_prior_column(len(S), n, hyper.alpha, k_max) - _log_prior_column(
        0, n, hyper.alpha, k_max
    )
    lr += float(gain[inside].sum())
    if F.shape[1]:
        s2 = hyper.sigma_a**2
        lr += -0.5 * F.shape[1] * (_LOG_2PI + math.log(s2)) - float((a**2).sum()) / (2 * s2)
    if X.shape[1]:
        lr += float(np.where(y == 1, math.log(hyper.phi), math.log1p(-hyper.phi)).sum())
    lr -= _log_q(a, y, R, g, hyper)
    if broken != "no_row_set":
        lr -= log_p_set
    lr += math.log(n_empty) - math.log(n_small_after)
    return lr


def birth_death_move(Z, A, Y, F, X, hyper, rng, *, m_max=19, bias=-3.0, g_on=0.9,
                     g_off=0.05, broken=None):  # fmt: skip
    """One birth-or-death proposal, accepted by Metropolis-Hastings; updates in place.

    Parameters
    ----------
    Z : ndarray (N, K_max) int
        Ownership (updated in place).
    A : ndarray (K_max, D)
        Force bases (updated in place).
    Y : ndarray (K_max, T) int
        Images (updated in place).
    F : ndarray (N, D)
        Forces; D may be 0.
    X : ndarray (N, T)
        Cues; T may be 0.
    hyper : pmctx.ibp.sampler.IBPHyper
        Hyperparameters.
    rng : numpy.random.Generator
        Random generator.
    m_max : int, default 19
        Largest feature deleted or created.
    bias : float, default -3.0
        Added to a row's gain in its join probability.
    g_on, g_off : float, default 0.9 and 0.05
        Pixel probabilities of the proposed image.
    broken : str, optional
        For tests only, see :func:`birth_log_ratio`.

    Returns
    -------
    (str, bool)
        ``"birth"``, ``"death"`` or ``"none"``, and whether it was accepted.

    Examples
    --------
    >>> from pmctx.ibp.sampler import IBPHyper
    >>> rng = np.random.default_rng(0)
    >>> Z = np.array([[1, 0], [1, 0], [0, 0]])
    >>> A, Y = np.ones((2, 1)), np.zeros((2, 0), dtype=np.int64)
    >>> kind, ok = birth_death_move(Z, A, Y, np.ones((3, 1)), np.zeros((3, 0)), IBPHyper(), rng)
    >>> kind in ("birth", "death", "none")
    True
    """
    if m_max < 2:
        raise ValueError(f"m_max must be at least 2; got {m_max}.")
    m = Z.sum(axis=0)
    opts = dict(m_max=m_max, bias=bias, g_on=g_on, g_off=g_off, broken=broken)
    if rng.random() < 0.5:
        empty = np.flatnonzero(m == 0)
        if empty.size == 0:
            return "none", False
        k = int(rng.choice(empty))
        R, C = _context(Z, A, Y, F, X, k)
        i0 = int(rng.integers(Z.shape[0]))
        a = R[i0] + hyper.sigma_n * rng.standard_normal(R.shape[1])
        g = _seed_tables(R, C, X, hyper, g_on, g_off)
        y = (rng.random(X.shape[1]) < g[i0]).astype(Y.dtype)
        gain = row_gains(R, C, X, a, y, hyper)
        S = np.flatnonzero(rng.random(Z.shape[0]) < expit(gain + bias))
        if not 2 <= S.size <= m_max:
            return "birth", False
        if math.log(rng.random()) >= birth_log_ratio(Z, A, Y, F, X, k, S, a, y, hyper, **opts):
            return "birth", False
        Z[S, k] = 1
        A[k], Y[k] = a, y
        return "birth", True
    small = np.flatnonzero((m >= 2) & (m <= m_max))
    if small.size == 0:
        return "none", False
    k = int(rng.choice(small))
    S = np.flatnonzero(Z[:, k])
    before = Z.copy()
    before[:, k] = 0
    log_r = -birth_log_ratio(before, A, Y, F, X, k, S, A[k], Y[k], hyper, **opts)
    if math.log(rng.random()) >= log_r:
        return "death", False
    Z[:, k] = 0
    A[k] = hyper.sigma_a * rng.standard_normal(A.shape[1])
    Y[k] = rng.random(Y.shape[1]) < hyper.phi
    return "death", True
