"""What a map reconstruction keeps: every draw of small maps, every k-th draw of big ones.

``pm.sample`` keeps ``o``, its transformed copy and ``theta`` (float64, every node) for every
tuning sweep and draw: a 512 x 512 map at 4 x (1000 + 1000) sweeps needs 25 GB for them. With
``store="auto"`` (the default of :func:`pmctx.models.vonmises_map.reconstruct`) a map whose
``o`` and ``theta`` would pass :data:`pmctx.memory.PER_DRAW_BYTES` (256 MiB) in float64 is
recorded by :class:`pmctx.memory.StoreTrace`: after tuning only, ``o`` and ``theta`` in
float32, every ``thin``-th draw, with ``thin`` the smallest that fits them in that size; the
other variables (``kappa_obs``) and the log-likelihood and posterior predictive of ``z``
follow the same draws (the log-likelihood in float32), so every consumer of the posterior
(summaries, convergence, plots, LOO) works as on a small map, on fewer, less correlated draws.
``sample_stats`` keeps every draw. ``store="all"`` keeps every draw (as ``pm.sample`` does).
``store="fit.zarr"`` (a path ending in ``.zarr``) streams every draw of ``o`` and ``theta``
(float32) to that Zarr store as it comes (:class:`pmctx.streaming.DiskTrace`), writes the
log-likelihood of ``z`` there block by block, draws the predictive at the draws that fit
:data:`pmctx.memory.PREDICTIVE_BYTES`, and returns the fit opened lazily from disk.

Examples
--------
>>> import numpy as np
>>> from pmctx.models.vonmises_map import build_model
>>> model = build_model(np.zeros((512, 512)), kappa=2.0, kappa_obs=3.0, rank=3)
>>> map_thin(model, draws=1000, chains=4), map_thin(model, draws=1000, chains=4, store="all")
(32, None)
"""

from __future__ import annotations

import math

from pmctx.memory import (
    PER_DRAW_BYTES,
    PREDICTIVE_BYTES,
    StoreTrace,
    even_draws,
    nbytes,
    subset_draws,
)
from pmctx.sampling import variable_shape
from pmctx.streaming import DiskTrace, stream_log_likelihood
from pmctx.trees import set_group

__all__ = ["STORE_CHOICES", "finish_on_disk", "finish_thinned", "map_thin", "map_trace"]

STORE_CHOICES = ("auto", "all")
_MAPS = ("o", "theta")


def map_thin(model, *, draws: int, chains: int, store: str = "auto") -> int | None:
    """``None`` when ``o`` and ``theta`` fit :data:`pmctx.memory.PER_DRAW_BYTES` in float64 at
    every draw (``pm.sample`` keeps them), else the smallest ``thin`` whose float32 draws fit
    it (1: every draw in float32, after tuning only).

    Parameters
    ----------
    model : pm.Model
        From :func:`pmctx.models.vonmises_map.build_model`.
    draws, chains : int
        Draws per chain and chains.
    store : {"auto", "all"}, default "auto"
        ``"all"``: always ``None``.

    Returns
    -------
    int or None
    """
    if store not in STORE_CHOICES:
        raise ValueError(
            f"store must be one of {STORE_CHOICES}; got {store!r}. 'auto' keeps every k-th "
            "draw of maps too big to keep whole, 'all' keeps every draw."
        )
    nodes = math.prod(variable_shape(model, "o"))
    if store == "all" or 2 * nbytes((chains, draws, nodes)) <= PER_DRAW_BYTES:
        return None
    return math.ceil(2 * nbytes((chains, draws, nodes), "float32") / PER_DRAW_BYTES)


def map_trace(model, *, draws: int, thin: int, path=None, chains: int | None = None):
    """The ``pm.sample`` trace keeping every ``thin``-th draw of ``o`` and ``theta``
    (float32) and no copy of the transformed ``o``; with ``path``, every draw streamed to that
    Zarr store instead (:class:`pmctx.streaming.DiskTrace`).

    Parameters
    ----------
    model : pm.Model
        From :func:`pmctx.models.vonmises_map.build_model`.
    draws : int
        Draws per chain after tuning.
    thin : int
        From :func:`map_thin` (1 with ``path``).
    path : pathlib.Path, optional
        The Zarr store (replaced).
    chains : int, optional
        Chains (needed with ``path``).

    Returns
    -------
    pmctx.memory.StoreTrace or pmctx.streaming.DiskTrace
    """
    transformed = [v.name for v in model.unobserved_value_vars if v.name.startswith("o_")]
    per_draw = dict.fromkeys(_MAPS, "float32")
    if path is not None:
        return DiskTrace(model, path=path, draws=draws, chains=chains, per_draw=per_draw,
                         thin=thin, drop=transformed)  # fmt: skip
    return StoreTrace(model, draws=draws, per_draw=per_draw, thin=thin,
                      thinned_group="posterior_thinned", drop=transformed)  # fmt: skip


def finish_thinned(idata, model, trace: StoreTrace, *, log_likelihood: bool = True):
    """Make the thinned draws the posterior: the other posterior variables at the same draws,
    ``o`` and ``theta`` from ``trace``, then the log-likelihood of ``z`` (float32).

    Parameters
    ----------
    idata : xarray.DataTree
        What ``pm.sample`` returned; changed in place.
    model : pm.Model
        The model sampled.
    trace : pmctx.memory.StoreTrace
        From :func:`map_trace`, after sampling.
    log_likelihood : bool, default True
        Add the ``log_likelihood`` group of ``z``.

    Returns
    -------
    xarray.DataTree
        ``idata``.
    """
    import pymc as pm

    trace.attach(idata)  # thin 1: into the posterior; else into posterior_thinned
    if "posterior_thinned" in idata.children:
        thinned = idata["posterior_thinned"]
        del idata["posterior_thinned"]
        post = thinned.to_dataset()
        if "posterior" in idata.children:
            # PyMC 6 keeps an empty posterior (no draw dimension) when every posterior
            # variable went to the thinned group: then the thinned draws are all of it.
            rest = idata["posterior"].to_dataset()
            if "draw" in rest.dims:
                post = rest.isel(draw=post["draw"].values).assign(post.data_vars)
            post.attrs = dict(rest.attrs)
        idata["posterior"] = post
    idata.posterior.attrs["thin"] = trace.thin
    if log_likelihood and "z" in model.named_vars:
        import xarray as xr

        post, parts = idata["posterior"].to_dataset(), []
        for chain in range(post.sizes["chain"]):  # float64 copies one chain big
            one = post.isel(chain=[chain])
            one = one.assign(o=one["o"].astype("float64"))
            ll = pm.compute_log_likelihood(
                xr.DataTree.from_dict({"posterior": one}), model=model, var_names=["z"],
                extend_inferencedata=False, progressbar=False,
            )  # fmt: skip
            parts.append(ll.astype("float32"))
        set_group(idata, "log_likelihood", xr.concat(parts, dim="chain"))
    return idata


def finish_on_disk(idata, model, trace: DiskTrace, log_likelihood=True,
                   posterior_predictive=True, random_seed=None):  # fmt: skip
    """After ``pm.sample`` with :func:`disk_trace`: the posterior read lazily from disk, the
    log-likelihood of ``z`` written there block by block (float32), and the posterior
    predictive at the evenly spaced draws that fit :data:`pmctx.memory.PREDICTIVE_BYTES`.

    Parameters
    ----------
    idata : xarray.DataTree
        What ``pm.sample`` returned; changed in place.
    model : pm.Model
        The model sampled.
    trace : pmctx.streaming.DiskTrace
        From :func:`map_trace` with ``path``, after sampling.
    log_likelihood, posterior_predictive : bool, default True
        Whether to add those groups.
    random_seed : int, optional
        Seed of the predictive draws.

    Returns
    -------
    xarray.DataTree
        ``idata`` (its groups not yet written to disk: :func:`pmctx.streaming.save_groups`).
    """
    import xarray as xr

    from pmctx.vonmises.predictive import add_posterior_predictive

    trace.attach(idata)
    idata.posterior.attrs["thin"] = 1
    if "z" not in model.named_vars:
        return idata
    if log_likelihood:
        stream_log_likelihood(idata, model, trace.path, var_names=["z"])
    if posterior_predictive:
        post = idata["posterior"].to_dataset()
        n_obs = math.prod(variable_shape(model, "z"))
        keep = subset_draws(post.sizes["chain"], post.sizes["draw"], n_obs,
                            budget=PREDICTIVE_BYTES)  # fmt: skip
        index = even_draws(post.sizes["draw"], keep)
        names = [name for name in post.data_vars if name != "theta"]  # o and kappa_obs
        groups = {"posterior": post[names].isel(draw=index).load()}
        for group in ("constant_data", "observed_data"):
            groups[group] = idata[group].to_dataset()
        view = xr.DataTree.from_dict(groups)
        add_posterior_predictive(view, random_seed)
        set_group(idata, "posterior_predictive", view["posterior_predictive"].to_dataset())
    return idata
