"""Label-invariant diagnostics and feature alignment for IBP posteriors.

Feature columns are exchangeable, so their labels switch between chains (and, through the
new-feature move, within chains). R-hat and ESS are meaningful for ``n_active``, ``loglik``
and the reconstructions ``F_hat = Z A`` and ``X_prob``; to look at the bases themselves,
:func:`align_features` permutes every draw's columns onto a reference by Hungarian matching.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from scipy.optimize import linear_sum_assignment
from scipy.special import logsumexp

from pmctx.ibp.kernels import _ONE, _ZERO, _set_z, new_feature_log_posterior, noisy_or_tables
from pmctx.ibp.sampler import IBPHyper
from pmctx.ibp.sweep import row_caches

__all__ = [
    "align_features",
    "match_features",
    "recovery_report",
    "singleton_log_odds",
]

LABEL_INVARIANT = ("n_active", "loglik")


def match_features(Z, Z_ref, *, A=None, A_ref=None, weight_a: float = 1.0) -> np.ndarray:
    """Permutation ``perm`` so that column ``perm[j]`` of ``Z`` matches column ``j`` of ``Z_ref``.

    The cost is the Hamming distance between ownership columns, plus (when given) the
    squared distance between force rows times ``weight_a``. ``Z`` may have more columns.

    Parameters
    ----------
    Z : array_like (N, K)
        Ownership to align.
    Z_ref : array_like (N, K_ref)
        Reference ownership (K_ref <= K).
    A, A_ref : array_like, optional
        Force bases of both, to include their distance in the cost.
    weight_a : float, default 1.0
        Weight of the force-basis distance.

    Returns
    -------
    numpy.ndarray (K_ref,)
        The column permutation.

    Examples
    --------
    >>> Z_ref = np.array([[1, 0], [0, 1], [1, 1]])
    >>> match_features(Z_ref[:, ::-1], Z_ref)
    array([1, 0])
    """
    Z, Z_ref = np.asarray(Z), np.asarray(Z_ref)
    cost = np.abs(Z_ref[:, :, None] - Z[:, None, :]).sum(axis=0).astype(np.float64)
    if A is not None and A_ref is not None:
        diff = np.asarray(A_ref)[:, None, :] - np.asarray(A)[None, :, :]
        cost += weight_a * (diff**2).sum(axis=-1)
    rows, cols = linear_sum_assignment(cost)
    perm = np.empty(Z_ref.shape[1], dtype=np.int64)
    perm[rows] = cols
    return perm


def align_features(idata, *, reference=None) -> dict:
    """Posterior ``Z``, ``A``, ``Y`` with every draw's columns matched to a reference.

    Parameters
    ----------
    idata : xarray.DataTree
        From :func:`pmctx.models.ibp.sample`.
    reference : ndarray (N, K_ref), optional
        Reference ownership matrix (e.g. the truth); default: the last draw of chain 0,
        restricted to its active columns.

    Returns
    -------
    dict
        ``"Z"`` (chain, draw, N, K_ref) and, where present, ``"A"`` (chain, draw, K_ref, D)
        and ``"Y"`` (chain, draw, K_ref, T).
    """
    post = idata.posterior
    Z = post["Z"].values
    if reference is None:
        last = Z[0, -1]
        reference = last[:, last.any(axis=0)]
    reference = np.asarray(reference)
    out = {"Z": np.empty((*Z.shape[:2], *reference.shape), dtype=Z.dtype)}
    others = {k: post[k].values for k in ("A", "Y") if k in post}
    for k, v in others.items():
        out[k] = np.empty((*v.shape[:2], reference.shape[1], v.shape[-1]), dtype=v.dtype)
    for c in range(Z.shape[0]):
        for d in range(Z.shape[1]):
            perm = match_features(Z[c, d], reference)
            out["Z"][c, d] = Z[c, d][:, perm]
            for k, v in others.items():
                out[k][c, d] = v[c, d][perm]
    return out


def recovery_report(idata, Z_true, F_true_mean=None, X_true_prob=None) -> dict:
    """Posterior accuracy against a known truth (synthetic data).

    Returns the posterior probability of the true number of features, the posterior mode
    of ``n_active``, the RMSE of the posterior-mean ``F_hat`` to ``Z A`` and the mean
    absolute error of the posterior-mean ``X_prob`` to the true cue probabilities.

    Parameters
    ----------
    idata : xarray.DataTree
        An IBP fit.
    Z_true : array_like (N, K)
        True ownership.
    F_true_mean : array_like (N, D), optional
        True force means ``Z A``.
    X_true_prob : array_like (N, T), optional
        True cue probabilities.

    Returns
    -------
    dict
        ``k_true``, ``p_k_true``, ``k_mode`` and, when given, ``F_rmse`` and ``X_mae``.
    """
    k_true = int(np.asarray(Z_true).any(axis=0).sum())
    n_active = idata.posterior["n_active"].values.ravel()
    counts = np.bincount(n_active)
    report = {
        "k_true": k_true,
        "p_k_true": float(np.mean(n_active == k_true)),
        "k_mode": int(np.argmax(counts)),
    }
    f_hat, x_prob = _posterior_mean(idata, "F_hat"), _posterior_mean(idata, "X_prob")
    if F_true_mean is not None and f_hat is not None:
        report["F_rmse"] = float(np.sqrt(np.mean((f_hat - F_true_mean) ** 2)))
    if X_true_prob is not None and x_prob is not None:
        report["X_prob_mae"] = float(np.mean(np.abs(x_prob - X_true_prob)))
    return report


def _posterior_mean(idata, name):
    """Posterior mean of ``name`` from its draws or, for big fits, its running moments."""
    if name in idata.posterior:
        return idata.posterior[name].mean(("chain", "draw")).values
    if "posterior_moments" in idata.children and name in idata.posterior_moments:
        return idata.posterior_moments[name].sel(moment="mean").mean("chain").values
    return None


@numba.njit(cache=True)
def _singleton_log_weights(Z, A, Y, F, X, hyper):
    """Per row, ``log w[i, k]`` of owning ``k = 0..K_max`` singletons (``-inf`` past ``J_i``)."""
    n, k_max = Z.shape
    ll0, _ = noisy_or_tables(hyper[4], hyper[5], k_max)
    R, C, m = row_caches(Z, A, Y, F)
    out = np.full((n, k_max + 1), -np.inf)
    own = np.empty(k_max, dtype=np.int64)
    for i in range(n):
        n_free = _ZERO
        n_own = 0
        for k in range(k_max):
            if m[k] - Z[i, k] == 0:
                n_free += 1
                if Z[i, k] == 1:
                    own[n_own] = k
                    n_own += 1
                    _set_z(i, k, _ZERO, Z, A, Y, R, C, m)
        if n_free > 0:
            # A loop, not a slice assignment: see pmctx.ibp.sweep._copy_rows.
            log_posterior = new_feature_log_posterior(i, n_free, X, R, C, hyper, ll0)
            for count in range(n_free + 1):
                out[i, count] = log_posterior[count]
        else:
            out[i, 0] = 0.0
        for j in range(n_own):
            _set_z(i, own[j], _ONE, Z, A, Y, R, C, m)
    return out


def singleton_log_odds(Z, A, Y, F, X, hyper, *, K_max=None) -> dict:
    """Exact log odds, per row, of owning one singleton feature versus none.

    For each row ``i`` the other rows' ownership and the shared features' ``A`` and ``Y`` are
    held at the given state; the row's own singletons (columns no other row uses) are
    removed, and the weight of the row owning ``k`` of the ``J_i`` free columns, their ``A``
    and ``Y`` integrated out, is the marginal the sampler's new-feature update draws from
    (:func:`pmctx.ibp.kernels.new_feature_log_posterior`, seed eq. 10-13 with the finite
    model's Binomial(J_i, (alpha/K_max) / (N + alpha/K_max)) prior). Treating the rows as
    independent given the shared features, ``1 - prod_i P(K_new,i = 0)`` is the implied
    probability that the posterior holds more active features than the state's shared ones
    (``n_active > K`` at the truth).

    Parameters
    ----------
    Z : array_like (N, K)
        Ownership (e.g. the truth); padded with empty columns up to ``K_max``.
    A : array_like (K, D)
        Force bases (``D`` may be 0).
    Y : array_like (K, T)
        Cue images (``T`` may be 0).
    F : array_like (N, D)
        Forces.
    X : array_like (N, T)
        Cues.
    hyper : IBPHyper or mapping
        Hyperparameters (``alpha, sigma_n, sigma_a`` (or ``sigma_A``), ``phi, lam, eps``).
    K_max : int, optional
        Truncation level; default ``Z.shape[1]``.

    Returns
    -------
    dict
        ``log_odds`` (N,): ``log P(K_new,i = 1) / P(K_new,i = 0)``; ``log_p_none`` (N,):
        ``log P(K_new,i = 0)``; ``p_extra``: implied ``P(n_active > K)``; ``expected_extra``:
        ``sum_i E[K_new,i]``.

    Examples
    --------
    >>> from pmctx.ibp.data import visuomotor_data
    >>> data = visuomotor_data(50, random_seed=0)
    >>> hyper = dict(alpha=1.0, sigma_n=0.3, sigma_a=1.0, phi=1 / 6, lam=0.9, eps=0.05)
    >>> out = singleton_log_odds(data.Z, data.A, data.Y, data.F, data.X, hyper, K_max=10)
    >>> out["log_odds"].shape, 0.0 < out["p_extra"] < 1.0
    ((50,), True)
    """
    Z = np.asarray(Z, dtype=np.int64)
    n, k = Z.shape
    k_max = k if K_max is None else int(K_max)
    if k_max < k:
        raise ValueError(f"K_max must be at least Z.shape[1]={k}; got {K_max}.")
    if not isinstance(hyper, IBPHyper):
        hyper = IBPHyper(**{("sigma_a" if key == "sigma_A" else key): float(v)
                            for key, v in dict(hyper).items()})  # fmt: skip
    A = np.asarray(A, dtype=np.float64).reshape(k, -1)
    Y = np.asarray(Y, dtype=np.int64).reshape(k, -1)
    Zp = np.zeros((n, k_max), dtype=np.int64)
    Zp[:, :k] = Z
    Ap = np.zeros((k_max, A.shape[1]))
    Ap[:k] = A
    Yp = np.zeros((k_max, Y.shape[1]), dtype=np.int64)
    Yp[:k] = Y
    F = np.ascontiguousarray(np.asarray(F, dtype=np.float64).reshape(n, -1))
    X = np.ascontiguousarray(np.asarray(X, dtype=np.int64).reshape(n, -1))
    logw = _singleton_log_weights(Zp, Ap, Yp, F, X, hyper.as_array(k_max))
    log_norm = logsumexp(logw, axis=1)
    log_p_none = logw[:, 0] - log_norm
    with np.errstate(invalid="ignore"):
        log_odds = np.where(np.isfinite(logw[:, 1]), logw[:, 1] - logw[:, 0], -np.inf)
    probs = np.exp(logw - log_norm[:, None])
    return {
        "log_odds": log_odds,
        "log_p_none": log_p_none,
        "p_extra": float(-math.expm1(log_p_none.sum())),
        "expected_extra": float((probs * np.arange(k_max + 1)).sum()),
    }
