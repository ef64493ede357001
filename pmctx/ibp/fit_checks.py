"""The warning an IBP fit gives when its truncation was full (sizes: :mod:`pmctx.ibp.storage`).

Examples
--------
>>> import arviz as az
>>> idata = az.from_dict({"sample_stats": {"truncation_hit": np.zeros((1, 10), bool)}})
>>> warn_if_truncated(idata, K_max=8)
"""

from __future__ import annotations

import warnings

import numpy as np

from pmctx.exceptions import TruncationWarning

__all__ = ["warn_if_truncated"]


def warn_if_truncated(idata, *, K_max: int) -> None:
    """Warn :class:`pmctx.TruncationWarning` when the truncation was full in over 1% of sweeps.

    Parameters
    ----------
    idata : xarray.DataTree
        A fit with ``sample_stats.truncation_hit``.
    K_max : int
        The truncation level, for the message.

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
    if hit.mean() > 0.01:
        warnings.warn(
            f"The truncation at K_max={K_max} was full after "
            f"{hit.mean():.0%} of the sweeps, so the sampler could not add the features the "
            "posterior asked for; rerun with a larger K_max (pmctx fit: --set K_max=20).",
            TruncationWarning,
            stacklevel=3,
        )
