"""What an IBP fit says beyond R-hat: a full truncation, and chains that disagree on the
number of shared features (sizes: :mod:`pmctx.ibp.storage`).

Examples
--------
>>> import arviz as az
>>> idata = az.from_dict({"sample_stats": {"truncation_hit": np.zeros((1, 10), bool)}})
>>> warn_if_truncated(idata, K_max=8)
"""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np

from pmctx.exceptions import TruncationWarning

__all__ = ["shared_feature_modes", "warn_if_truncated", "with_disagreement_advice"]


def warn_if_truncated(idata, *, K_max: int, sweeps_per_draw: int = 1) -> None:
    """Warn :class:`pmctx.TruncationWarning` when the truncation was full in over 1% of sweeps.

    Parameters
    ----------
    idata : xarray.DataTree
        A fit with ``sample_stats.truncation_hit`` (per draw: whether any of its sweeps found
        the truncation full).
    K_max : int
        The truncation level, for the message.
    sweeps_per_draw : int, default 1
        Sweeps behind each draw (``IBPGibbs.sweeps``): a share ``f`` of draws with a hit is
        ``1 - (1 - f) ** (1 / sweeps_per_draw)`` of the sweeps.

    Returns
    -------
    None

    Examples
    --------
    >>> import arviz as az
    >>> idata = az.from_dict({"sample_stats": {"truncation_hit": np.ones((1, 10), bool)}})
    >>> warn_if_truncated(idata, K_max=8)  # doctest: +SKIP
    """
    hit = np.asarray(idata.sample_stats["truncation_hit"].values)
    share = 1.0 - (1.0 - hit.mean()) ** (1.0 / max(int(sweeps_per_draw), 1))
    if share > 0.01:
        warnings.warn(
            f"The truncation at K_max={K_max} was full after "
            f"{share:.0%} of the sweeps, so the sampler could not add the features the "
            "posterior asked for; rerun with a larger K_max (pmctx fit: --set K_max=20).",
            TruncationWarning,
            stacklevel=3,
        )


def shared_feature_modes(idata) -> list[int]:
    """Each chain's most frequent number of shared features (``n_active - n_singletons``).

    Parameters
    ----------
    idata : xarray.DataTree
        A fit with ``sample_stats`` ``n_active`` and ``n_singletons``.

    Returns
    -------
    list of int
        One mode per chain.

    Examples
    --------
    >>> import arviz as az
    >>> stats = {"n_active": np.array([[4, 4, 5], [3, 3, 3]]), "n_singletons": np.zeros((2, 3))}
    >>> shared_feature_modes(az.from_dict({"sample_stats": stats}))
    [4, 3]
    """
    stats = idata.sample_stats
    shared = np.asarray(stats["n_active"].values) - np.asarray(stats["n_singletons"].values)
    return [int(np.bincount(row.astype(np.int64)).argmax()) for row in shared]


def with_disagreement_advice(spec, idata):
    """``spec`` whose convergence advice first says that the chains disagree on the number of
    shared features, when their modes differ (else ``spec`` itself): a fit that warns then
    says its chains sit in different modes, not only that an R-hat is high.

    Parameters
    ----------
    spec : pmctx.registry.ModelSpec
        The IBP's spec.
    idata : xarray.DataTree
        The fit.

    Returns
    -------
    pmctx.registry.ModelSpec
    """
    modes = shared_feature_modes(idata)
    if len(set(modes)) < 2:
        return spec
    said = (
        "The chains disagree on the number of shared features (owned by two or more trials; "
        f"most frequent per chain: {', '.join(map(str, modes))}): they sit in different "
        "modes, so read no feature count from this fit. "
    )
    return dataclasses.replace(spec, advice=said + spec.advice)
