"""The CRP particle filter's kernel as it was before its compact-storage rewrite: the oracle.

:func:`pmctx.conditioning.particle_filter._filter_kernel` keeps each particle's counts in
arrays sized by the causes in use (grown on demand) and reuses each cause's normalised
posterior; :func:`filter_kernel` here is the earlier kernel, with ``(particle, n_slots)``
arrays (``n_slots = T`` for an unbounded CRP), kept verbatim so that the tests can check that
the new kernel gives the same ``V``, predictive log likelihoods, cause posteriors and
assignments (to 1e-12; assignments exactly) on random designs, and ``benchmarks/bench_crp.py``
can time the two in one run.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["filter_kernel"]


@numba.njit(cache=True)
def _log_sum_exp(x, n):
    mx = -np.inf
    for k in range(n):
        if x[k] > mx:
            mx = x[k]
    if mx == -np.inf:
        return mx
    s = 0.0
    for k in range(n):
        s += np.exp(x[k] - mx)
    return mx + np.log(s)


@numba.njit(cache=True)
def _kernel_weights(out, times, t, kernel_kind, timescale, decay):
    """out[s] = K(times[t] - times[s]) for s < t (the temporal kernel)."""
    for s in range(t):
        dt = times[t] - times[s]
        if kernel_kind == 1:
            out[s] = np.exp(-dt / timescale)
        else:
            out[s] = (1.0 + dt / timescale) ** (-decay)


@numba.njit(cache=True)
def filter_kernel(
    F,
    alpha,
    a,
    b,
    b_absent,
    stickiness,
    n_slots,
    local_map,
    u_resample,
    u_cause,
    times,
    kernel_kind,
    timescale,
    decay,
):
    T, D = F.shape
    M = u_resample.shape[1]
    # Counts are whole numbers below T + 1: every log the likelihood needs is a table lookup.
    log_present = np.empty(T + 1)
    log_absent = np.empty(T + 1)
    log_total = np.empty(T + 1)
    for n in range(T + 1):
        log_present[n] = np.log(n + a)
        log_absent[n] = np.log(n + b_absent)
        log_total[n] = np.log(n + a + b)
    counts = np.zeros((M, n_slots, D, 2), np.int32)
    n_k = np.zeros((M, n_slots))
    n_used = np.zeros(M, np.int64)
    prev = np.full(M, -1, np.int64)
    ancestor = np.zeros((T, M), np.int64)
    cause = np.zeros((T, M), np.int64)
    counts_b = np.zeros_like(counts)
    n_k_b = np.zeros_like(n_k)
    n_used_b = np.zeros_like(n_used)
    prev_b = np.zeros_like(prev)
    # The temporal prior needs every particle's own history (copied on resampling).
    temporal = kernel_kind > 0
    T_hist = T if temporal else 1
    hist = np.zeros((M, T_hist), np.int64)
    hist_b = np.zeros_like(hist)
    kvec = np.zeros(T_hist)
    tw = np.zeros(n_slots)

    V = np.empty(T)
    V_weighted = np.empty(T)
    log_pred = np.empty(T)
    post = np.zeros((T, n_slots))
    n_causes = np.empty((T, M), np.int64)
    logpost = np.full((M, n_slots), -np.inf)
    n_opt = np.zeros(M, np.int64)
    logw = np.empty(M)
    v_m = np.empty(M)
    log_x = np.empty(M)
    lp = np.empty(n_slots)
    lx = np.empty(n_slots)
    pus = np.empty(n_slots)
    cw = np.empty(M)

    for t in range(T):
        f_us = F[t, 0]
        if temporal:
            _kernel_weights(kvec, times, t, kernel_kind, timescale, decay)
        for m in range(M):
            nu = n_used[m]
            n_o = nu + 1 if nu < n_slots else nu
            n_opt[m] = n_o
            if temporal:
                for k in range(nu):
                    tw[k] = 0.0
                for s in range(t):
                    tw[hist[m, s]] += kvec[s]
            total = 0.0
            for k in range(n_o):
                if k < nu:
                    w = (tw[k] if temporal else n_k[m, k]) + (stickiness if k == prev[m] else 0.0)
                else:
                    w = alpha if t > 0 else 1.0  # c_1 is the first cause
                lp[k] = w
                total += w
            for k in range(n_o):
                lp[k] = np.log(lp[k] / total)
                lxk = 0.0
                for i in range(1, D):
                    f = F[t, i]
                    if f >= 0:
                        c = counts[m, k, i]
                        seen = log_present[c[1]] if f == 1 else log_absent[c[0]]
                        lxk += seen - log_total[c[0] + c[1]]
                lx[k] = lxk
                c = counts[m, k, 0]
                pus[k] = (c[1] + a) / (c[0] + c[1] + a + b)
            # V_t: the cause posterior without the US feature, then its US prediction.
            for k in range(n_o):
                logpost[m, k] = lp[k] + lx[k]
            norm = _log_sum_exp(logpost[m], n_o)
            v = 0.0
            for k in range(n_o):
                v += np.exp(logpost[m, k] - norm) * pus[k]
            v_m[m] = v
            log_x[m] = norm
            if f_us >= 0:
                for k in range(n_o):
                    c = counts[m, k, 0]
                    # log of the US predictive, computed from counts (not 1 - pus) so that
                    # tiny pseudo-counts keep full precision.
                    seen = log_present[c[1]] if f_us == 1 else log_absent[c[0]]
                    logpost[m, k] += seen - log_total[c[0] + c[1]]
            logw[m] = _log_sum_exp(logpost[m], n_o)

        V[t] = v_m.mean()
        norm_x = _log_sum_exp(log_x, M)
        vw = 0.0
        for m in range(M):
            vw += np.exp(log_x[m] - norm_x) * v_m[m]
        V_weighted[t] = vw
        lse = _log_sum_exp(logw, M)
        log_pred[t] = lse - np.log(M)
        acc = 0.0
        for m in range(M):
            wm = np.exp(logw[m] - lse)
            acc += wm
            cw[m] = acc
            for k in range(n_opt[m]):
                post[t, k] += wm * np.exp(logpost[m, k] - logw[m])
        cw[M - 1] = np.inf  # guard against round-off in the last bin

        for j in range(M):
            if local_map:
                anc = j
            else:
                anc = np.searchsorted(cw, u_resample[t, j] * acc, side="right")
            n_o = n_opt[anc]
            if local_map:
                k_new = 0
                for k in range(1, n_o):
                    if logpost[anc, k] > logpost[anc, k_new]:
                        k_new = k
            else:
                u = u_cause[t, j]
                k_new = n_o - 1
                run = 0.0
                for k in range(n_o):
                    run += np.exp(logpost[anc, k] - logw[anc])
                    if u < run:
                        k_new = k
                        break
            nu = n_used[anc]
            counts_b[j, :nu] = counts[anc, :nu]
            n_k_b[j, :nu] = n_k[anc, :nu]
            if temporal:
                hist_b[j, :t] = hist[anc, :t]
                hist_b[j, t] = k_new
            if nu < n_slots:
                counts_b[j, nu] = 0
                n_k_b[j, nu] = 0.0
            # Store the genealogy instead of copying every history: O(M) per trial.
            ancestor[t, j] = anc
            cause[t, j] = k_new
            n_k_b[j, k_new] += 1.0
            for i in range(D):
                f = F[t, i]
                if f >= 0:
                    counts_b[j, k_new, i, f] += 1
            n_used_b[j] = nu + 1 if k_new == nu else nu
            if n_used_b[j] < n_slots:  # keep the next fresh slot empty
                counts_b[j, n_used_b[j]] = 0
                n_k_b[j, n_used_b[j]] = 0.0
            prev_b[j] = k_new
            n_causes[t, j] = n_used_b[j]
        counts, counts_b = counts_b, counts
        n_k, n_k_b = n_k_b, n_k
        n_used, n_used_b = n_used_b, n_used
        prev, prev_b = prev_b, prev
        hist, hist_b = hist_b, hist
    assign = np.empty((M, T), np.int64)
    for j in range(M):
        idx = j
        for t in range(T - 1, -1, -1):
            assign[j, t] = cause[t, idx]
            idx = ancestor[t, idx]
    return V, V_weighted, log_pred, post, n_causes, assign
