"""What an IBP fit keeps, and in which form: memory in proportion to what users read.

Per default (``store="auto"``) a fit keeps

* every draw of the small variables (``pi``, ``A``, hyperparameters, ``n_active``,
  ``loglik``), as ``pm.sample`` does;
* every draw of ``Z`` and ``Y`` as ``int8`` (binary), which the integrated log-likelihood,
  :func:`pmctx.ibp.diagnostics.align_features`, :func:`pmctx.models.ibp.predict` and K-fold
  scores read: 1 byte a value instead of 8;
* every draw of a reconstruction (``F_hat``, ``X_prob``) as ``float32`` when it takes at most
  :data:`pmctx.memory.PER_DRAW_BYTES` (256 MiB), else only its per-chain posterior mean and
  sd, accumulated while sampling (group ``posterior_moments``; convergence is then judged on
  ``n_active``, ``loglik`` and the reconstructions kept per draw);
* the integrated per-trial log-likelihood at every draw (``joint`` in ``float64`` up to
  ``PER_DRAW_BYTES``, else ``float32``; the parts ``F`` and ``X`` in ``float32``: ``az.loo`` on
  ``float32`` moves elpd by about 1e-6 of its standard error); the conditional one (given
  each trial's sampled ``z_i``, not for LOO) only when it takes at most
  :data:`CONDITIONAL_BYTES` (64 MiB);
* a posterior predictive of ``F`` and ``X`` (``X`` as ``int8``) at every draw when
  ``pm.sample_posterior_predictive``'s ``int64`` arrays take at most :data:`PREDICTIVE_BYTES`
  (64 MiB), else at as many evenly spaced draws as fit in it (``az.plot_ppc`` works on either;
  ``az.loo_pit`` needs every draw: ``store="all"``).

``store="all"`` keeps every draw of everything (the reconstructions in ``float32``) and a
posterior predictive at every draw; :func:`output_bytes` says what either will take, before
sampling. ``store="fit.zarr"`` (a path ending in ``.zarr``) writes every draw of ``Z``, ``Y``
(int8) and the reconstructions (float32) to that Zarr store as they come
(:class:`pmctx.streaming.DiskTrace`), keeps the rest as ``"auto"`` does, writes it there
after sampling and returns the fit opened lazily from disk.

Examples
--------
>>> from pmctx.models.ibp import build_model
>>> model = build_model(X=np.zeros((10_000, 36)), K_max=10)
>>> plan = storage_plan(model, draws=1000, chains=4)
>>> plan.per_draw["Z"], plan.moments
('int8', ['X_prob'])
>>> round(sum(output_bytes(model, plan, draws=1000, chains=4).values()) / 1e9, 2)
0.67
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pmctx.memory import (
    PER_DRAW_BYTES,
    PREDICTIVE_BYTES,
    StoreTrace,
    check_output_memory,
    even_draws,
    nbytes,
    subset_draws,
)
from pmctx.sampling import dim_length
from pmctx.streaming import DiskTrace, disk_path

__all__ = [
    "CONDITIONAL_BYTES",
    "PREDICTIVE_BYTES",
    "STORE_CHOICES",
    "StoragePlan",
    "check_memory",
    "output_bytes",
    "storage_plan",
]

STORE_CHOICES = ("auto", "all")
#: ``store="auto"`` draws the posterior predictive at the draws whose ``int64`` arrays (what
#: ``pm.sample_posterior_predictive`` builds, before ``X`` becomes ``int8``) fit
#: ``PREDICTIVE_BYTES`` (:data:`pmctx.memory.PREDICTIVE_BYTES`, 64 MiB).
#: ``store="auto"`` keeps the conditional log-likelihood (diagnostics only) up to this size.
CONDITIONAL_BYTES = 64 * 2**20

_BINARY = ("Z", "Y")
_RECONSTRUCTIONS = ("F_hat", "X_prob")


@dataclass
class StoragePlan:
    """Which variables an IBP fit keeps per draw (and in which dtype), as moments, or not.

    Parameters
    ----------
    per_draw : dict
        Variable name to the dtype its draws are kept in.
    moments : list of str
        Variables kept as per-chain running mean and sd.
    log_likelihood : bool
        Whether the integrated per-trial log-likelihood is added.
    conditional : bool
        Whether the log-likelihood given each trial's sampled ``z_i`` is kept.
    predictive_draws : int
        Draws per chain of the posterior predictive (0: none).
    path : pathlib.Path or None
        Zarr store the per-draw variables are written to while sampling (``store`` a path).
    """

    per_draw: dict = field(default_factory=dict)
    moments: list = field(default_factory=list)
    log_likelihood: bool = True
    conditional: bool = False
    predictive_draws: int = 0  # per chain; 0: no posterior predictive
    path: Path | None = None  # Zarr store the per-draw variables stream to


def _joint_dtype(chains, draws, n) -> str:
    return "float64" if nbytes((chains, draws, n)) <= PER_DRAW_BYTES else "float32"


def _dims(model) -> dict:
    return {name: dim_length(model, name) for name in model.dim_lengths}


def _per_draw_shape(model, name, dims) -> tuple:
    return tuple(dims[d] for d in model.named_vars_to_dims[name])


def storage_plan(
    model,
    *,
    draws: int,
    chains: int,
    store: str = "auto",
    reconstructions=True,
    log_likelihood: bool = True,
    conditional_log_likelihood=None,
    posterior_predictive: bool = True,
) -> StoragePlan:
    """Decide what a fit of ``model`` keeps (see the module docstring).

    Parameters
    ----------
    model : pm.Model
        From :func:`pmctx.models.ibp.build_model`.
    draws, chains : int
        Draws per chain and chains.
    store : {"auto", "all"} or path ending in ".zarr", default "auto"
        ``"auto"``: big per-trial arrays as moments or for a subset of draws; ``"all"``: every
        draw of everything.
    reconstructions : bool or {"draws", "moments"}, default True
        ``True``: per draw or as moments, as ``store`` decides; ``"draws"``/``"moments"``
        force one; ``False``: not kept (then they are not in the model either).
    log_likelihood : bool, default True
        Whether the integrated per-trial log-likelihood is added.
    conditional_log_likelihood : bool, optional
        Keep the log-likelihood given each trial's sampled ``z_i``; default: when
        ``log_likelihood`` and (``store="all"`` or it takes at most :data:`CONDITIONAL_BYTES`).
    posterior_predictive : bool, default True
        Whether a posterior predictive group is added.

    Returns
    -------
    StoragePlan
    """
    path = disk_path(store, STORE_CHOICES)  # None, or the Zarr store draws stream to
    if path is not None:
        store = "auto"  # what stays in memory; every draw of the per-draw variables on disk
        if reconstructions == "moments":
            raise ValueError(
                "reconstructions='moments' keeps running moments in memory; with store=<path> "
                "every draw goes to disk: pass reconstructions=True or False."
            )
    if reconstructions not in (True, False, "draws", "moments"):
        raise ValueError(
            f"reconstructions must be True, False, 'draws' or 'moments'; got {reconstructions!r}."
        )
    dims = _dims(model)
    n_draws = draws * chains
    plan = StoragePlan(log_likelihood=bool(log_likelihood), path=path)
    for name in _BINARY:
        if name in model.named_vars:
            plan.per_draw[name] = "int8"
    for name in _RECONSTRUCTIONS:
        if name not in model.named_vars:
            continue
        size = nbytes((n_draws, *_per_draw_shape(model, name, dims)), "float32")
        keep_draws = reconstructions == "draws" or (
            reconstructions is True and (store == "all" or size <= PER_DRAW_BYTES or path)
        )
        if keep_draws:
            plan.per_draw[name] = "float32"
        else:
            plan.moments.append(name)
    observed = [_per_draw_shape(model, v.name, dims) for v in model.observed_RVs]
    per_draw_obs = sum(int(np.prod(shape)) for shape in observed)
    if conditional_log_likelihood is None:
        small = nbytes((n_draws, per_draw_obs)) <= CONDITIONAL_BYTES
        conditional_log_likelihood = bool(log_likelihood) and (store == "all" or small)
    plan.conditional = bool(conditional_log_likelihood)
    if posterior_predictive and observed:
        if store == "all":
            plan.predictive_draws = draws
        else:
            plan.predictive_draws = subset_draws(
                chains, draws, per_draw_obs, budget=PREDICTIVE_BYTES
            )
    return plan


def output_bytes(model, plan: StoragePlan, *, draws: int, chains: int) -> dict:
    """Bytes of each array a fit following ``plan`` keeps (and the largest transient copy).

    Parameters
    ----------
    model : pm.Model
        From :func:`pmctx.models.ibp.build_model`.
    plan : StoragePlan
        From :func:`storage_plan`.
    draws, chains : int
        Draws per chain and chains.

    Returns
    -------
    dict
        ``{description: bytes}``.
    """
    dims = _dims(model)
    n = dims["trial"]
    out = {}
    for name, dtype in plan.per_draw.items():
        out[f"posterior {name}"] = nbytes(
            (chains, draws, *_per_draw_shape(model, name, dims)), dtype
        )
    for name in plan.moments:
        out[f"moments of {name}"] = nbytes((chains, 4, *_per_draw_shape(model, name, dims)))
    observed = {v.name: _per_draw_shape(model, v.name, dims) for v in model.observed_RVs}
    if plan.log_likelihood:
        parts = len(observed) if len(observed) > 1 else 0
        joint = nbytes((chains, draws, n), _joint_dtype(chains, draws, n))
        out["log_likelihood"] = joint + parts * nbytes((chains, draws, n), "float32")
    if plan.conditional:
        out["conditional_log_likelihood"] = sum(
            nbytes((chains, draws, *shape)) for shape in observed.values()
        )
    if plan.predictive_draws:
        k = plan.predictive_draws
        kept = sum(
            nbytes((chains, k, *shape), "int8" if name == "X" else "float64")
            for name, shape in observed.items()
        )
        transient = sum(nbytes((chains, k, *shape), "int64") for shape in observed.values())
        out["posterior_predictive"] = kept + transient
    return out


def check_memory(model, plan: StoragePlan, *, draws: int, chains: int) -> int:
    """Warn :class:`pmctx.exceptions.MemoryWarning` before sampling when the outputs of the
    fit would pass a share of the available memory (:func:`pmctx.memory.check_output_memory`).

    Parameters
    ----------
    model : pm.Model
        From :func:`pmctx.models.ibp.build_model`.
    plan : StoragePlan
        From :func:`storage_plan`.
    draws, chains : int
        Draws per chain and chains.

    Returns
    -------
    int
        The bytes the outputs take.
    """
    n = _dims(model)["trial"]
    return check_output_memory(
        output_bytes(model, plan, draws=draws, chains=chains),
        what=f"IBP fit ({n} trials, {chains} x {draws} draws)",
        advice="Keep less: fewer draws, reconstructions='moments' or False, "
        "posterior_predictive=False, conditional_log_likelihood=False, or "
        "log_likelihood=False (no LOO).",
        stacklevel=4,
    )


def make_trace(model, plan: StoragePlan, *, draws: int, chains: int | None = None):
    """The ``pm.sample`` trace that keeps what ``plan`` says.

    Parameters
    ----------
    model : pm.Model
        From :func:`pmctx.models.ibp.build_model`.
    plan : StoragePlan
        From :func:`storage_plan`.
    draws : int
        Draws per chain after tuning.
    chains : int, optional
        Chains (needed when ``plan.path`` is set).

    Returns
    -------
    pmctx.memory.StoreTrace or pmctx.streaming.DiskTrace
    """
    if plan.path is not None:
        return DiskTrace(model, path=plan.path, draws=draws, chains=chains, per_draw=plan.per_draw)
    return StoreTrace(model, draws=draws, per_draw=plan.per_draw, moments=plan.moments)


def add_predictive(idata, model, plan: StoragePlan, *, random_seed=None):
    """Add ``posterior_predictive`` for ``plan.predictive_draws`` evenly spaced draws per chain
    (``X`` as ``int8``).

    Parameters
    ----------
    idata : xarray.DataTree
        The fit; changed in place.
    model : pm.Model
        The model sampled.
    plan : StoragePlan
        From :func:`storage_plan`.
    random_seed : int, optional
        Seed of the predictive draws.

    Returns
    -------
    xarray.DataTree
        ``idata``.
    """
    import pymc as pm

    k = plan.predictive_draws
    names = [v.name for v in model.observed_RVs]
    if not k or not names or "posterior_predictive" in idata.children:
        return idata
    n_draw = idata.posterior.sizes["draw"]
    index = even_draws(n_draw, k)
    needed = [name for name in idata.posterior.data_vars if name not in plan.moments]
    subset = idata.posterior.to_dataset()[needed].isel(draw=index)
    for name in _BINARY:  # PyMC's predictive function takes the variables' own dtype
        if name in subset:
            subset[name] = subset[name].astype(model[name].dtype)
    pred = pm.sample_posterior_predictive(
        subset, model=model, var_names=names, random_seed=random_seed, progressbar=False
    ).posterior_predictive.to_dataset()
    if "X" in pred:
        pred["X"] = pred["X"].astype("int8")
    pred.attrs["draws_of_posterior"] = "every draw" if len(index) == n_draw else "a subset"
    idata["posterior_predictive"] = pred
    return idata


def finish(idata, model, plan: StoragePlan, trace: StoreTrace, *, random_seed=None):
    """After ``pm.sample``: attach what ``trace`` kept, add the log-likelihood groups and the
    posterior predictive that ``plan`` asks for.

    Parameters
    ----------
    idata : xarray.DataTree
        What ``pm.sample`` returned; changed in place.
    model : pm.Model
        The model sampled.
    plan : StoragePlan
        From :func:`storage_plan`.
    trace : pmctx.memory.StoreTrace
        The trace ``pm.sample`` recorded into (:func:`make_trace`).
    random_seed : int, optional
        Seed of the integrated log-likelihood's stochastic terms and the predictive draws.

    Returns
    -------
    xarray.DataTree
        ``idata``.
    """
    from pmctx.ibp.marginal import add_integrated_log_likelihood

    trace.attach(idata)
    if plan.conditional:  # given each trial's sampled z_i: diagnostics only, not for LOO
        import pymc as pm
        import xarray as xr

        posterior = idata.posterior.to_dataset()
        post = posterior[[v.name for v in model.free_RVs if v.name in posterior]]
        for name in _BINARY:
            if name in post:
                post[name] = post[name].astype(model[name].dtype)
        idata["log_likelihood"] = pm.compute_log_likelihood(
            xr.DataTree.from_dict({"posterior": post}),
            model=model,
            extend_inferencedata=False,
            progressbar=False,
        )
    if plan.log_likelihood:  # per-trial likelihood with z_i summed out: the one LOO needs
        post = idata.posterior
        joint = _joint_dtype(post.sizes["chain"], post.sizes["draw"], post.sizes["trial"])
        add_integrated_log_likelihood(
            idata, model, random_seed=random_seed, parts_dtype="float32", joint_dtype=joint
        )
    if plan.predictive_draws:
        add_predictive(idata, model, plan, random_seed=random_seed)
    return idata
