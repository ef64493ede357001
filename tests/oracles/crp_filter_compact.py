"""The CRP particle filter's kernel before particle deduplication: the second oracle.

:func:`pmctx.conditioning.filter_kernel._filter_kernel` computes each trial's predictives once
per distinct particle state (particles that share their whole cause history share a node);
:func:`filter_kernel` here is the kernel before that rewrite (per-particle storage sized by
the causes in use), kept verbatim so that the tests can check that the new kernel returns the
same arrays bit for bit on random designs, and ``benchmarks/bench_crp_study.py`` can time the
two in one run.
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
def _grow_counts(old, cap):
    """``old`` (particle, slot, feature, 2) widened to ``cap`` slots; new slots hold 0."""
    new = np.zeros((old.shape[0], cap, old.shape[2], 2), old.dtype)
    new[:, : old.shape[1]] = old
    return new


@numba.njit(cache=True)
def _grow_slots(old, cap):
    """``old`` (particle, slot) widened to ``cap`` slots; new slots hold 0."""
    new = np.zeros((old.shape[0], cap), old.dtype)
    new[:, : old.shape[1]] = old
    return new


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
    inv_total = np.empty(T + 1)  # 1 / (n + a + b): predictives are products, not divisions
    for n in range(T + 1):
        log_present[n] = np.log(n + a)
        log_absent[n] = np.log(n + b_absent)
        log_total[n] = np.log(n + a + b)
        inv_total[n] = 1.0 / (n + a + b)
    # Per-particle state has room for ``cap`` causes, grown (doubled) when a particle needs
    # more: memory and cache traffic follow the causes in use, not the n_slots allowed.
    cap = min(n_slots, 8)
    counts = np.zeros((M, cap, D, 2), np.int32)
    n_k = np.zeros((M, cap))
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
    tw = np.zeros(cap)

    V = np.empty(T)
    V_weighted = np.empty(T)
    log_pred = np.empty(T)
    post = np.zeros((T, n_slots))
    n_causes = np.empty((T, M), np.int64)
    logpost = np.full((M, cap), -np.inf)
    prob = np.zeros((M, cap))  # each cause's posterior given the particle and the trial
    n_opt = np.zeros(M, np.int64)
    logw = np.empty(M)
    v_m = np.empty(M)
    log_x = np.empty(M)
    lp = np.empty(cap)
    lx = np.empty(cap)
    pus = np.empty(cap)
    cw = np.empty(M)

    for t in range(T):
        need = min(n_used.max() + 1, n_slots)
        if need > cap:
            cap = min(n_slots, max(2 * cap, need))
            counts = _grow_counts(counts, cap)
            counts_b = _grow_counts(counts_b, cap)
            n_k = _grow_slots(n_k, cap)
            n_k_b = _grow_slots(n_k_b, cap)
            logpost = np.full((M, cap), -np.inf)
            prob = np.zeros((M, cap))
            tw = np.zeros(cap)
            lp = np.empty(cap)
            lx = np.empty(cap)
            pus = np.empty(cap)
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
            # Log likelihood of the trial's CS features under each cause (table lookups), the
            # largest among causes of non-zero prior weight, and each cause's US prediction.
            mx = -np.inf
            for k in range(n_o):
                lxk = 0.0
                for i in range(1, D):
                    f = F[t, i]
                    if f >= 0:
                        c0 = counts[m, k, i, 0]
                        c1 = counts[m, k, i, 1]
                        seen = log_present[c1] if f == 1 else log_absent[c0]
                        lxk += seen - log_total[c0 + c1]
                lx[k] = lxk
                if lp[k] > 0.0 and lxk > mx:
                    mx = lxk
                c0 = counts[m, k, 0, 0]
                c1 = counts[m, k, 0, 1]
                pus[k] = (c1 + a) * inv_total[c0 + c1]
            # V_t: the cause posterior without the US feature, then its US prediction. One
            # exp per cause: the US's predictive multiplies in as a ratio of counts.
            s1 = 0.0
            v = 0.0
            inv_prior = 1.0 / total
            for k in range(n_o):
                e = lp[k] * inv_prior * np.exp(lx[k] - mx) if lp[k] > 0.0 else 0.0
                prob[m, k] = e
                s1 += e
                v += e * pus[k]
            v_m[m] = v / s1
            log_x[m] = mx + np.log(s1)
            if f_us >= 0:
                s2 = 0.0
                for k in range(n_o):
                    c0 = counts[m, k, 0, 0]
                    c1 = counts[m, k, 0, 1]
                    q = pus[k] if f_us == 1 else (c0 + b_absent) * inv_total[c0 + c1]
                    prob[m, k] *= q
                    s2 += prob[m, k]
            else:
                s2 = s1
            logw[m] = mx + np.log(s2)
            inv_s2 = 1.0 / s2
            for k in range(n_o):
                prob[m, k] *= inv_s2
            if local_map:
                # The greedy choice compares log posteriors computed term by term.
                for k in range(n_o):
                    lpk = np.log(lp[k] / total) + lx[k]
                    if f_us >= 0:
                        c0 = counts[m, k, 0, 0]
                        c1 = counts[m, k, 0, 1]
                        seen = log_present[c1] if f_us == 1 else log_absent[c0]
                        lpk += seen - log_total[c0 + c1]
                    logpost[m, k] = lpk

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
                post[t, k] += wm * prob[m, k]
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
                    run += prob[anc, k]
                    if u < run:
                        k_new = k
                        break
            nu = n_used[anc]
            for k in range(nu):
                n_k_b[j, k] = n_k[anc, k]
                for i in range(D):
                    counts_b[j, k, i, 0] = counts[anc, k, i, 0]
                    counts_b[j, k, i, 1] = counts[anc, k, i, 1]
            if temporal:
                hist_b[j, :t] = hist[anc, :t]
                hist_b[j, t] = k_new
            if nu < n_slots:  # the fresh slot (nu < cap: the slots were grown for it)
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
            # Keep the next fresh slot empty (a slot past cap is grown empty next trial).
            if n_used_b[j] < cap:
                counts_b[j, n_used_b[j]] = 0
                n_k_b[j, n_used_b[j]] = 0.0
            prev_b[j] = k_new
            n_causes[t, j] = n_used_b[j]
        counts, counts_b = counts_b, counts
        n_k, n_k_b = n_k_b, n_k
        n_used, n_used_b = n_used_b, n_used
        prev, prev_b = prev_b, prev
        hist, hist_b = hist_b, hist
    # Trace every final particle's line back one trial at a time (reads stay in one row).
    assign = np.empty((M, T), np.int64)
    idx = np.arange(M)
    for t in range(T - 1, -1, -1):
        for j in range(M):
            assign[j, t] = cause[t, idx[j]]
            idx[j] = ancestor[t, idx[j]]
    return V, V_weighted, log_pred, post, n_causes, assign
