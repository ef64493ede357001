"""Joint row move: a block of shared columns and the number of singletons, drawn together.

The legacy sweep (:func:`pmctx.ibp.kernels.sweep_rows`) updates a row's shared columns with
its singletons held fixed, then the singletons given the shared columns. A row that truly owns
features {0, 1, 3} but sits on {1, s} with a singleton ``s`` whose force ``A_s ~ A_0 + A_3``
is stuck: dropping ``s`` alone or adding 0 or 3 alone are both far less probable, so the chain
needs a move that does both at once. This module draws, for row ``i``::

    (z_i,B, K_new)  ~  p(z_i,B, K_new | everything but row i's free columns)

jointly over a random block ``B`` of the row's shared columns (``2^|B|`` configurations) and
the number ``K_new`` of free columns (columns no other row uses) the row owns, with the free
columns' ``A`` and ``Y`` integrated out: the seed's eq. 10-13 generalised to every
configuration of the block::

    log w(c, k) = sum_{j in B} log P(z_ij = c_j | m_-ij)  +  log Binom(k; J, p_new)
                  + log N(f_i - z_i A; 0, (sigma_n^2 + k sigma_A^2) I_D)
                  + sum_t log P(x_it | C_it(c), k)

with ``P(x_it = 0 | C, k) = (1 - eps)(1 - lambda)^C (1 - lambda phi)^k`` (a new feature
switches pixel ``t`` on with probability ``phi``, its cause fires with ``lambda``), ``J`` the
number of free columns and ``p_new = (alpha/K_max) / (N + alpha/K_max)`` the finite-K
collapsed prior of a column no other row uses (ERRATA). The new features' ``A`` (eq. 14) and
``Y`` are then drawn exactly given ``k`` (:func:`pmctx.ibp.kernels.place_new_features`). The
block is chosen uniformly among the shared columns, which depend on the other rows only, so
the choice is state-independent and the move is an exact Gibbs update: it leaves the
posterior invariant with no accept/reject step.

Cost per row: ``2^|B|`` histograms of the pixel counts (O(T) each) and ``(J + 1)`` table
look-ups per histogram bin, with ``log P(x | C, k)`` tabulated once per sweep.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from pmctx.ibp.kernels import (
    _LOG_2PI,
    _ONE,
    _ZERO,
    _bernoulli_from_log_odds,
    _sample_log_weights,
    _set_z,
    log1mexp,
    place_new_features,
    refresh_empty_columns,
    z_log_odds,
)

__all__ = [
    "apply_joint_draw",
    "clear_row_block",
    "joint_row_log_weights",
    "joint_row_update",
    "singleton_tables",
    "sweep_rows_joint",
]


@numba.njit(cache=True)
def singleton_tables(ll0, lam, phi):
    """``log P(x = 0 | C = c, K_new = k)`` and ``log P(x = 1 | c, k)`` for c, k in 0..K_max."""
    size = ll0.size
    log_keep = math.log1p(-lam * phi)
    lk0 = np.empty((size, size))
    lk1 = np.empty((size, size))
    for c in range(size):
        for k in range(size):
            lk0[c, k] = ll0[c] + k * log_keep
            lk1[c, k] = log1mexp(lk0[c, k])
    return lk0, lk1


@numba.njit(cache=True)
def clear_row_block(i, cols, n_block, Z, A, Y, R, C, m, free):
    """Switch off row ``i``'s block columns and free columns; returns the number of free ones.

    ``free`` receives the free columns (``m_-ik = 0``); ``R``, ``C``, ``m`` stay in sync.
    """
    for j in range(n_block):
        _set_z(i, cols[j], _ZERO, Z, A, Y, R, C, m)
    n_free = _ZERO
    for k in range(Z.shape[1]):
        if m[k] - Z[i, k] == 0:
            free[n_free] = k
            n_free += 1
            _set_z(i, k, _ZERO, Z, A, Y, R, C, m)
    return n_free


@numba.njit(cache=True)
def joint_row_log_weights(i, cols, n_block, n_free, A, Y, X, R, C, m, hyper, lk0, lk1):
    """Unnormalised ``log w[conf, k]`` of the block configuration and ``K_new = k``.

    Call after :func:`clear_row_block` (row ``i`` has the block and free columns switched
    off). ``conf`` bit ``j`` switches on ``cols[j]``; ``hyper = (alpha, sigma_n, sigma_A,
    phi, lambda, eps, K_max)``.
    """
    n = C.shape[0]
    d_dim = A.shape[1]
    alpha, sigma_n, sigma_a = hyper[0], hyper[1], hyper[2]
    k_max = int(hyper[6])
    a_over_k = alpha / k_max
    log_norm = math.log(n + a_over_k)
    log_p1 = math.log(a_over_k) - log_norm
    log_p0 = math.log(n) - log_norm
    # Terms of k alone: binomial prior and the force variance.
    prior_k = np.empty(n_free + 1)
    var_k = np.empty(n_free + 1)
    for k in range(n_free + 1):
        prior_k[k] = (
            math.lgamma(n_free + 1.0)
            - math.lgamma(k + 1.0)
            - math.lgamma(n_free - k + 1.0)
            + k * log_p1
            + (n_free - k) * log_p0
        )
        var_k[k] = sigma_n * sigma_n + k * sigma_a * sigma_a
    n_conf = 1 << n_block
    logw = np.empty((n_conf, n_free + 1))
    resid = np.empty(d_dim)
    n0 = np.zeros(k_max + 1, dtype=np.int64)
    n1 = np.zeros(k_max + 1, dtype=np.int64)
    bins = np.empty(k_max + 1, dtype=np.int64)
    for conf in range(n_conf):
        lp_conf = 0.0
        for d in range(d_dim):
            resid[d] = R[i, d]
        for j in range(n_block):
            k = cols[j]
            if (conf >> j) & 1:
                lp_conf += math.log(m[k] + a_over_k) - log_norm
                for d in range(d_dim):
                    resid[d] -= A[k, d]
            else:
                lp_conf += math.log(n - m[k]) - log_norm
        rr = 0.0
        for d in range(d_dim):
            rr += resid[d] * resid[d]
        # The cue term depends on pixel t only through (x_it, C_it): histogram the counts.
        n0[:] = 0
        n1[:] = 0
        for t in range(Y.shape[1]):
            c = C[i, t]
            for j in range(n_block):
                if (conf >> j) & 1:
                    c += Y[cols[j], t]
            if X[i, t] == 1:
                n1[c] += 1
            else:
                n0[c] += 1
        # Only the few counts that occur matter (at most the number of active features).
        n_bins = 0
        for c in range(k_max + 1):
            if n0[c] > 0 or n1[c] > 0:
                bins[n_bins] = c
                n_bins += 1
        for k in range(n_free + 1):
            lp = lp_conf + prior_k[k]
            if d_dim > 0:
                lp -= 0.5 * d_dim * (_LOG_2PI + math.log(var_k[k])) + 0.5 * rr / var_k[k]
            for b in range(n_bins):
                c = bins[b]
                lp += n0[c] * lk0[c, k] + n1[c] * lk1[c, k]
            logw[conf, k] = lp
    return logw


@numba.njit(cache=True)
def apply_joint_draw(
    i, conf, k_new, cols, n_block, free, n_free, Z, A, Y, X, R, C, m, hyper, ll0, ll1, rng
):
    """Set row ``i``'s block to ``conf`` and give it ``k_new`` new features (A, Y drawn)."""
    for j in range(n_block):
        if (conf >> j) & 1:
            _set_z(i, cols[j], _ONE, Z, A, Y, R, C, m)
    if k_new > 0:
        place_new_features(i, k_new, free, n_free, Z, A, Y, X, R, C, m, hyper, ll0, ll1, rng)


@numba.njit(cache=True)
def joint_row_update(i, cols, n_block, free, Z, A, Y, X, R, C, m, hyper, ll0, ll1, lk0, lk1, rng):
    """Exact joint Gibbs draw of row ``i``'s block ``cols[:n_block]`` and ``K_new``.

    Returns the number of new features the row took.
    """
    n_free = clear_row_block(i, cols, n_block, Z, A, Y, R, C, m, free)
    logw = joint_row_log_weights(i, cols, n_block, n_free, A, Y, X, R, C, m, hyper, lk0, lk1)
    flat = _sample_log_weights(logw.ravel(), rng)
    conf, k_new = flat // (n_free + 1), flat % (n_free + 1)
    apply_joint_draw(
        i, conf, k_new, cols, n_block, free, n_free, Z, A, Y, X, R, C, m, hyper, ll0, ll1, rng
    )
    return k_new


@numba.njit(cache=True)
def sweep_rows_joint(Z, A, Y, X, R, C, m, hyper, ll0, ll1, rng, block_size):
    """Pass over all rows with the joint move; returns (features added, truncation hits).

    Per row: single-site updates of the shared columns (cheap, O(D + T) each), then
    :func:`joint_row_update` on a uniformly chosen block of ``block_size`` shared columns
    together with the row's free columns. Unused free columns are redrawn from the prior at
    the end (their exact conditional).
    """
    n, k_max = Z.shape
    a_over_k = hyper[0] / hyper[6]
    lk0, lk1 = singleton_tables(ll0, hyper[4], hyper[3])
    added = 0
    hits = 0
    shared = np.empty(k_max, dtype=np.int64)
    free = np.empty(k_max, dtype=np.int64)
    for i in range(n):
        n_shared = 0
        for k in range(k_max):
            if m[k] - Z[i, k] > 0:
                shared[n_shared] = k
                n_shared += 1
                lo = z_log_odds(i, k, Z, A, Y, X, R, C, m, a_over_k, hyper[1], ll0, ll1)
                _set_z(i, k, 1 if _bernoulli_from_log_odds(lo, rng) else 0, Z, A, Y, R, C, m)
        n_block = min(block_size, n_shared)
        # The shared set depends on the other rows only: a uniform random block of it is a
        # state-independent choice, so the block draw stays an exact Gibbs update.
        for j in range(n_block):
            swap = j + rng.integers(0, n_shared - j)
            shared[j], shared[swap] = shared[swap], shared[j]
        added += joint_row_update(
            i, shared, n_block, free, Z, A, Y, X, R, C, m, hyper, ll0, ll1, lk0, lk1, rng
        )
        n_empty = 0
        for k in range(k_max):
            if m[k] == 0:
                n_empty += 1
        if n_empty == 0:
            hits += 1
    refresh_empty_columns(A, Y, m, hyper[2], hyper[3], rng)
    return added, hits
