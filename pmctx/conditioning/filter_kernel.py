"""The compiled CRP particle filter behind :func:`~pmctx.conditioning.particle_filter`.

Particles that share their whole cause history have the same counts, so they share a
*node*: the filter keeps one state (feature counts, cause sizes, previous cause, temporal
history) per node and a node index per particle. A trial's predictives, US prediction and
cause posterior are computed once per node; what is per particle (the weights' sums, the
resampling draw, the cause draw, the genealogy) is ``O(1)`` per particle, so a trial costs
``O(M + nodes x causes x features)`` instead of ``O(M x causes x features)``. After
resampling, particle ``j`` with ancestor ``anc`` and cause ``k`` joins the node of
``(node(anc), k)``, made (copied from the ancestor's node and updated) the first time a
particle asks for it. Every per-particle value is the per-node value it was computed from,
and every sum runs over the particles in the same order as a per-particle filter would, so
the arrays returned are those of the per-particle kernel bit for bit
(``tests/oracles/crp_filter_compact.py``; ``tests/conditioning/test_crp_filter_kernel.py``).

``_filter_V_many`` runs many parameter points with the same uniforms in one compiled call.
"""

from __future__ import annotations

import numba
import numpy as np

__all__: list[str] = []


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
    """``old`` (node, slot, feature, 2) widened to ``cap`` slots; new slots hold 0."""
    new = np.zeros((old.shape[0], cap, old.shape[2], 2), old.dtype)
    # Loops, not ``new[:, :n] = old``: Numba's broadcasting assignment compiles its
    # shape-mismatch message (string formatting) for seconds in every kernel that uses it.
    for node in range(old.shape[0]):
        for slot in range(old.shape[1]):
            for feature in range(old.shape[2]):
                new[node, slot, feature, 0] = old[node, slot, feature, 0]
                new[node, slot, feature, 1] = old[node, slot, feature, 1]
    return new


@numba.njit(cache=True)
def _grow_slots(old, cap):
    """``old`` (node, slot) widened to ``cap`` slots; new slots hold 0."""
    new = np.zeros((old.shape[0], cap), old.dtype)
    for node in range(old.shape[0]):  # loops: see _grow_counts
        for slot in range(old.shape[1]):
            new[node, slot] = old[node, slot]
    return new


@numba.njit(cache=True)
def _guide_table(cw, acc, guide):
    """guide[b] = the first i with cw[i] > b * acc / M, for b = 0..M (``cw`` is the
    non-decreasing cumulative weight with cw[M - 1] = inf)."""
    M = cw.shape[0]
    step = acc / M
    i = 0
    for bucket in range(M + 1):
        edge = bucket * step
        while cw[i] <= edge:
            i += 1
        guide[bucket] = i


@numba.njit(cache=True)
def _guided_search(cw, guide, u, acc):
    """``np.searchsorted(cw, u * acc, side="right")``, exactly, by bisection between the guide
    table's entries two buckets either side of u's (margins for round-off at the edges):
    O(1) expected steps instead of O(log M)."""
    M = cw.shape[0]
    x = u * acc
    bucket = int(u * M)
    lo = guide[max(bucket - 1, 0)]
    hi = guide[min(bucket + 2, M)]
    while lo < hi:
        mid = (lo + hi) >> 1
        if cw[mid] > x:
            hi = mid
        else:
            lo = mid + 1
    return lo


@numba.njit(cache=True)
def _node_predictives(
    F, t, nd, counts, n_k, n_used, prev, hist, kvec, temporal, alpha, a, stickiness,
    n_slots, tabs, lp, lx, pus, tw, prob, logpost, local_map,
):  # fmt: skip
    """Node ``nd``'s cause posterior (``prob[nd]``) and, for local MAP, its log posteriors;
    returns (number of options, US prediction, log p(CS), log p(CS, US))."""
    log_present, log_absent, log_total, inv_total, b_absent = tabs
    D = F.shape[1]
    f_us = F[t, 0]
    nu = n_used[nd]
    n_o = nu + 1 if nu < n_slots else nu
    if temporal:
        for k in range(nu):
            tw[k] = 0.0
        for s in range(t):
            tw[hist[nd, s]] += kvec[s]
    total = 0.0
    for k in range(n_o):
        if k < nu:
            w = (tw[k] if temporal else n_k[nd, k]) + (stickiness if k == prev[nd] else 0.0)
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
                c0 = counts[nd, k, i, 0]
                c1 = counts[nd, k, i, 1]
                seen = log_present[c1] if f == 1 else log_absent[c0]
                lxk += seen - log_total[c0 + c1]
        lx[k] = lxk
        if lp[k] > 0.0 and lxk > mx:
            mx = lxk
        c0 = counts[nd, k, 0, 0]
        c1 = counts[nd, k, 0, 1]
        pus[k] = (c1 + a) * inv_total[c0 + c1]
    # V_t: the cause posterior without the US feature, then its US prediction. One exp per
    # cause: the US's predictive multiplies in as a ratio of counts.
    s1 = 0.0
    v = 0.0
    inv_prior = 1.0 / total
    for k in range(n_o):
        e = lp[k] * inv_prior * np.exp(lx[k] - mx) if lp[k] > 0.0 else 0.0
        prob[nd, k] = e
        s1 += e
        v += e * pus[k]
    if f_us >= 0:
        s2 = 0.0
        for k in range(n_o):
            c0 = counts[nd, k, 0, 0]
            c1 = counts[nd, k, 0, 1]
            q = pus[k] if f_us == 1 else (c0 + b_absent) * inv_total[c0 + c1]
            prob[nd, k] *= q
            s2 += prob[nd, k]
    else:
        s2 = s1
    inv_s2 = 1.0 / s2
    for k in range(n_o):
        prob[nd, k] *= inv_s2
    if local_map:
        # The greedy choice compares log posteriors computed term by term.
        for k in range(n_o):
            lpk = np.log(lp[k] / total) + lx[k]
            if f_us >= 0:
                c0 = counts[nd, k, 0, 0]
                c1 = counts[nd, k, 0, 1]
                seen = log_present[c1] if f_us == 1 else log_absent[c0]
                lpk += seen - log_total[c0 + c1]
            logpost[nd, k] = lpk
    return n_o, v / s1, mx + np.log(s1), mx + np.log(s2)


@numba.njit(cache=True)
def _filter_kernel(
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
    tabs = (log_present, log_absent, log_total, inv_total, b_absent)
    # Node state has room for ``cap`` causes, grown (doubled) when a node needs more. At
    # most M nodes exist at a time (each particle sits in one); ``_b`` arrays are the next
    # trial's nodes.
    cap = min(n_slots, 8)
    counts = np.zeros((M, cap, D, 2), np.int32)
    n_k = np.zeros((M, cap))
    n_used = np.zeros(M, np.int64)
    prev = np.full(M, -1, np.int64)
    counts_b = np.zeros_like(counts)
    n_k_b = np.zeros_like(n_k)
    n_used_b = np.zeros_like(n_used)
    prev_b = np.zeros_like(prev)
    temporal = kernel_kind > 0
    T_hist = T if temporal else 1
    hist = np.zeros((M, T_hist), np.int64)
    hist_b = np.zeros_like(hist)
    kvec = np.zeros(T_hist)
    n_nodes = 1
    node = np.zeros(M, np.int64)  # each particle's node
    node_b = np.zeros(M, np.int64)
    child = np.full((M, cap), -1, np.int64)  # (node, cause) -> next trial's node

    # The genealogy, one entry per node: its parent node and its trial's cause (pages of
    # these arrays past the nodes in use are never touched).
    parent = np.empty((T, M), np.int32)
    node_cause = np.empty((T, M), np.int32)
    V = np.empty(T)
    V_weighted = np.empty(T)
    log_pred = np.empty(T)
    post = np.zeros((T, n_slots))
    n_causes = np.empty((T, M), np.int64)
    logpost = np.full((M, cap), -np.inf)
    prob = np.zeros((M, cap))  # each cause's posterior given the node and the trial
    wprob = np.zeros((M, cap))  # the same times the node's particle weight
    n_opt = np.zeros(M, np.int64)
    v_n = np.empty(M)  # per node: US prediction, log p(CS), log p(CS, US)
    log_x_n = np.empty(M)
    logw_n = np.empty(M)
    ex_x = np.empty(M)
    ex_w = np.empty(M)
    w_n = np.empty(M)
    term_n = np.empty(M)
    lp = np.empty(cap)
    lx = np.empty(cap)
    pus = np.empty(cap)
    tw = np.zeros(cap)
    cw = np.empty(M)
    guide = np.empty(M + 1, np.int64)

    for t in range(T):
        need = 0
        for nd in range(n_nodes):
            need = max(need, n_used[nd] + 1)
        need = min(need, n_slots)
        if need > cap:
            cap = min(n_slots, max(2 * cap, need))
            counts = _grow_counts(counts, cap)
            counts_b = _grow_counts(counts_b, cap)
            n_k = _grow_slots(n_k, cap)
            n_k_b = _grow_slots(n_k_b, cap)
            child = np.full((M, cap), -1, np.int64)
            logpost = np.full((M, cap), -np.inf)
            prob = np.zeros((M, cap))
            wprob = np.zeros((M, cap))
            tw = np.zeros(cap)
            lp = np.empty(cap)
            lx = np.empty(cap)
            pus = np.empty(cap)
        if temporal:
            _kernel_weights(kvec, times, t, kernel_kind, timescale, decay)
        for nd in range(n_nodes):
            n_opt[nd], v_n[nd], log_x_n[nd], logw_n[nd] = _node_predictives(
                F, t, nd, counts, n_k, n_used, prev, hist, kvec, temporal, alpha, a,
                stickiness, n_slots, tabs, lp, lx, pus, tw, prob, logpost, local_map,
            )  # fmt: skip

        # Sums over particles, in particle order, of per-node values (one exp per node): the
        # sums over per-particle values, bit for bit. Every node holds a particle, so the
        # largest log over nodes is the largest over particles.
        mx_x = -np.inf
        mx_w = -np.inf
        for nd in range(n_nodes):
            mx_x = max(mx_x, log_x_n[nd])
            mx_w = max(mx_w, logw_n[nd])
        for nd in range(n_nodes):
            ex_x[nd] = np.exp(log_x_n[nd] - mx_x)
            ex_w[nd] = np.exp(logw_n[nd] - mx_w)
        s_v = 0.0
        s_x = 0.0
        s_w = 0.0
        for m in range(M):
            nd = node[m]
            s_v += v_n[nd]
            s_x += ex_x[nd]
            s_w += ex_w[nd]
        V[t] = s_v / M
        norm_x = mx_x if mx_x == -np.inf else mx_x + np.log(s_x)
        lse = mx_w if mx_w == -np.inf else mx_w + np.log(s_w)
        log_pred[t] = lse - np.log(M)
        for nd in range(n_nodes):
            term_n[nd] = np.exp(log_x_n[nd] - norm_x) * v_n[nd]
            w_n[nd] = np.exp(logw_n[nd] - lse)
        # The cause posterior: post[t, k] = sum_m w_m prob[node(m), k] summed over particles
        # in order (adding 0 where node(m) has no cause k, which leaves each sum unchanged).
        k_max = 0
        for nd in range(n_nodes):
            k_max = max(k_max, n_opt[nd])
        for nd in range(n_nodes):
            for k in range(k_max):
                wprob[nd, k] = w_n[nd] * prob[nd, k] if k < n_opt[nd] else 0.0
        for k in range(k_max):
            s = 0.0
            for m in range(M):
                s += wprob[node[m], k]
            post[t, k] = s
        acc = 0.0
        vw = 0.0
        for m in range(M):
            nd = node[m]
            vw += term_n[nd]
            acc += w_n[nd]
            cw[m] = acc
        V_weighted[t] = vw
        cw[M - 1] = np.inf  # guard against round-off in the last bin

        guided = not local_map and 0.0 < acc < np.inf
        if guided:
            _guide_table(cw, acc, guide)
        n_new = 0
        for j in range(M):
            if local_map:
                anc = j
            elif guided:
                anc = _guided_search(cw, guide, u_resample[t, j], acc)
            else:
                anc = np.searchsorted(cw, u_resample[t, j] * acc, side="right")
            na = node[anc]
            n_o = n_opt[na]
            if local_map:
                k_new = 0
                for k in range(1, n_o):
                    if logpost[na, k] > logpost[na, k_new]:
                        k_new = k
            else:
                u = u_cause[t, j]
                k_new = n_o - 1
                run = 0.0
                for k in range(n_o):
                    run += prob[na, k]
                    if u < run:
                        k_new = k
                        break
            nb = child[na, k_new]
            if nb < 0:  # the first particle in this (node, cause): make its node
                nb = n_new
                n_new += 1
                child[na, k_new] = nb
                nu = n_used[na]
                for k in range(nu):
                    n_k_b[nb, k] = n_k[na, k]
                    for i in range(D):
                        counts_b[nb, k, i, 0] = counts[na, k, i, 0]
                        counts_b[nb, k, i, 1] = counts[na, k, i, 1]
                if temporal:
                    for earlier in range(t):  # a loop: see _grow_counts
                        hist_b[nb, earlier] = hist[na, earlier]
                    hist_b[nb, t] = k_new
                if nu < n_slots:  # the fresh slot (nu < cap: the slots were grown for it)
                    counts_b[nb, nu] = 0
                    n_k_b[nb, nu] = 0.0
                n_k_b[nb, k_new] += 1.0
                for i in range(D):
                    f = F[t, i]
                    if f >= 0:
                        counts_b[nb, k_new, i, f] += 1
                n_used_b[nb] = nu + 1 if k_new == nu else nu
                # Keep the next fresh slot empty (a slot past cap is grown empty next trial).
                if n_used_b[nb] < cap:
                    counts_b[nb, n_used_b[nb]] = 0
                    n_k_b[nb, n_used_b[nb]] = 0.0
                prev_b[nb] = k_new
                parent[t, nb] = na
                node_cause[t, nb] = k_new
            node_b[j] = nb
            n_causes[t, j] = n_used_b[nb]
        for nd in range(n_nodes):
            for k in range(n_opt[nd]):
                child[nd, k] = -1
        n_nodes = n_new
        counts, counts_b = counts_b, counts
        n_k, n_k_b = n_k_b, n_k
        n_used, n_used_b = n_used_b, n_used
        prev, prev_b = prev_b, prev
        hist, hist_b = hist_b, hist
        node, node_b = node_b, node
    # Trace each final node's line back (particles of a node share their whole history).
    paths = np.empty((n_nodes, T), np.int64)
    for nd in range(n_nodes):
        cur = nd
        for t in range(T - 1, -1, -1):
            paths[nd, t] = node_cause[t, cur]
            cur = parent[t, cur]
    assign = np.empty((M, T), np.int64)
    for j in range(M):
        for t in range(T):  # a loop: see _grow_counts
            assign[j, t] = paths[node[j], t]
    return V, V_weighted, log_pred, post, n_causes, assign


@numba.njit(cache=True)
def _filter_V_many(
    F, points, n_slots, local_map, u_resample, u_cause, times, kernel_kind, timescale
):
    """``V`` (point, trial) at many parameter points in one compiled call.

    ``points`` (point, 6) holds alpha, a, b, the absent pseudo-count, stickiness and decay;
    every point reuses the same uniforms (common random numbers), so row ``p`` is what
    :func:`_filter_kernel` returns at point ``p``, bit for bit.
    """
    out = np.empty((points.shape[0], F.shape[0]))
    for p in range(points.shape[0]):
        out[p] = _filter_kernel(
            F,
            points[p, 0],
            points[p, 1],
            points[p, 2],
            points[p, 3],
            points[p, 4],
            n_slots,
            local_map,
            u_resample,
            u_cause,
            times,
            kernel_kind,
            timescale,
            points[p, 5],
        )[0]
    return out
