"""Per-trial log-likelihood of the latent-cause model with the trial's cause summed out.

``pm.sample`` stores ``log p(f_ti | z_t, theta)`` per observed entry, given each trial's
sampled cause ``z_t``. Leaving a whole *trial* out changes the posterior of its ``z_t``
completely, so PSIS-LOO over trials on that conditional fails (most Pareto k above 0.7 on
the shipped ABA renewal design: ``docs/benchmarks.md``). The trial-level quantity LOO needs is

.. math:: \\log p(f_t | w, \\theta) = \\log \\sum_k w_k \\prod_{i\\,observed}
          \\theta_{ki}^{f_{ti}} (1 - \\theta_{ki})^{1 - f_{ti}},

exact (a sum over the ``max_causes`` causes), whose Pareto k stay below 0.7 on that design.

Examples
--------
>>> import numpy as np, arviz as az
>>> post = az.from_dict({"posterior": {"weights": np.full((1, 2, 2), 0.5),
...                                "theta": np.full((1, 2, 2, 3), 0.5)}}).posterior
>>> ll = trial_log_likelihood(post, np.array([[1, 0, -1], [1, 1, 1]]))
>>> np.round(ll.values[0, 0], 4).tolist()
[-1.3863, -2.0794]
"""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

__all__ = ["add_integrated_log_likelihood", "trial_log_likelihood"]


def trial_log_likelihood(posterior, features):
    """``log p(f_t | weights, theta)`` per draw and trial, as a (chain, draw, trial) DataArray.

    Parameters
    ----------
    posterior : xarray.Dataset
        With ``weights`` (chain, draw, cause) and ``theta`` (chain, draw, cause, feature).
    features : array (n_trials, n_features)
        0/1 with -1 or NaN for missing entries (left out of the product).

    Returns
    -------
    xarray.DataArray
        Dims ``(chain, draw, trial)``.
    """
    import xarray as xr

    F = np.asarray(features, dtype=np.float64)
    observed = np.isfinite(F) & (F >= 0)
    ones = (np.where(observed, F, 0.0) == 1) & observed
    zeros = observed & ~ones
    theta = np.clip(posterior["theta"].values, 1e-300, 1.0 - 1e-16)
    log_t, log_1mt = np.log(theta), np.log1p(-theta)  # (c, d, K, I)
    # (c, d, N, K): sum over observed features of each trial under each cause.
    per_cause = np.einsum("ni,cdki->cdnk", ones, log_t) + np.einsum("ni,cdki->cdnk", zeros, log_1mt)
    with np.errstate(divide="ignore"):
        log_w = np.log(posterior["weights"].values)[:, :, None, :]
    out = logsumexp(log_w + per_cause, axis=-1)
    coords = {"chain": posterior["chain"].values, "draw": posterior["draw"].values}
    return xr.DataArray(out, dims=("chain", "draw", "trial"), coords=coords)


def _features_from_idata(idata):
    values = idata.observed_data["features"].values
    t_idx = idata.constant_data["trial_index"].values
    i_idx = idata.constant_data["feature_index"].values
    n_trials = idata.posterior.sizes["trial"]
    F = np.full((n_trials, idata.posterior.sizes["feature"]), -1.0)
    F[t_idx, i_idx] = values
    return F


def add_integrated_log_likelihood(idata, features=None):
    """Make the per-trial integrated ``trial_features`` the fit's ``log_likelihood``, in place.

    ``trial_features`` (each trial's features with its latent cause summed out) is what
    ``az.loo(idata)`` and :func:`pmctx.compare` then use to compare models over trials. The
    per-entry ``features`` given the sampled causes (what ``pm.sample`` stores) moves to the
    ``conditional_log_likelihood`` group: for diagnostics, not for LOO.
    ``features`` defaults to the ones stored in ``idata`` (``observed_data`` plus the
    ``trial_index``/``feature_index`` data of :func:`pmctx.models.crp_conditioning.build_model`).
    Returns ``idata``.

    Parameters
    ----------
    idata : xarray.DataTree
        A fit of :func:`pmctx.models.crp_conditioning.build_model`; modified in place.
    features : array_like (trial, feature), optional
        The features (default: read from ``idata``).

    Returns
    -------
    xarray.DataTree
        ``idata`` with ``log_likelihood["trial_features"]``.
    """
    from pmctx.io import LOG_LIKELIHOOD_GROUPS, set_log_likelihood_groups

    F = _features_from_idata(idata) if features is None else features
    main = trial_log_likelihood(idata.posterior, F).to_dataset(name="trial_features")
    group = LOG_LIKELIHOOD_GROUPS[2]
    conditional = idata[group] if group in idata.children else None
    if "log_likelihood" in idata.children and "trial_features" not in idata.log_likelihood:
        conditional = idata.log_likelihood  # pm.sample's, given the causes (a rerun keeps it)
        conditional.attrs["pmctx_note"] = "given each trial's sampled cause: not for LOO/WAIC"
    return set_log_likelihood_groups(idata, main, conditional=conditional)
