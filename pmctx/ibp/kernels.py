"""Numba kernels of the specialised IBP Gibbs sweep (truncated, finite-K collapsed prior).

Every kernel works in place on the state ``(Z, A, Y)`` and two caches kept in sync with it:
the force residual ``R = F - Z A`` and the cause counts ``C = Z Y`` (number of active causes
that switch on each pixel), plus the column counts ``m = Z.sum(0)``. A flip of ``z_ik`` then
costs O(D + T) instead of a full re-evaluation of the likelihood.

Target distribution: the model truncated at ``K_max`` columns with ``pi_k ~ Beta(alpha/K_max,
1)``, ``pi`` integrated out. The prior conditional of an entry is therefore the finite-K
collapsed one, ``P(z_ik = 1 | Z_-ik) = (m_-ik + alpha/K_max) / (N + alpha/K_max)`` (ERRATA),
not the infinite-IBP ``m_-ik / N`` of the seed's eq. 7. Columns that no other row uses (row
``i``'s singletons and empty columns) are updated as one exact block per row
(:func:`new_feature_block`): the number of them row ``i`` owns, ``K_new``, is drawn from the
seed's eq. 10-13 with ``Y_new`` and ``A_new`` integrated out, its prior being the finite
model's Binomial(J, (alpha/K_max)/(N + alpha/K_max)) over the J free columns (it tends to the
seed's Poisson(alpha/N) as K_max grows); ``A_new`` is then drawn from eq. 14 and ``Y_new``
exactly from its conditional, and the unused free columns get fresh prior draws.

Empty arrays switch a likelihood off: ``F`` and ``A`` with ``D = 0`` columns (visuals only),
``X`` and ``Y`` with ``T = 0`` columns (forces only).
"""

from __future__ import annotations

import math

import numba
import numpy as np

__all__ = [
    "log1mexp",
    "new_feature_block",
    "new_feature_log_posterior",
    "noisy_or_tables",
    "place_new_features",
    "refresh_empty_columns",
    "row_block_update",
    "sweep_rows",
    "update_y",
    "y_log_odds",
    "z_log_odds",
]

_LOG_2PI = math.log(2.0 * math.pi)


@numba.njit(cache=True)
def log1mexp(a):
    """``log(1 - exp(a))`` for ``a < 0`` without cancellation."""
    if a > -0.6931471805599453:
        return math.log(-math.expm1(a))
    return math.log1p(-math.exp(a))


@numba.njit(cache=True)
def noisy_or_tables(lam, eps, c_max):
    """Log-probabilities of ``x = 0`` and ``x = 1`` given ``c = 0..c_max`` active causes.

    ``log P(x = 0 | c) = c log(1 - lambda) + log(1 - eps)``; ``log P(x = 1 | c)`` is
    ``log1mexp`` of it, exact even when ``(1 - lambda)^c (1 - eps)`` underflows.
    """
    ll0 = np.empty(c_max + 1)
    ll1 = np.empty(c_max + 1)
    for c in range(c_max + 1):
        ll0[c] = c * math.log1p(-lam) + math.log1p(-eps)
        ll1[c] = log1mexp(ll0[c])
    return ll0, ll1


@numba.njit(cache=True)
def _sample_log_weights(logw, rng):
    top = -np.inf
    for j in range(logw.size):
        top = max(top, logw[j])
    total = 0.0
    for j in range(logw.size):
        total += math.exp(logw[j] - top)
    u = rng.random() * total
    acc = 0.0
    for j in range(logw.size):
        acc += math.exp(logw[j] - top)
        if u < acc:
            return j
    return logw.size - 1


@numba.njit(cache=True)
def _bernoulli_from_log_odds(log_odds, rng):
    # Compare log(u) with log sigmoid(log_odds), written so that neither branch overflows.
    if log_odds >= 0.0:
        log_p1 = -math.log1p(math.exp(-log_odds))
    else:
        log_p1 = log_odds - math.log1p(math.exp(log_odds))
    return math.log(rng.random()) < log_p1


@numba.njit(cache=True)
def z_log_odds(i, k, Z, A, Y, X, R, C, m, a_over_k, sigma_n, ll0, ll1):
    """Log-odds ``log P(z_ik = 1 | ...) / P(z_ik = 0 | ...)`` (seed eq. 6, finite-K prior).

    Valid for columns that another row uses (``m_-ik > 0``); costs O(D + T).
    """
    n = Z.shape[0]
    zik = Z[i, k]
    m_minus = m[k] - zik
    out = math.log(m_minus + a_over_k) - math.log(n - m_minus)
    inv2s2 = 0.5 / (sigma_n * sigma_n)
    for d in range(A.shape[1]):
        r_off = R[i, d] + zik * A[k, d]
        r_on = r_off - A[k, d]
        out -= (r_on * r_on - r_off * r_off) * inv2s2
    for t in range(Y.shape[1]):
        if Y[k, t] == 1:
            c_off = C[i, t] - zik
            if X[i, t] == 1:
                out += ll1[c_off + 1] - ll1[c_off]
            else:
                out += ll0[c_off + 1] - ll0[c_off]
    return out


# Typed zero and one for calls between compiled functions: a literal 0 or 1 argument, or a
# counter that starts at a literal 0, compiles the callee once more for Literal[int] while
# Numba infers the caller's types (the first joint sweep compiled _set_z three times).
_ZERO = np.int64(0)
_ONE = np.int64(1)


@numba.njit(cache=True)
def _set_z(i, k, value, Z, A, Y, R, C, m):
    delta = value - Z[i, k]
    if delta == 0:
        return
    Z[i, k] = value
    m[k] += delta
    for d in range(A.shape[1]):
        R[i, d] -= delta * A[k, d]
    for t in range(Y.shape[1]):
        if Y[k, t] == 1:
            C[i, t] += delta


@numba.njit(cache=True)
def new_feature_log_posterior(i, n_free, X, R, C, hyper, ll0):
    """Unnormalised log posterior of ``K_new = 0..n_free`` for row ``i`` (seed eq. 10-13).

    ``hyper = (alpha, sigma_n, sigma_A, phi, lambda, eps, K_max)``. ``R`` and ``C`` must
    already exclude row ``i``'s singletons. The prior is the finite model's
    Binomial(n_free, p) with ``p = (alpha/K_max) / (N + alpha/K_max)``.
    """
    alpha, sigma_n, sigma_a, phi, lam = hyper[0], hyper[1], hyper[2], hyper[3], hyper[4]
    a_over_k = alpha / hyper[6]
    n = X.shape[0]
    log_p1 = math.log(a_over_k) - math.log(n + a_over_k)
    log_p0 = math.log(n) - math.log(n + a_over_k)
    log_keep = math.log1p(-lam * phi)
    rr = 0.0
    for d in range(R.shape[1]):
        rr += R[i, d] * R[i, d]
    # The cue term depends on pixel t only through (x_it, C_it): histogram the counts once,
    # so each K_new costs O(K_max) instead of O(T) log1mexp evaluations.
    k_max = int(hyper[6])
    n0 = np.zeros(k_max + 1, dtype=np.int64)
    n1 = np.zeros(k_max + 1, dtype=np.int64)
    for t in range(X.shape[1]):
        if X[i, t] == 1:
            n1[C[i, t]] += 1
        else:
            n0[C[i, t]] += 1
    out = np.empty(n_free + 1)
    for kk in range(n_free + 1):
        lp = (
            math.lgamma(n_free + 1.0)
            - math.lgamma(kk + 1.0)
            - math.lgamma(n_free - kk + 1.0)
            + kk * log_p1
            + (n_free - kk) * log_p0
        )
        if R.shape[1] > 0:
            v = sigma_n * sigma_n + kk * sigma_a * sigma_a
            lp -= 0.5 * R.shape[1] * (_LOG_2PI + math.log(v)) + 0.5 * rr / v
        for c in range(k_max + 1):
            if n0[c] > 0:
                lp += n0[c] * (ll0[c] + kk * log_keep)
            if n1[c] > 0:
                lp += n1[c] * log1mexp(ll0[c] + kk * log_keep)
        out[kk] = lp
    return out


@numba.njit(cache=True)
def new_feature_block(i, Z, A, Y, X, R, C, m, hyper, ll0, ll1, rng):
    """Exact block update of row ``i``'s columns that no other row uses; returns K_new.

    Draws ``K_new`` (A_new, Y_new integrated), which free columns row ``i`` takes (uniformly:
    they are exchangeable), ``A_new`` from eq. 14 and ``Y_new`` per pixel exactly from its
    conditional.
    """
    k_max = Z.shape[1]
    free = np.empty(k_max, dtype=np.int64)
    n_free = _ZERO
    for k in range(k_max):
        if m[k] - Z[i, k] == 0:
            free[n_free] = k
            n_free += 1
            _set_z(i, k, _ZERO, Z, A, Y, R, C, m)  # singletons are zeroed (Algorithm 2, l. 15)
    if n_free == 0:
        return 0
    logw = new_feature_log_posterior(i, n_free, X, R, C, hyper, ll0)
    k_new = _sample_log_weights(logw, rng)
    place_new_features(i, k_new, free, n_free, Z, A, Y, X, R, C, m, hyper, ll0, ll1, rng)
    return k_new


@numba.njit(cache=True)
def place_new_features(i, k_new, free, n_free, Z, A, Y, X, R, C, m, hyper, ll0, ll1, rng):
    """Give row ``i`` ``k_new`` of the ``n_free`` free columns, with A_new and Y_new drawn.

    The columns are chosen uniformly (they are exchangeable), ``A_new`` comes from eq. 14 and
    ``Y_new`` per pixel exactly from its conditional; ``R`` and ``C`` must exclude row ``i``'s
    free columns on entry and are kept in sync.
    """
    sigma_n, sigma_a, phi = hyper[1], hyper[2], hyper[3]
    # Uniform choice of k_new of the free columns: partial Fisher-Yates puts them first.
    for j in range(k_new):
        swap = j + rng.integers(0, n_free - j)
        free[j], free[swap] = free[swap], free[j]
    # A_new (eq. 14): each row has mean r_i / (rho + k) and covariance
    # sigma_A^2 (I - 1 1^T / (rho + k)); shrinking the mean of k iid normals gives it exactly.
    rho = (sigma_n * sigma_n) / (sigma_a * sigma_a)
    shrink = 1.0 - math.sqrt(rho / (rho + k_new)) if k_new > 0 else 0.0
    eps_draw = np.empty(k_new)
    for d in range(A.shape[1]):
        mean = R[i, d] / (rho + k_new)
        total = 0.0
        for j in range(k_new):
            eps_draw[j] = rng.standard_normal()
            total += eps_draw[j]
        ebar = total / max(k_new, 1)
        for j in range(k_new):
            A[free[j], d] = mean + sigma_a * (eps_draw[j] - shrink * ebar)
    # Y_new per pixel: the new rows matter only through how many of them are on (s).
    logw_s = np.empty(k_new + 1)
    order = np.empty(k_new, dtype=np.int64)
    for t in range(Y.shape[1] if k_new > 0 else 0):
        c0 = C[i, t]
        for s in range(k_new + 1):
            lik = ll1[c0 + s] if X[i, t] == 1 else ll0[c0 + s]
            logw_s[s] = (
                math.lgamma(k_new + 1.0)
                - math.lgamma(s + 1.0)
                - math.lgamma(k_new - s + 1.0)
                + s * math.log(phi)
                + (k_new - s) * math.log1p(-phi)
                + lik
            )
        s_on = _sample_log_weights(logw_s, rng)
        for j in range(k_new):
            order[j] = j
        for j in range(s_on):
            swap = j + rng.integers(0, k_new - j)
            order[j], order[swap] = order[swap], order[j]
        for j in range(k_new):
            Y[free[order[j]], t] = 1 if j < s_on else 0
    for j in range(k_new):
        _set_z(i, free[j], _ONE, Z, A, Y, R, C, m)


@numba.njit(cache=True)
def refresh_empty_columns(A, Y, m, sigma_a, phi, rng):
    """Prior draws of ``A_k`` and ``Y_k`` for every empty column (their exact conditional)."""
    for k in range(m.size):
        if m[k] == 0:
            for d in range(A.shape[1]):
                A[k, d] = sigma_a * rng.standard_normal()
            for t in range(Y.shape[1]):
                Y[k, t] = 1 if rng.random() < phi else 0


@numba.njit(cache=True)
def row_block_update(i, cols, n_cols, Z, A, Y, X, R, C, m, a_over_k, sigma_n, ll0, ll1, rng):
    """Exact joint Gibbs draw of ``z_i,cols`` for up to a few shared columns (2^n configs).

    Single-site flips cannot swap a row from one feature to two others at once (e.g. from a
    merged "bar 1 + bar 2" feature to the two bars), which traps the chain in split or
    merged modes; a joint update of a small random block of columns can.
    """
    n = Z.shape[0]
    for j in range(n_cols):
        _set_z(i, cols[j], _ZERO, Z, A, Y, R, C, m)
    inv2s2 = 0.5 / (sigma_n * sigma_n)
    # Pixels that no block column switches on add the same term to every configuration.
    pixels = np.empty(Y.shape[1], dtype=np.int64)
    n_pix = 0
    for t in range(Y.shape[1]):
        for j in range(n_cols):
            if Y[cols[j], t] == 1:
                pixels[n_pix] = t
                n_pix += 1
                break
    log_on = np.empty(n_cols)
    log_off = np.empty(n_cols)
    for j in range(n_cols):
        log_on[j] = math.log(m[cols[j]] + a_over_k)
        log_off[j] = math.log(n - m[cols[j]])
    n_conf = 1 << n_cols
    logw = np.empty(n_conf)
    resid = np.empty(A.shape[1])
    for conf in range(n_conf):
        lp = 0.0
        for d in range(A.shape[1]):
            resid[d] = R[i, d]
        for j in range(n_cols):
            k = cols[j]
            if (conf >> j) & 1:
                lp += log_on[j]
                for d in range(A.shape[1]):
                    resid[d] -= A[k, d]
            else:
                lp += log_off[j]
        for d in range(A.shape[1]):
            lp -= resid[d] * resid[d] * inv2s2
        for p in range(n_pix):
            t = pixels[p]
            c = C[i, t]
            for j in range(n_cols):
                if (conf >> j) & 1:
                    c += Y[cols[j], t]
            lp += ll1[c] if X[i, t] == 1 else ll0[c]
        logw[conf] = lp
    conf = _sample_log_weights(logw, rng)
    for j in range(n_cols):
        if (conf >> j) & 1:
            _set_z(i, cols[j], _ONE, Z, A, Y, R, C, m)


@numba.njit(cache=True)
def sweep_rows(Z, A, Y, X, R, C, m, hyper, ll0, ll1, rng, new_features, block_size):
    """Gibbs pass over all rows of Z, in place; returns (features added, truncation hits).

    Columns used by other rows get single-site updates, then a joint update of a random
    block of ``block_size`` of them; with ``new_features`` the free columns of each row get
    :func:`new_feature_block`. A truncation hit is a row after whose update no free column
    is left, so the untruncated sampler might have added more.
    """
    n, k_max = Z.shape
    a_over_k = hyper[0] / hyper[6]
    added = 0
    hits = 0
    shared = np.empty(k_max, dtype=np.int64)
    for i in range(n):
        n_shared = 0
        for k in range(k_max):
            if m[k] - Z[i, k] > 0:
                shared[n_shared] = k
                n_shared += 1
                lo = z_log_odds(i, k, Z, A, Y, X, R, C, m, a_over_k, hyper[1], ll0, ll1)
                _set_z(i, k, 1 if _bernoulli_from_log_odds(lo, rng) else 0, Z, A, Y, R, C, m)
        n_block = min(block_size, n_shared)
        if n_block > 1:
            # The shared set depends on the other rows only, so a uniform random block of it
            # is a state-independent choice and the block draw stays an exact Gibbs update.
            for j in range(n_block):
                swap = j + rng.integers(0, n_shared - j)
                shared[j], shared[swap] = shared[swap], shared[j]
            row_block_update(
                i, shared, n_block, Z, A, Y, X, R, C, m, a_over_k, hyper[1], ll0, ll1, rng
            )
        if new_features:
            added += new_feature_block(i, Z, A, Y, X, R, C, m, hyper, ll0, ll1, rng)
            n_empty = 0
            for k in range(k_max):
                if m[k] == 0:
                    n_empty += 1
            if n_empty == 0:
                hits += 1
    if new_features:
        refresh_empty_columns(A, Y, m, hyper[2], hyper[3], rng)
    return added, hits


@numba.njit(cache=True)
def y_log_odds(k, t, Y, X, C, rows, n_rows, phi, ll0, ll1):
    """Log-odds of ``y_kt = 1`` given everything else (seed eq. 3-5).

    ``rows[:n_rows]`` are the rows with ``z_ik = 1``; the other rows do not depend on it.
    """
    lo = math.log(phi) - math.log1p(-phi)
    ykt = Y[k, t]
    for j in range(n_rows):
        i = rows[j]
        c_off = C[i, t] - ykt
        if X[i, t] == 1:
            lo += ll1[c_off + 1] - ll1[c_off]
        else:
            lo += ll0[c_off + 1] - ll0[c_off]
    return lo


@numba.njit(cache=True)
def update_y(Z, Y, X, C, phi, ll0, ll1, rng):
    """Gibbs pass over every ``y_kt`` (seed eq. 3-5), in place, keeping ``C = Z Y``."""
    n, k_max = Z.shape
    rows = np.empty(n, dtype=np.int64)
    for k in range(k_max):
        n_rows = _ZERO
        for i in range(n):
            if Z[i, k] == 1:
                rows[n_rows] = i
                n_rows += 1
        for t in range(Y.shape[1]):
            ykt = Y[k, t]
            lo = y_log_odds(k, t, Y, X, C, rows, n_rows, phi, ll0, ll1)
            new = 1 if _bernoulli_from_log_odds(lo, rng) else 0
            if new != ykt:
                Y[k, t] = new
                for j in range(n_rows):
                    C[rows[j], t] += new - ykt
