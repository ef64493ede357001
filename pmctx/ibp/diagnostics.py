"""Label-invariant diagnostics and feature alignment for IBP posteriors.

Feature columns are exchangeable, so their labels switch between chains (and, through the
new-feature move, within chains). R-hat and ESS are meaningful for ``n_active``, ``loglik``
and the reconstructions ``F_hat = Z A`` and ``X_prob``; to look at the bases themselves,
:func:`align_features` permutes every draw's columns onto a reference by Hungarian matching.
"""

from __future__ import annotations

import arviz as az
import numpy as np
from scipy.optimize import linear_sum_assignment

__all__ = ["align_features", "label_invariant_summary", "match_features", "recovery_report"]

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
    idata : arviz.InferenceData
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


def label_invariant_summary(idata, **kwargs):
    """``az.summary`` of the label-invariant quantities (``n_active``, ``loglik``).

    Parameters
    ----------
    idata : arviz.InferenceData
        An IBP fit.
    **kwargs
        Passed to :func:`arviz.summary`.

    Returns
    -------
    pandas.DataFrame
        The summary table.
    """
    names = [v for v in LABEL_INVARIANT if v in idata.posterior]
    return az.summary(idata, var_names=names, **kwargs)


def recovery_report(idata, Z_true, F_true_mean=None, X_true_prob=None) -> dict:
    """Posterior accuracy against a known truth (synthetic data).

    Returns the posterior probability of the true number of features, the posterior mode
    of ``n_active``, the RMSE of the posterior-mean ``F_hat`` to ``Z A`` and the mean
    absolute error of the posterior-mean ``X_prob`` to the true cue probabilities.

    Parameters
    ----------
    idata : arviz.InferenceData
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
    if F_true_mean is not None and "F_hat" in idata.posterior:
        f_hat = idata.posterior["F_hat"].mean(("chain", "draw")).values
        report["F_rmse"] = float(np.sqrt(np.mean((f_hat - F_true_mean) ** 2)))
    if X_true_prob is not None and "X_prob" in idata.posterior:
        x_prob = idata.posterior["X_prob"].mean(("chain", "draw")).values
        report["X_prob_mae"] = float(np.mean(np.abs(x_prob - X_true_prob)))
    return report
