"""Warnings an IBP fit gives: draws too large to keep in memory, a truncation that was full.

Examples
--------
>>> import arviz as az
>>> idata = az.from_dict(sample_stats={"truncation_hit": np.zeros((1, 10), bool)})
>>> warn_if_truncated(idata, K_max=8)
"""

from __future__ import annotations

import warnings

import numpy as np

from pmctx.exceptions import PmctxWarning, TruncationWarning

__all__ = ["stored_bytes", "warn_if_large", "warn_if_truncated"]


def stored_bytes(model, draws: int, chains: int, *, log_likelihood, posterior_predictive) -> int:
    """Bytes that ``chains x draws`` draws of an IBP fit keep: every per-trial quantity.

    Parameters
    ----------
    model : pm.Model
        From :func:`pmctx.models.ibp.build_model`.
    draws, chains : int
        Draws per chain and chains.
    log_likelihood, posterior_predictive : bool
        Whether the per-trial log-likelihood and the redrawn observations are kept.

    Returns
    -------
    int
        ``Z``, the reconstructions, the log-likelihood and the redrawn observations in 8-byte
        values.

    Examples
    --------
    >>> from pmctx.models.ibp import build_model
    >>> model = build_model(X=np.zeros((10, 4)), K_max=3)
    >>> stored_bytes(model, 100, 2, log_likelihood=False, posterior_predictive=False)
    112000
    """
    dims = {name: int(length.eval()) for name, length in model.dim_lengths.items()}
    per_trial = dims["feature"]
    for name in ("F_hat", "X_prob", "F_offset"):
        if name in model.named_vars:
            per_trial += dims[model.named_vars_to_dims[name][1]]
    observed = [dims[model.named_vars_to_dims[v.name][1]] for v in model.observed_RVs]
    per_trial += len(observed) * bool(log_likelihood) + sum(observed) * bool(posterior_predictive)
    return 8 * dims["trial"] * per_trial * draws * chains


def warn_if_large(model, draws: int, chains: int, *, limit: int, **kept) -> None:
    """Warn :class:`pmctx.PmctxWarning` when the draws would keep more than ``limit`` bytes.

    Parameters
    ----------
    model : pm.Model
        From :func:`pmctx.models.ibp.build_model`.
    draws, chains : int
        Draws per chain and chains.
    limit : int
        Bytes above which to warn.
    **kept
        ``log_likelihood`` and ``posterior_predictive``, as in :func:`stored_bytes`.

    Returns
    -------
    None

    Examples
    --------
    >>> from pmctx.models.ibp import build_model
    >>> model = build_model(X=np.zeros((10, 4)), K_max=3)
    >>> warn_if_large(model, 100, 2, limit=2**30, log_likelihood=True, posterior_predictive=True)
    """
    stored = stored_bytes(model, draws, chains, **kept)
    if stored > limit:
        n_trials = int(model.dim_lengths["trial"].eval())
        warnings.warn(
            f"Keeping {chains} x {draws} draws of this fit needs about {stored / 2**30:.1f} GiB "
            f"({n_trials} trials: Z, the reconstructions and the per-trial groups are stored per "
            "draw). Pass reconstructions=False, posterior_predictive=False and "
            "log_likelihood=False, or fewer draws, to keep it smaller.",
            PmctxWarning,
            stacklevel=3,
        )


def warn_if_truncated(idata, *, K_max: int) -> None:
    """Warn :class:`pmctx.TruncationWarning` when the truncation was full in over 1% of sweeps.

    Parameters
    ----------
    idata : arviz.InferenceData
        A fit with ``sample_stats.truncation_hit``.
    K_max : int
        The truncation level, for the message.

    Returns
    -------
    None

    Examples
    --------
    >>> import arviz as az
    >>> idata = az.from_dict(sample_stats={"truncation_hit": np.ones((1, 10), bool)})
    >>> warn_if_truncated(idata, K_max=8)  # doctest: +SKIP
    """
    hit = np.asarray(idata.sample_stats["truncation_hit"].values)
    if hit.mean() > 0.01:
        warnings.warn(
            f"The truncation at K_max={K_max} was full after "
            f"{hit.mean():.0%} of the sweeps, so the sampler could not add the features the "
            "posterior asked for; rerun with a larger K_max (pmctx fit: --set K_max=20).",
            TruncationWarning,
            stacklevel=3,
        )
