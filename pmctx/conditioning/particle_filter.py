"""Particle filter for the CRP latent-cause model of classical conditioning.

The model (Gershman & Niv; seed 004): trial ``t`` has a latent cause ``c_t`` drawn from a
Chinese restaurant process with concentration ``alpha`` (optionally capped at ``max_causes``
causes and with a ``stickiness`` bonus for the previous trial's cause); each cause emits
binary features independently with Beta(eta, eta) (``concentration``) priors on their
probabilities, integrated out, so the predictive probability of feature value j is
``(N_ijk + eta) / (N_ik + 2 eta)`` (eq. 4 with eta = 1).

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
...                       alpha=0.1, n_particles=200, rng=0)
>>> res.V.shape, bool(res.V[0] == 0.5)
((11,), True)
"""

from __future__ import annotations

import dataclasses

import numba
import numpy as np
import xarray as xr

from pmctx.conditioning.design import as_feature_matrix
from pmctx.validation import as_rng, check_choice, check_int, check_positive

__all__ = ["CRPFilterResult", "particle_filter"]


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
def _filter_kernel(F, alpha, eta, stickiness, n_slots, local_map, u_resample, u_cause):
    T, D = F.shape
    M = u_resample.shape[1]
    counts = np.zeros((M, n_slots, D, 2))
    n_k = np.zeros((M, n_slots))
    n_used = np.zeros(M, np.int64)
    prev = np.full(M, -1, np.int64)
    ancestor = np.zeros((T, M), np.int64)
    cause = np.zeros((T, M), np.int64)
    counts_b = np.zeros_like(counts)
    n_k_b = np.zeros_like(n_k)
    n_used_b = np.zeros_like(n_used)
    prev_b = np.zeros_like(prev)

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
    two_eta = 2.0 * eta

    for t in range(T):
        f_us = F[t, 0]
        for m in range(M):
            nu = n_used[m]
            n_o = nu + 1 if nu < n_slots else nu
            n_opt[m] = n_o
            total = 0.0
            for k in range(n_o):
                if k < nu:
                    w = n_k[m, k] + (stickiness if k == prev[m] else 0.0)
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
                        lxk += np.log((c[f] + eta) / (c[0] + c[1] + two_eta))
                lx[k] = lxk
                c = counts[m, k, 0]
                pus[k] = (c[1] + eta) / (c[0] + c[1] + two_eta)
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
                    logpost[m, k] += np.log(pus[k]) if f_us == 1 else np.log1p(-pus[k])
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
                a = j
            else:
                a = np.searchsorted(cw, u_resample[t, j] * acc, side="right")
            n_o = n_opt[a]
            if local_map:
                k_new = 0
                for k in range(1, n_o):
                    if logpost[a, k] > logpost[a, k_new]:
                        k_new = k
            else:
                u = u_cause[t, j]
                k_new = n_o - 1
                run = 0.0
                for k in range(n_o):
                    run += np.exp(logpost[a, k] - logw[a])
                    if u < run:
                        k_new = k
                        break
            nu = n_used[a]
            counts_b[j, :nu] = counts[a, :nu]
            n_k_b[j, :nu] = n_k[a, :nu]
            if nu < n_slots:
                counts_b[j, nu] = 0.0
                n_k_b[j, nu] = 0.0
            # Store the genealogy instead of copying every history: O(M) per trial.
            ancestor[t, j] = a
            cause[t, j] = k_new
            n_k_b[j, k_new] += 1.0
            for i in range(D):
                f = F[t, i]
                if f >= 0:
                    counts_b[j, k_new, i, f] += 1.0
            n_used_b[j] = nu + 1 if k_new == nu else nu
            if n_used_b[j] < n_slots:  # keep the next fresh slot empty
                counts_b[j, n_used_b[j]] = 0.0
                n_k_b[j, n_used_b[j]] = 0.0
            prev_b[j] = k_new
            n_causes[t, j] = n_used_b[j]
        counts, counts_b = counts_b, counts
        n_k, n_k_b = n_k_b, n_k
        n_used, n_used_b = n_used_b, n_used
        prev, prev_b = prev_b, prev
    assign = np.empty((M, T), np.int64)
    for j in range(M):
        idx = j
        for t in range(T - 1, -1, -1):
            assign[j, t] = cause[t, idx]
            idx = ancestor[t, idx]
    return V, V_weighted, log_pred, post, n_causes, assign


@dataclasses.dataclass(frozen=True)
class CRPFilterResult:
    """What :func:`particle_filter` (or :func:`~pmctx.conditioning.exact_filter`) returns.

    Attributes
    ----------
    V : ndarray (trial,)
        Predicted US probability before each trial, the US treated as missing (eq. 6).
    cause_posterior : ndarray (trial, cause)
        Filtering posterior P(c_t = k | F_1:t), causes labelled by order of first use.
    n_causes : ndarray (trial, particle)
        Causes in use in each particle after each trial.
    log_predictive : ndarray (trial,)
        log P(F_t | F_1:t-1); its sum is the log marginal likelihood estimate.
    assignments : ndarray (particle, trial)
        Cause of every trial in each final particle.
    feature_names : list of str
    settings : dict
    V_weighted : ndarray (trial,)
        The full Bayesian predictive P(US_t | F_1:t-1, other features of trial t), which also
        weights each particle by how well it predicts the trial's CSs and context. Eq. 6 (and
        ``V``) averages particles without that weight; the two differ when a trial's cues are
        surprising under some histories.
    """

    V: np.ndarray
    cause_posterior: np.ndarray
    n_causes: np.ndarray
    log_predictive: np.ndarray
    assignments: np.ndarray
    feature_names: list
    settings: dict
    V_weighted: np.ndarray | None = None

    @property
    def log_marginal_likelihood(self) -> float:
        return float(self.log_predictive.sum())

    @property
    def mean_n_causes(self) -> np.ndarray:
        """Mean number of causes in use after each trial."""
        return self.n_causes.mean(axis=1)

    def to_dataset(self) -> xr.Dataset:
        """The result as an ``xarray.Dataset`` with ``trial``, ``cause`` and ``particle`` dims."""
        T, K = self.cause_posterior.shape
        return xr.Dataset(
            {
                "V": ("trial", self.V),
                "V_weighted": ("trial", self.V_weighted),
                "cause_posterior": (("trial", "cause"), self.cause_posterior),
                "n_causes": (("trial", "particle"), self.n_causes),
                "log_predictive": ("trial", self.log_predictive),
                "assignments": (("particle", "trial"), self.assignments),
            },
            coords={"trial": np.arange(T), "cause": np.arange(K)},
            attrs={
                **{k: str(v) for k, v in self.settings.items()},
                "log_marginal_likelihood": self.log_marginal_likelihood,
            },
        )

    def to_inference_data(self):
        """``InferenceData``: particles as draws of one chain, filter summaries as a group."""
        from pmctx.io import to_inference_data

        idata = to_inference_data(
            {"n_causes": self.n_causes.T[None], "assignment": self.assignments[None]},
            dims={"n_causes": ["trial"], "assignment": ["trial"]},
            attrs={"inference": "crp_particle_filter"},
        )
        filt = self.to_dataset()[["V", "cause_posterior", "log_predictive"]]
        idata.add_groups({"filtering": filt})
        return idata


def _common_checks(alpha, concentration, max_causes, stickiness, n_trials):
    alpha = check_positive(alpha, "alpha", allow_zero=True)
    eta = check_positive(concentration, "concentration")
    if max_causes is None:
        n_slots = n_trials
    else:
        n_slots = min(check_int(max_causes, "max_causes", minimum=1), n_trials)
    stickiness = check_positive(stickiness, "stickiness", allow_zero=True)
    return alpha, eta, n_slots, stickiness


def particle_filter(
    features,
    *,
    alpha: float = 0.1,
    n_particles: int | None = None,
    concentration: float = 1.0,
    max_causes: int | None = None,
    stickiness: float = 0.0,
    method: str = "particle",
    rng=None,
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
        Symmetric Beta/Dirichlet concentration of each feature's probabilities (1: uniform).
    max_causes : int, optional
        Cap K on the number of causes (default: unbounded).
    stickiness : float, default 0.0
        Extra prior weight of the previous trial's cause.
    method : {"particle", "local_map"}
        ``local_map``: one particle, each trial hard-assigned to its most probable cause.
    rng : int or numpy.random.Generator, optional

    Returns
    -------
    CRPFilterResult

    Examples
    --------
    >>> import numpy as np
    >>> F = np.array([[1, 1, 1], [1, 1, 1], [0, 1, 0], [np.nan, 1, 1]])
    >>> res = particle_filter(F, alpha=0.5, n_particles=50, rng=1)
    >>> res.cause_posterior.shape[0], round(float(res.V[0]), 2)
    (4, 0.5)
    """
    F, names = as_feature_matrix(features)
    T = F.shape[0]
    alpha, eta, n_slots, stickiness = _common_checks(
        alpha, concentration, max_causes, stickiness, T
    )
    check_choice(method, "method", ["particle", "local_map"])
    if method == "local_map":
        M = 1 if n_particles is None else check_int(n_particles, "n_particles", minimum=1)
        if M != 1:
            raise ValueError(f"method='local_map' uses one particle, got n_particles={M}.")
    else:
        M = 100 if n_particles is None else check_int(n_particles, "n_particles", minimum=1)
    gen = as_rng(rng)
    u_resample = gen.random((T, M))
    u_cause = gen.random((T, M))
    V, V_weighted, log_pred, post, n_causes, assign = _filter_kernel(
        F, alpha, eta, stickiness, n_slots, method == "local_map", u_resample, u_cause
    )
    used = max(int(n_causes.max()), 1)
    settings = dict(
        alpha=alpha,
        n_particles=M,
        concentration=eta,
        max_causes=max_causes,
        stickiness=stickiness,
        method=method,
    )
    return CRPFilterResult(
        V, post[:, :used], n_causes, log_pred, assign, names, settings, V_weighted
    )
