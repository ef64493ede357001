"""DataTree of a GUM: free-vector draws named like the ``pm.Model``, pointwise
log-likelihood, posterior predictive and function summaries.

The Laplace route draws free vectors ``u`` of the design and :func:`to_idata` names them as
the PyMC model does (``f_x_z``, ``f_x`` on its grid, ``intercept``, ...), so that Laplace,
NUTS and ADVI fits have the same variables; :func:`log_likelihood_draws` computes the
``log_likelihood`` group of NUTS draws with the design's own NumPy likelihood. These are pure
functions of the design; :func:`add_posterior_predictive` is
:meth:`pmctx.gum.GumModel.add_posterior_predictive` (the class binds it; ``self`` is the model).

Examples
--------
>>> import numpy as np
>>> from pmctx.gum import gum
>>> rng = np.random.default_rng(0)
>>> data = {"x": rng.uniform(0, 2, 30)}
>>> data["y"] = rng.poisson(np.exp(np.sin(data["x"])))
>>> g = gum("y ~ f(x, lengthscale=0.5)", data, family="poisson")
>>> idata = to_idata(g.design, np.zeros((3, g.design.n_free)))
>>> idata.posterior["f_x"].dims, idata.log_likelihood["y"].shape
(('chain', 'draw', 'f_x_x'), (1, 3, 30))
>>> list(function_summary(g.design, g.labels, idata, "f_x").columns)
['x', 'mean', 'sd', 'lower', 'upper']
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

from pmctx.gum.build import function_coords, function_dim
from pmctx.gum.design import offset_name
from pmctx.gum.families import DISPERSION
from pmctx.gum.predict import as_dataarray, predict_draws, response_draws
from pmctx.gum.streams import stream
from pmctx.io import to_inference_data
from pmctx.memory import PER_DRAW_BYTES, PREDICTIVE_BYTES, even_draws, nbytes, subset_draws
from pmctx.trees import set_group

__all__ = [
    "add_posterior_predictive",
    "function_summary",
    "log_likelihood_draws",
    "pointwise_loglik",
    "to_idata",
]


def pointwise_loglik(design, u: np.ndarray, *, dtype=np.float64) -> np.ndarray:
    """Log-likelihood of every observation at free vector ``u``, or at each row of ``u``.

    Rows are evaluated in chunks, one array expression per chunk, whose (N, positions, rows)
    temporaries stay near :data:`_CHUNK_VALUES` floats (a Python call per draw took 0.33 s
    for 4,000 draws at N = 500, a tenth of ``g.sample``'s in-process time).

    Parameters
    ----------
    design : pmctx.gum.design.GumDesign
        The numeric design.
    u : numpy.ndarray, shape (D,) or (S, D)
        A free vector, or one per row.
    dtype : numpy dtype, default float64
        Dtype of the result for a batch (filled in place).

    Returns
    -------
    numpy.ndarray, shape (N,) or (S, N)
        Log-likelihood of each observation.
    """
    u = np.asarray(u, dtype=np.float64)
    if u.ndim == 1:
        return design.loglik(design.predictor(u))[0]
    out = np.empty((len(u), design.n_obs), dtype)
    width = max((mask.shape[1] for mask in design.masks), default=1)  # positions per row
    step = max(1, _CHUNK_VALUES // max(design.n_obs * width, 1))
    for start in range(0, len(u), step):
        chunk = u[start : start + step]
        out[start : start + len(chunk)] = design.loglik(design.predictor(chunk))[0]
    return out


_CHUNK_VALUES = 2**22  # 32 MiB of float64 per temporary


def to_idata(design, u: np.ndarray, *, result=None, log_likelihood=True):
    """DataTree of free-vector draws ``u`` (draws x D), named like the PyMC model.

    Parameters
    ----------
    design : pmctx.gum.design.GumDesign
        The numeric design.
    u : numpy.ndarray, shape (draws, D)
        Draws of the free vector.
    result : pmctx.gum.laplace.LaplaceResult, optional
        A Laplace fit whose log evidence and convergence flag go into the attributes.
    log_likelihood : bool, default True
        Add the pointwise ``log_likelihood`` group.

    Returns
    -------
    xarray.DataTree
        One chain with the free variables, the functions on their grids, the intercept and
        offsets.
    """
    d = design
    posterior, dims, coords = {}, {}, {"obs": np.arange(d.n_obs)}
    thetas, scalars = d.thetas(u), d.scalars(u)
    for name, fn in d.functions.items():
        if fn.n_free:
            posterior[f"{name}_z"] = u[None, :, d.slices[name]]
            dims[f"{name}_z"] = [f"{name}_free"]
        fdims = function_dim(d, name)
        values = thetas[name].reshape(len(u), *fn.value_shape)
        posterior[name] = values[None] if fdims else values[None, :, 0]
        dims[name] = fdims
        coords.update(function_coords(d, name))
    for key in sorted(d.offsets):
        label = offset_name(key)
        if d.offsets[key] == "free":
            posterior[f"{label}_z"] = u[None, :, d.slices[label].start]
            posterior[label] = scalars[label][None]
    if d.intercept:
        posterior["intercept_z"] = u[None, :, d.slices["intercept"].start]
        posterior["intercept"] = scalars["intercept"][None]
    groups = {}
    if log_likelihood:
        ll = pointwise_loglik(d, u)
        groups["log_likelihood"] = {d.response: ll[None]}
    dims[d.response] = ["obs"]
    attrs = {"inference": "laplace"}
    if result is not None:
        attrs.update(log_evidence=result.log_evidence, converged=int(result.converged))
    return to_inference_data(
        posterior,
        observed_data={d.response: d.y},
        coords=coords,
        dims=dims,
        attrs=attrs,
        **groups,
    )


def log_likelihood_draws(design, hsgp: dict, posterior) -> dict | None:
    """Pointwise log-likelihood of every posterior draw, from its ``*_z`` variables.

    The design's own NumPy likelihood: no PyTensor function to compile. ``None`` when the
    model's coordinates are not the design's (``hsgp`` terms) or a ``*_z`` variable is missing.

    Parameters
    ----------
    design : pmctx.gum.design.GumDesign
        The numeric design.
    hsgp : dict
        The model's HSGP terms (:func:`pmctx.gum.coordinates.hsgp_sizes`).
    posterior : xarray.Dataset
        Posterior draws with dims ``chain``, ``draw`` and the model's ``*_z`` variables.

    Returns
    -------
    dict or None
        ``{response name: array (chain, draw, N)}``.
    """
    d = design
    slots = {key: slot for key, slot in d.slices.items() if slot.stop > slot.start}
    if hsgp or any(f"{key}_z" not in posterior for key in slots):
        return None
    shape = (posterior.sizes["chain"], posterior.sizes["draw"])
    u = np.zeros((*shape, d.n_free))
    for key, slot in slots.items():
        u[..., slot] = posterior[f"{key}_z"].values.reshape(*shape, -1)
    rows = u.reshape(-1, d.n_free)
    # Filled in place (a list of rows then np.stack held two copies); float32 when float64
    # would pass pmctx.memory.PER_DRAW_BYTES (az.loo moves by ~1e-6 of its standard error).
    big = nbytes((len(rows), d.n_obs)) > PER_DRAW_BYTES
    ll = pointwise_loglik(d, rows, dtype=np.float32 if big else np.float64)
    return {d.response: ll.reshape(*shape, -1)}


def add_posterior_predictive(self, idata, *, random_seed=0):
    """Add a ``posterior_predictive`` group (response draws at the training inputs), so
    ``az.plot_ppc`` and ``az.loo_pit`` work on GUM fits: at every draw when its values take at
    most :data:`pmctx.memory.PREDICTIVE_BYTES` (64 MiB), else at evenly spaced draws that fit in
    it (enough for ``az.plot_ppc``; ``az.loo_pit`` needs every draw). Count and binary draws
    are kept as ``int32``.

    Parameters
    ----------
    idata : xarray.DataTree
        Posterior draws of this model (NUTS, ADVI or Laplace); modified in place.
    random_seed : int or numpy.random.Generator, default 0
        Seed of the response draws.

    Returns
    -------
    xarray.DataTree
        ``idata`` with a (replaced) ``posterior_predictive`` group; unchanged when the
        dispersion is neither fixed nor sampled.

    Examples
    --------
    >>> from pmctx.gum import gum
    >>> rng = np.random.default_rng(0)
    >>> data = {"x": rng.uniform(0, 2, 30)}
    >>> data["y"] = rng.poisson(np.exp(np.sin(data["x"])))
    >>> g = gum("y ~ f(x, lengthscale=0.5)", data, family="poisson")
    >>> idata = g.laplace(draws=20, posterior_predictive=False)
    >>> g.add_posterior_predictive(idata).posterior_predictive["y"].shape
    (1, 20, 30)
    """
    d = self.design
    columns = self._training_columns
    post = idata.posterior.to_dataset()
    keep = subset_draws(post.sizes["chain"], post.sizes["draw"], d.n_obs, budget=PREDICTIVE_BYTES)
    source = idata  # every draw, or evenly spaced ones whose draws fit PREDICTIVE_BYTES
    if keep < post.sizes["draw"]:
        thinned = post.isel(draw=even_draws(post.sizes["draw"], keep))
        source = xr.DataTree.from_dict({"posterior": thinned})
    rho, noise = predict_draws(self, columns, d.n_obs, source, random_seed=random_seed)
    if d.family in DISPERSION and noise is None:
        return idata  # dispersion neither fixed nor sampled: nothing to draw from
    values = response_draws(d.family, d.link, rho, stream(random_seed, 2), noise_sd=noise)
    del rho
    if values.dtype.kind == "i":  # counts and 0/1 responses: int32 is plenty, half of int64
        values = values.astype(np.int32)
    group = xr.Dataset({d.response: as_dataarray(values, d.response)})
    group = group.assign_coords(draw=source.posterior["draw"].values)  # the draws it used
    return set_group(idata, "posterior_predictive", group)


def function_summary(design, labels: dict, idata, name: str, *, hdi_prob=0.94):
    """Posterior mean, sd and equal-tailed band of function ``name`` on its grid.

    Parameters
    ----------
    design : pmctx.gum.design.GumDesign
        The numeric design.
    labels : dict
        Category labels by function name (shown as ``x`` of categorical terms).
    idata : xarray.DataTree
        Posterior draws with the function ``name``.
    name : str
        The function.
    hdi_prob : float, default 0.94
        Probability mass of the equal-tailed band.

    Returns
    -------
    pandas.DataFrame
        Columns ``x``, ``mean``, ``sd``, ``lower``, ``upper`` (and ``level`` first for a
        grouped GP ``f(x|g)``).
    """
    if name not in design.functions:
        raise ValueError(f"Unknown function {name!r}; have {list(design.functions)}.")
    fn = design.functions[name]
    values = idata.posterior[name].values
    values = values.reshape(values.shape[0] * values.shape[1], -1)
    tail = (1.0 - hdi_prob) / 2.0
    x = labels.get(name, fn.support)
    columns = {}
    if fn.levels is not None:  # grouped GP: one row per (level, support point)
        columns["level"] = np.repeat(fn.level_names, len(x))
        x = np.tile(x, fn.n_levels)
    return pd.DataFrame(
        {
            **columns,
            "x": x,
            "mean": values.mean(axis=0),
            "sd": values.std(axis=0),
            "lower": np.quantile(values, tail, axis=0),
            "upper": np.quantile(values, 1 - tail, axis=0),
        }
    )
