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
from scipy.special import betaln, logsumexp

from pmctx.conditioning.design import as_feature_matrix
from pmctx.conditioning.particle_filter import CRPFilterResult, _common_checks

__all__ = ["enumerate_partitions", "exact_filter", "log_joint_partitions"]

MAX_EXACT_TRIALS = 10


def enumerate_partitions(n: int, max_blocks: int | None = None) -> np.ndarray:
    """All set partitions of ``n`` items as restricted growth strings, shape (B_n, n)."""
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


def log_joint_partitions(parts, F, *, alpha, eta, stickiness=0.0, n_slots=None) -> np.ndarray:
    """log P(c) + log P(F | c) for each partition row of ``parts`` (F coded with -1 missing)."""
    parts = np.asarray(parts)
    n_parts, t = parts.shape
    K = t if n_slots is None else n_slots
    # CRP prior, sequentially (the sticky/capped prior has no product form).
    log_prior = np.zeros(n_parts)
    n_k = np.zeros((n_parts, t))
    rows = np.arange(n_parts)
    for s in range(t):
        c = parts[:, s]
        if s > 0:
            n_used = (n_k > 0).sum(axis=1)
            weights = n_k.copy()
            weights[rows, parts[:, s - 1]] += stickiness
            new_ok = n_used < K
            weights[rows[new_ok], n_used[new_ok]] = alpha
            total = weights.sum(axis=1)
            with np.errstate(divide="ignore"):
                log_prior += np.log(weights[rows, c] / total)
        n_k[rows, c] += 1
    # Beta-Bernoulli marginal likelihood of every cause and feature.
    onehot = (parts[:, :, None] == np.arange(t)[None, None, :]).astype(float)
    ones = np.einsum("ptk,ti->pki", onehot, (F[:t] == 1).astype(float))
    zeros = np.einsum("ptk,ti->pki", onehot, (F[:t] == 0).astype(float))
    log_lik = (betaln(ones + eta, zeros + eta) - betaln(eta, eta)).sum(axis=(1, 2))
    return log_prior + log_lik


def exact_filter(
    features, *, alpha=0.1, concentration=1.0, max_causes=None, stickiness=0.0
) -> CRPFilterResult:
    """Exact V_t, cause posterior and marginal likelihood for at most 10 trials.

    Same model and arguments as :func:`~pmctx.conditioning.particle_filter`. The returned
    result's ``n_causes`` has one column, the posterior mean number of causes after each
    trial; ``assignments`` lists every partition of all trials, with posterior probabilities
    in ``settings["partition_probs"]``.
    """
    F, names = as_feature_matrix(features)
    T = F.shape[0]
    if T > MAX_EXACT_TRIALS:
        raise ValueError(
            f"exact_filter enumerates all partitions and handles at most {MAX_EXACT_TRIALS} "
            f"trials, got {T}. Use particle_filter for longer sequences."
        )
    alpha, eta, n_slots, stickiness = _common_checks(
        alpha, concentration, max_causes, stickiness, T
    )
    kw = dict(alpha=alpha, eta=eta, stickiness=stickiness, n_slots=n_slots)
    V = np.empty(T)
    V_weighted = np.empty(T)
    log_pred = np.empty(T)
    post = np.zeros((T, n_slots))
    prev_log_z = 0.0
    mean_blocks = np.empty((T, 1))
    for t in range(1, T + 1):
        parts = enumerate_partitions(t, n_slots)
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
            parent_log = log_joint_partitions(parents, F[: t - 1], **kw)
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
        concentration=eta,
        max_causes=max_causes,
        stickiness=stickiness,
        method="exact",
        partition_probs=probs,
    )
    return CRPFilterResult(
        V, post[:, :used], mean_blocks, log_pred, parts, names, settings, V_weighted
    )
