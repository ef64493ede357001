"""Particle filter for the CRP latent-cause model of classical conditioning.

The model (Gershman & Niv; seed 004): trial ``t`` has a latent cause ``c_t`` drawn from a
Chinese restaurant process with concentration ``alpha`` (optionally capped at ``max_causes``
causes and with a ``stickiness`` bonus for the previous trial's cause); each cause emits
binary features independently with Beta(a, b) priors on their probabilities (``a = b =
concentration`` by default), integrated out, so the predictive probability of a present
feature is ``(N_i1k + a) / (N_ik + a + b)`` and of an absent one ``(N_i0k + b) / (N_ik + a + b)``
(eq. 4 with a = b = 1); ``feature_prior="lcm"`` scores an absent one by
``(N_i0k + a) / (N_ik + a + b)`` instead, as the authors' LCM code does. An optional
temporal kernel makes the prior time-sensitive (Gershman, Blei & Niv 2010): old causes lose
weight with the time since their trials.

The filter uses the optimal proposal with resampling on every trial: the ancestor of each new
particle is drawn in proportion to its predictive probability of the trial's features and the
trial's cause from its posterior given that ancestor (eqs. 2-3). ``V_t``, the predicted
probability of the US, is computed *before* the trial's update with the US treated as missing
(eqs. 6-7): a brand-new cause predicts 0.5. ``method="local_map"`` is the single-particle
greedy variant that assigns every trial to its most probable cause.

Examples
--------
>>> from pmctx.conditioning import particle_filter, shipped_design
>>> res = particle_filter(shipped_design("renewal_aba", n_acquisition=5, n_extinction=5),
...                       alpha=0.1, n_particles=200, random_seed=0)
>>> res.V.shape, bool(res.V[0] == 0.5)
((11,), True)
"""

# Long because the compiled filter is one function (about 250 lines: the trial loop, the
# growth of the per-particle storage and the resampling share their arrays in one loop nest)
# and particle_filter's docstring documents each of its 17 options.

from __future__ import annotations

import numba
import numpy as np

from pmctx.conditioning.design import as_feature_matrix
from pmctx.conditioning.filter_result import CRPFilterResult
from pmctx.conditioning.filter_settings import (
    FEATURE_PRIORS,
    _common_checks,
    absent_pseudo_count,
    temporal_settings,
    trial_times,
)
from pmctx.validation import as_rng, check_choice, check_int

__all__ = [
    "FEATURE_PRIORS",
    "CRPFilterResult",
    "absent_pseudo_count",
    "common_uniforms",
    "particle_filter",
]


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


def particle_filter(
    features,
    *,
    alpha: float = 0.1,
    n_particles: int | None = None,
    concentration: float = 1.0,
    a: float | None = None,
    b: float | None = None,
    max_causes: int | None = None,
    stickiness: float = 0.0,
    method: str = "particle",
    temporal_kernel: str | None = None,
    timescale: float = 1.0,
    decay: float = 1.0,
    times=None,
    random_seed=None,
    uniforms=None,
    feature_prior: str = "beta",
) -> CRPFilterResult:
    """Run the latent-cause particle filter over a conditioning experiment.

    Parameters
    ----------
    features : Design, xarray.DataArray or array_like (n_trials, n_features)
        Binary trial features with the US in column 0; NaN in the US column marks a probe
        trial's unknown US (left out of the update).
    alpha : float, default 0.1
        CRP concentration (>= 0; 0 puts every trial in one cause).
    n_particles : int, optional
        Number of particles M (default 100; ``local_map`` uses exactly 1).
    concentration : float, default 1.0
        Symmetric Beta concentration of each feature's probabilities (1: uniform); the
        default of ``a`` and ``b``.
    a, b : float, optional
        Beta(a, b) pseudo-counts of feature presence and absence (LCM's ``opts.a``,
        ``opts.b``): a cause that has seen ``n1`` presences and ``n0`` absences of a feature
        predicts presence with ``(n1 + a) / (n1 + n0 + a + b)``; a new cause predicts the US
        with ``a / (a + b)``.
    max_causes : int, optional
        Cap K on the number of causes (default: unbounded).
    stickiness : float, default 0.0
        Extra prior weight of the previous trial's cause.
    method : {"particle", "local_map"}
        ``local_map``: one particle, each trial hard-assigned to its most probable cause.
    temporal_kernel : {None, "exponential", "power"}
        Time-sensitive prior (Gershman, Blei & Niv 2010): an old cause's prior weight is
        ``sum over its trials s of K(time_t - time_s)`` instead of its count, with
        ``K(d) = exp(-d / timescale)`` or ``(1 + d / timescale) ** -decay``. ``None`` (or
        an infinite timescale / zero decay) is the CRP.
    timescale, decay : float
        Kernel parameters (in the units of ``times``).
    times : array_like (n_trials,), optional
        Trial time stamps (default: the design's :meth:`~Design.trial_times`, else 0, 1, ...).
    random_seed : int or numpy.random.Generator, optional
        Seed of the resampling and cause-choice uniforms (when ``uniforms`` is not given).
    uniforms : tuple of two arrays (n_trials, n_particles), optional
        The resampling and cause-choice uniforms. Passing the same ones at different
        parameter values gives common random numbers (used by the per-subject fits).
    feature_prior : {"beta", "lcm"}, default "beta"
        ``"beta"``: the normalised Beta(a, b) predictive. ``"lcm"``: the authors' LCM code's
        convention, which scores an absent value by ``(n0 + a) / (n + a + b)`` (unnormalised
        when a != b; the same as "beta" when a == b); use it to reproduce ``LCM_fit``
        estimates (:data:`~pmctx.conditioning.filter_settings.FEATURE_PRIORS`).

    Returns
    -------
    CRPFilterResult

    Examples
    --------
    >>> import numpy as np
    >>> F = np.array([[1, 1, 1], [1, 1, 1], [0, 1, 0], [np.nan, 1, 1]])
    >>> res = particle_filter(F, alpha=0.5, n_particles=50, random_seed=1)
    >>> res.cause_posterior.shape[0], round(float(res.V[0]), 2)
    (4, 0.5)
    """
    F, names = as_feature_matrix(features)
    T = F.shape[0]
    alpha, a, b, n_slots, stickiness = _common_checks(
        alpha, concentration, max_causes, stickiness, T, a, b
    )
    check_choice(method, "method", ["particle", "local_map"])
    b_absent = absent_pseudo_count(a, b, feature_prior)
    if method == "local_map":
        M = 1 if n_particles is None else check_int(n_particles, "n_particles", minimum=1)
        if M != 1:
            raise ValueError(f"method='local_map' uses one particle, got n_particles={M}.")
    elif uniforms is not None:
        M = np.shape(uniforms[0])[1] if n_particles is None else n_particles
        M = check_int(M, "n_particles", minimum=1)
    else:
        M = 100 if n_particles is None else check_int(n_particles, "n_particles", minimum=1)
    kind, timescale, decay = temporal_settings(temporal_kernel, timescale, decay)
    stamps = trial_times(features, times, T) if kind else np.zeros(1)
    if uniforms is None:
        gen = as_rng(random_seed)
        u_resample = gen.random((T, M))
        u_cause = gen.random((T, M))
    else:
        u_resample, u_cause = (np.ascontiguousarray(u, dtype=float) for u in uniforms)
        if u_resample.shape != (T, M) or u_cause.shape != (T, M):
            raise ValueError(
                f"uniforms must be two arrays of shape (n_trials, n_particles) = {(T, M)}, "
                f"got {u_resample.shape} and {u_cause.shape}. Draw them with "
                "common_uniforms(n_trials, n_particles, random_seed)."
            )
    V, V_weighted, log_pred, post, n_causes, assign = _filter_kernel(
        F,
        alpha,
        a,
        b,
        b_absent,
        stickiness,
        n_slots,
        method == "local_map",
        u_resample,
        u_cause,
        stamps,
        kind,
        timescale,
        decay,
    )
    used = max(int(n_causes.max()), 1)
    settings = dict(
        alpha=alpha,
        n_particles=M,
        a=a,
        b=b,
        feature_prior=feature_prior,
        max_causes=max_causes,
        stickiness=stickiness,
        method=method,
        temporal_kernel=temporal_kernel,
        timescale=timescale,
        decay=decay,
    )
    return CRPFilterResult(
        V, post[:, :used], n_causes, log_pred, assign, names, settings, V_weighted
    )


def common_uniforms(n_trials: int, n_particles: int, random_seed=None):
    """The two (n_trials, n_particles) uniform arrays the filter consumes (for CRN).

    Parameters
    ----------
    n_trials : int
        Number of trials.
    n_particles : int
        Number of particles.
    random_seed : int or numpy.random.Generator, optional
        Random seed or generator.

    Returns
    -------
    tuple of numpy.ndarray
        Two ``(n_trials, n_particles)`` arrays of Uniform(0, 1) numbers.

    Examples
    --------
    >>> u, v = common_uniforms(4, 10, random_seed=0)
    >>> u.shape, v.shape
    ((4, 10), (4, 10))
    """
    gen = as_rng(random_seed)
    return gen.random((n_trials, n_particles)), gen.random((n_trials, n_particles))
