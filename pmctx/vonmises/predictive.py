"""Predictive draws of the orientation map (:mod:`pmctx.models.vonmises_map`).

Given posterior draws of the doubled angles ``o``, a new observation at a node is
``z ~ VonMises(o, kappa_obs)`` (``kappa_obs`` per draw when learned): :func:`predict` gives
orientations at missing nodes (or chosen sites), :func:`add_posterior_predictive` the
posterior predictive group of the observed nodes (for ``az.plot_ppc_dist``).
:func:`predict_series` is the same for the angular time series of
:mod:`pmctx.models.vonmises_chain` (``y ~ VonMises(x, kappa_obs * signal)``, full period).
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from pmctx.trees import set_group
from pmctx.validation import as_binary_array, as_rng
from pmctx.vonmises.maps import o_to_theta

__all__ = ["add_posterior_predictive", "predict", "predict_series"]


def predict(idata, new_data=None, *, random_seed=None) -> xr.Dataset:
    """Predictive observed orientations at missing nodes (or at the nodes ``new_data`` marks).

    For every posterior draw a new observation ``z ~ VonMises(o, kappa_obs)`` is drawn on the
    doubled angle and halved, so the result is an orientation in ``[0, pi)``.

    Parameters
    ----------
    idata : xarray.DataTree
        From :func:`pmctx.models.vonmises_map.reconstruct`.
    new_data : array_like of bool (M, N), optional
        Nodes to predict, 1 where wanted (default: the unobserved ones, ``obs_mask == 0``).
    random_seed : int or numpy.random.Generator, optional
        Seed of the predictive draws.

    Returns
    -------
    xarray.Dataset
        ``theta_pred`` (chain, draw, site) with ``row``/``col`` of each site, and
        ``attrs["period"] = pi`` on ``theta_pred``.

    Examples
    --------
    >>> import arviz as az
    >>> import xarray as xr
    >>> idata = az.from_dict({"posterior": {"o": np.zeros((1, 5, 2, 2))}})
    >>> mask = xr.DataArray([[1, 0], [1, 1]], dims=("row", "col"))
    >>> idata["constant_data"] = xr.Dataset({"obs_mask": mask, "kappa_obs": 2.0})
    >>> predict(idata, random_seed=0)["theta_pred"].shape
    (1, 5, 1)
    """
    o = idata.posterior["o"].values
    sites = idata.constant_data["obs_mask"].values == 0 if new_data is None else new_data
    sites = as_binary_array(sites, "new_data", ndim=2, shape=o.shape[2:]).astype(bool)
    rows, cols = np.nonzero(sites)
    rng = as_rng(random_seed)
    z = rng.vonmises(o[:, :, rows, cols], _kappa_obs_draws(idata))
    theta = o_to_theta(z)
    return xr.Dataset(
        {"theta_pred": (("chain", "draw", "site"), theta, {"period": np.pi})},
        coords={"row": ("site", rows), "col": ("site", cols)},
    )


def predict_series(idata, new_data=None, *, random_seed=None) -> xr.Dataset:
    """Predictive observed angles of the chain smoother at missing times (or chosen ones).

    For every posterior draw a new observation ``y ~ VonMises(x, kappa_obs * signal)`` is
    drawn (``kappa_obs`` per draw when learned), wrapped to ``[-pi, pi)``.

    Parameters
    ----------
    idata : xarray.DataTree
        From :func:`pmctx.models.vonmises_chain.smooth`.
    new_data : array_like of bool (T,), optional
        Times to predict, 1 where wanted (default: the unobserved ones, ``obs_mask == 0``).
    random_seed : int or numpy.random.Generator, optional
        Seed of the predictive draws.

    Returns
    -------
    xarray.Dataset
        ``y_pred`` (chain, draw, time) over the chosen times, ``attrs["period"] = 2 pi``.

    Examples
    --------
    >>> import arviz as az
    >>> import xarray as xr
    >>> idata = az.from_dict({"posterior": {"x": np.zeros((1, 5, 3))}}, dims={"x": ["time"]})
    >>> data = {"obs_mask": ("time", [1, 0, 1]), "signal": ("time", np.ones(3)),
    ...         "kappa_obs": 2.0}
    >>> idata["constant_data"] = xr.Dataset(data)
    >>> predict_series(idata, random_seed=0)["y_pred"].shape
    (1, 5, 1)
    """
    x = idata.posterior["x"].values
    data = idata.constant_data
    times = data["obs_mask"].values == 0 if new_data is None else new_data
    times = as_binary_array(times, "new_data", ndim=1, shape=x.shape[2:]).astype(bool)
    (selected,) = np.nonzero(times)
    kappa = _kappa_obs_draws(idata) * data["signal"].values[selected]
    y = as_rng(random_seed).vonmises(x[:, :, selected], kappa)
    return xr.Dataset(
        {"y_pred": (("chain", "draw", "time"), y, {"period": 2.0 * np.pi})},
        coords={"time": selected},
    )


def add_posterior_predictive(idata, random_seed=None) -> None:
    """Add the ``posterior_predictive`` group: ``z ~ VonMises(o, kappa_obs)`` at the observed
    nodes, per posterior draw.

    Drawn directly rather than by ``pm.sample_posterior_predictive``, which warns that the
    MRF potential is ignored: ``z`` depends on ``o`` alone, so nothing is lost.

    Parameters
    ----------
    idata : xarray.DataTree
        A fit from :func:`pmctx.models.vonmises_map.reconstruct` (posterior ``o``, constant
        data ``obs_mask`` and ``kappa_obs`` unless learned, observed data ``z``); changed in
        place.
    random_seed : int or numpy.random.Generator, optional
        Seed of the predictive draws.

    Examples
    --------
    >>> import arviz as az
    >>> import xarray as xr
    >>> idata = az.from_dict({"posterior": {"o": np.zeros((1, 5, 2, 2))},
    ...                      "observed_data": {"z": np.zeros(3)}}, dims={"z": ["obs"]})
    >>> mask = xr.DataArray([[1, 0], [1, 1]], dims=("row", "col"))
    >>> idata["constant_data"] = xr.Dataset({"obs_mask": mask, "kappa_obs": 2.0})
    >>> add_posterior_predictive(idata, random_seed=0)
    >>> idata.posterior_predictive["z"].shape
    (1, 5, 3)
    """
    mask = idata.constant_data["obs_mask"].values == 1
    post = idata.posterior
    kappa = np.broadcast_to(_kappa_obs_draws(idata), (*post["o"].shape[:2], 1))
    rng = as_rng(random_seed)
    # One chain at a time into float32 (angles): the same stream of draws as one call, with
    # float64 temporaries a chain big.
    z = np.empty((*post["o"].shape[:2], int(mask.sum())), np.float32)
    for chain in range(z.shape[0]):
        o = np.asarray(post["o"][chain].values, np.float64)[:, mask]  # row-major, as obs
        z[chain] = rng.vonmises(o, kappa[chain])
    coords = {"chain": post["chain"].values, "draw": post["draw"].values}
    coords["obs"] = idata.observed_data["obs"].values
    set_group(
        idata,
        "posterior_predictive",
        xr.Dataset({"z": (("chain", "draw", "obs"), z)}, coords=coords),
    )


def _kappa_obs_draws(idata):
    """``kappa_obs`` per draw ``(chain, draw, 1)``: learned (posterior) or fixed (data)."""
    if "kappa_obs" in idata.posterior:
        return idata.posterior["kappa_obs"].values[..., None]
    return float(idata.constant_data["kappa_obs"].values)
