"""Exact filtering for the CRP latent-cause model by enumerating partitions.

Independent of the particle filter's sequential updates: every quantity is a ratio of sums of
*batch* joint probabilities ``P(c_1:t) P(F_1:t | c_1:t)`` over all partitions (restricted
growth strings) of the first ``t`` trials, with the Beta-Bernoulli marginal likelihood in
closed form. The cost grows like the Bell numbers, so it is limited to short sequences.

Examples
--------
>>> import numpy as np
>>> from pmctx.conditioning.exact import exact_filter
>>> F = np.array([[1, 1, 1], [1, 1, 1], [np.nan, 1, 1]])
>>> round(float(exact_filter(F, alpha=1.0).V[0]), 3)
0.5
"""

from __future__ import annotations

import numpy as np
from scipy.special import betaln, gammaln, logsumexp

from pmctx.conditioning.design import as_feature_matrix
from pmctx.conditioning.filter_result import CRPFilterResult
from pmctx.conditioning.filter_settings import (
    TEMPORAL_KERNELS,
    _common_checks,
    temporal_settings,
    trial_times,
)

__all__ = [
    "enumerate_partitions",
    "exact_filter",
    "log_joint_partitions",
    "log_marginal_assignments",
    "single_particle_paths",
]

MAX_EXACT_TRIALS = 10


def enumerate_partitions(n: int, max_blocks: int | None = None) -> np.ndarray:
    """All set partitions of ``n`` items as restricted growth strings, shape (B_n, n).

    Parameters
    ----------
    n : int
        Number of items (trials).
    max_blocks : int, optional
        Largest number of blocks (causes) allowed (default ``n``).

    Returns
    -------
    numpy.ndarray (n_partitions, n)
        One partition per row, as block labels in order of first appearance.

    Examples
    --------
    >>> enumerate_partitions(3).tolist()
    [[0, 0, 0], [0, 0, 1], [0, 1, 0], [0, 1, 1], [0, 1, 2]]
    """
    max_blocks = n if max_blocks is None else max_blocks
    if n == 0:
        return np.zeros((1, 0), dtype=np.int64)
    level = np.zeros((1, 1), dtype=np.int64)
    for _ in range(1, n):
        nxt = []
        for row in level:
            for k in range(min(row.max() + 2, max_blocks)):
                nxt.append(np.append(row, k))
        level = np.array(nxt, dtype=np.int64)
    return level


def _kernel(dt, kind, timescale, decay):
    if kind == 0:
        return np.ones_like(dt)
    if TEMPORAL_KERNELS[kind - 1] == "exponential":
        return np.exp(-dt / timescale)
    return (1.0 + dt / timescale) ** (-decay)


def log_joint_partitions(
    parts,
    F,
    *,
    alpha,
    a,
    b=None,
    stickiness=0.0,
    n_slots=None,
    times=None,
    kernel=(0, 1.0, 0.0),
) -> np.ndarray:
    """log P(c) + log P(F | c) for each partition row of ``parts`` (F coded with -1 missing).

    ``a``, ``b``: Beta pseudo-counts (``b`` defaults to ``a``); ``kernel`` the temporal prior
    as returned by :func:`~pmctx.conditioning.filter_settings.temporal_settings`, with trial
    ``times``.

    Parameters
    ----------
    parts : array_like (n_partitions, t)
        Partitions from :func:`enumerate_partitions`.
    F : numpy.ndarray (t, feature)
        Features coded 0/1 with -1 for missing.
    alpha : float
        CRP concentration.
    a : float
        Beta pseudo-count of feature presence.
    b : float, optional
        Beta pseudo-count of absence (default ``a``).
    stickiness : float, default 0.0
        Extra prior weight of the previous trial's cause.
    n_slots : int, optional
        Largest number of causes (default ``t``).
    times : array_like (t,), optional
        Trial time stamps (default ``0, 1, ...``).
    kernel : tuple, default (0, 1.0, 0.0)
        Temporal prior ``(kind, timescale, decay)``.

    Returns
    -------
    numpy.ndarray (n_partitions,)
        Log joint probability of each partition and the features.
    """
    parts = np.asarray(parts)
    b = a if b is None else b
    n_parts, t = parts.shape
    K = t if n_slots is None else n_slots
    kind, timescale, decay = kernel
    times = np.arange(t, dtype=float) if times is None else np.asarray(times, dtype=float)
    # CRP prior, sequentially (the sticky/capped/temporal prior has no product form).
    log_prior = np.zeros(n_parts)
    rows = np.arange(n_parts)
    onehot = (parts[:, :, None] == np.arange(t)[None, None, :]).astype(float)
    for s in range(t):
        c = parts[:, s]
        if s > 0:
            n_used = (onehot[:, :s].sum(axis=1) > 0).sum(axis=1)
            # Weight of an old cause: its trials' kernel values (counts for the CRP).
            k_of_past = _kernel(times[s] - times[:s], kind, timescale, decay)
            weights = np.einsum("s,psk->pk", k_of_past, onehot[:, :s])
            weights[rows, parts[:, s - 1]] += stickiness
            new_ok = n_used < K
            weights[rows[new_ok], n_used[new_ok]] = alpha
            total = weights.sum(axis=1)
            with np.errstate(divide="ignore"):
                log_prior += np.log(weights[rows, c] / total)
    # Beta-Bernoulli marginal likelihood of every cause and feature.
    ones = np.einsum("ptk,ti->pki", onehot, (F[:t] == 1).astype(float))
    zeros = np.einsum("ptk,ti->pki", onehot, (F[:t] == 0).astype(float))
    log_lik = (betaln(ones + a, zeros + b) - betaln(a, b)).sum(axis=(1, 2))
    return log_prior + log_lik


def exact_filter(
    features,
    *,
    alpha=0.1,
    concentration=1.0,
    a=None,
    b=None,
    max_causes=None,
    stickiness=0.0,
    temporal_kernel=None,
    timescale=1.0,
    decay=1.0,
    times=None,
) -> CRPFilterResult:
    """Exact V_t, cause posterior and marginal likelihood for at most 10 trials.

    Same model and arguments as :func:`~pmctx.conditioning.particle_filter`. The returned
    result's ``n_causes`` has one column, the posterior mean number of causes after each
    trial; ``assignments`` lists every partition of all trials, with posterior probabilities
    in ``settings["partition_probs"]``.

    Parameters
    ----------
    features : Design or array_like (trial, feature)
        The trials (US first).
    alpha : float, default 0.1
        CRP concentration.
    concentration : float, default 1.0
        Beta pseudo-count used when ``a`` and ``b`` are not given.
    a, b : float, optional
        Beta pseudo-counts of feature presence and absence.
    max_causes : int, optional
        Largest number of causes.
    stickiness : float, default 0.0
        Extra prior weight of the previous trial's cause.
    temporal_kernel : {None, "power", "exponential"}, optional
        Temporal prior (None: the exchangeable CRP).
    timescale, decay : float, default 1.0
        Temporal-prior settings.
    times : array_like, optional
        Trial time stamps.

    Returns
    -------
    CRPFilterResult
        Exact ``V``, cause posterior and log marginal likelihood.
    """
    F, names = as_feature_matrix(features)
    T = F.shape[0]
    if T > MAX_EXACT_TRIALS:
        raise ValueError(
            f"exact_filter enumerates all partitions and handles at most {MAX_EXACT_TRIALS} "
            f"trials, got {T}. Use particle_filter for longer sequences."
        )
    alpha, a, b, n_slots, stickiness = _common_checks(
        alpha, concentration, max_causes, stickiness, T, a, b
    )
    kernel = temporal_settings(temporal_kernel, timescale, decay)
    stamps = trial_times(features, times, T)
    kw = dict(alpha=alpha, a=a, b=b, stickiness=stickiness, n_slots=n_slots, kernel=kernel)
    V = np.empty(T)
    V_weighted = np.empty(T)
    log_pred = np.empty(T)
    post = np.zeros((T, n_slots))
    prev_log_z = 0.0
    mean_blocks = np.empty((T, 1))
    for t in range(1, T + 1):
        parts = enumerate_partitions(t, n_slots)
        kw["times"] = stamps[:t]
        full = log_joint_partitions(parts, F[:t], **kw)
        masked = F[:t].copy()
        masked[t - 1, 0] = -1
        no_us = log_joint_partitions(parts, masked, **kw)
        with_us = masked.copy()
        with_us[t - 1, 0] = 1
        us_on = log_joint_partitions(parts, with_us, **kw)
        V_weighted[t - 1] = np.exp(logsumexp(us_on) - logsumexp(no_us))
        # Eq. 6 averages each history's prediction with its posterior weight given F_1:t-1
        # only: group the extensions c_t of each history c_1:t-1.
        parents, parent_of = np.unique(parts[:, :-1], axis=0, return_inverse=True)
        if t > 1:
            parent_log = log_joint_partitions(
                parents, F[: t - 1], **{**kw, "times": stamps[: t - 1]}
            )
        else:
            parent_log = np.zeros(1)
        parent_prob = np.exp(parent_log - logsumexp(parent_log))
        parent_norm = np.full(len(parents), -np.inf)
        np.logaddexp.at(parent_norm, parent_of, no_us)
        r = np.exp(no_us - parent_norm[parent_of])
        p_us = np.exp(us_on - no_us)
        V[t - 1] = np.sum(parent_prob[parent_of] * r * p_us)
        log_z = logsumexp(full)
        log_pred[t - 1] = log_z - prev_log_z
        prev_log_z = log_z
        probs = np.exp(full - log_z)
        post[t - 1] = np.bincount(parts[:, -1], weights=probs, minlength=n_slots)[:n_slots]
        mean_blocks[t - 1] = probs @ (parts.max(axis=1) + 1)
    used = int(parts.max()) + 1
    settings = dict(
        alpha=alpha,
        a=a,
        b=b,
        max_causes=max_causes,
        temporal_kernel=temporal_kernel,
        stickiness=stickiness,
        method="exact",
        partition_probs=probs,
    )
    return CRPFilterResult(
        V, post[:, :used], mean_blocks, log_pred, parts, names, settings, V_weighted
    )


def single_particle_paths(
    features, *, alpha=0.1, a=1.0, b=None, stickiness=0.0, max_causes=None
) -> tuple[np.ndarray, np.ndarray]:
    """Every run of the one-particle filter: its probability and its ``V``, by enumeration.

    With one particle the filter's randomness is the cause drawn on each trial from its
    posterior given the particle's history and all of the trial's observed features; the
    run is the path ``c_1..c_{T-1}`` (the last trial's cause does not enter ``V``). This lists
    every path with ``log P(path)`` (a product of those posteriors, from batch joints) and the
    ``V_t`` the filter reports along it, so ``E_u f(V)`` is an exact sum (at most 10 trials).

    Parameters
    ----------
    features : Design or array_like (trial, feature)
        The trials (at most 10).
    alpha : float, default 0.1
        CRP concentration.
    a : float, default 1.0
        Beta pseudo-count of feature presence.
    b : float, optional
        Beta pseudo-count of absence (default ``a``).
    stickiness : float, default 0.0
        Extra prior weight of the previous trial's cause.
    max_causes : int, optional
        Largest number of causes.

    Returns
    -------
    log_prob : ndarray (n_paths,)
    V : ndarray (n_paths, n_trials)

    Examples
    --------
    >>> import numpy as np
    >>> F = np.array([[1, 1, 1], [1, 1, 1], [np.nan, 1, 0]])
    >>> log_p, V = single_particle_paths(F, alpha=1.0)
    >>> round(float(np.exp(log_p).sum()), 12), V.shape
    (1.0, (2, 3))
    """
    F, _ = as_feature_matrix(features)
    T = F.shape[0]
    if T > MAX_EXACT_TRIALS:
        raise ValueError(f"at most {MAX_EXACT_TRIALS} trials can be enumerated, got {T}.")
    alpha, a, b, n_slots, stickiness = _common_checks(alpha, 1.0, max_causes, stickiness, T, a, b)
    kw = dict(alpha=alpha, a=a, b=b, stickiness=stickiness, n_slots=n_slots)
    log_prob = {(): 0.0}  # prefix (causes of the trials so far) -> log P(prefix)
    v_of = {}  # (prefix) -> V of the next trial
    for t in range(T):
        parts = enumerate_partitions(t + 1, n_slots)
        masked = F[: t + 1].copy()
        masked[t, 0] = -1
        no_us = log_joint_partitions(parts, masked, **kw)
        with_us = masked.copy()
        with_us[t, 0] = 1
        us_on = log_joint_partitions(parts, with_us, **kw)
        full = log_joint_partitions(parts, F[: t + 1], **kw)
        groups = {}
        for row, p in enumerate(parts):
            groups.setdefault(tuple(p[:-1]), []).append(row)
        nxt = {}
        for prefix, rows in groups.items():
            v_of[prefix] = float(np.exp(logsumexp(us_on[rows]) - logsumexp(no_us[rows])))
            if t < T - 1:
                norm = logsumexp(full[rows])
                for row in rows:
                    nxt[tuple(parts[row])] = log_prob[prefix] + full[row] - norm
        if t < T - 1:
            log_prob = nxt
    paths = list(log_prob)
    V = np.array([[v_of[p[:t]] for t in range(T)] for p in paths])
    return np.array([log_prob[p] for p in paths]), V


def log_marginal_assignments(z, features, *, alpha, max_causes, concentration=1.0) -> float:
    """log P(z) + log P(F | z) of the truncated model, weights and theta integrated out.

    The finite-K (Dirichlet(alpha/K) weights) mixture that
    :func:`pmctx.models.crp_conditioning.build_model` declares, in closed form: the exact
    target of its collapsed Gibbs step (for checks).

    Parameters
    ----------
    z : array_like of int
        Cause of every trial.
    features : array_like (trial, feature)
        0/1 features, NaN where unobserved.
    alpha : float
        CRP concentration.
    max_causes : int
        Truncation.
    concentration : float, default 1.0
        Beta(eta, eta) prior of the feature probabilities.

    Returns
    -------
    float
        The log probability.

    Examples
    --------
    >>> round(log_marginal_assignments([0, 0], [[1, 1], [1, 1]], alpha=1.0, max_causes=2), 4)
    -3.1781
    """
    F, _ = as_feature_matrix(features)
    z = np.asarray(z, dtype=np.int64)
    K = int(max_causes)
    a = alpha / K
    n_k = np.bincount(z, minlength=K)
    log_prior = gammaln(alpha) - gammaln(alpha + z.size) + np.sum(gammaln(n_k + a) - gammaln(a))
    onehot = (z[:, None] == np.arange(K)).astype(float)
    ones = onehot.T @ (F == 1).astype(float)
    zeros = onehot.T @ (F == 0).astype(float)
    eta = concentration
    log_lik = np.sum(betaln(ones + eta, zeros + eta) - betaln(eta, eta))
    return float(log_prior + log_lik)
