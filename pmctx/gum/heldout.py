"""Held-out log predictive density of a fitted GUM, from its exact prediction.

For held-out rows ``(x*, y*)`` and posterior draws ``s`` (NUTS, ADVI or Laplace), the
pointwise log predictive density is

``lpd_i = log (1/S) sum_s p(y*_i | rho_s(x*_i), dispersion_s)``,

where ``rho_s(x*)`` is the predictor of :meth:`pmctx.gum.api.GumModel.predict`: every function
evaluated exactly at the new inputs (a GP on an exact support through its GP conditional,
drawn once per posterior draw, so the average over draws also integrates the conditional;
see :mod:`pmctx.gum.predict`). Observation weights of the training fit do not apply to
held-out rows. :func:`refit_functions` pairs it with a refit of the GUM on training rows,
for K-fold (:func:`pmctx.kfold.gum_functions`) and the exact refits of :func:`pmctx.compare`.

Examples
--------
>>> import numpy as np
>>> from pmctx.gum import gum
>>> rng = np.random.default_rng(0)
>>> x = rng.uniform(0, 2, 60)
>>> y = rng.poisson(np.exp(np.sin(2 * x)))
>>> g = gum("y ~ f(x, lengthscale=0.5)", {"x": x[:50], "y": y[:50]}, family="poisson")
>>> ll = held_out_log_density(g, {"x": x[50:], "y": y[50:]}, draws=200)
>>> ll.dims, ll.shape
(('chain', 'draw', 'obs'), (1, 200, 10))
>>> held_out_lpd(g, {"x": x[50:], "y": y[50:]}, draws=200).shape
(10,)
"""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

from pmctx.gum.columns import data_columns, new_columns, response_values
from pmctx.gum.families import loglik
from pmctx.gum.predict import as_dataarray, predict_draws

__all__ = ["held_out_log_density", "held_out_lpd", "refit_functions"]


def _held_out_response(gum_model, data) -> np.ndarray:
    d = gum_model.design
    columns = data_columns(data)
    if d.response not in columns:
        raise ValueError(
            f"Held-out data needs the response column {d.response!r} to be scored; it has "
            f"{sorted(columns)}."
        )
    return response_values(d.family, columns[d.response], f"data[{d.response!r}]")


def held_out_log_density(gum_model, data, idata=None, *, draws=1000, random_seed=0):
    """Pointwise log density of held-out responses per posterior draw.

    Parameters
    ----------
    gum_model : GumModel
        The fitted GUM (its training data define the posterior).
    data : DataFrame or dict
        Held-out rows: the formula's regressor columns and the response.
    idata : DataTree, optional
        Posterior draws of ``gum_model``; default ``draws`` Laplace draws.
    draws : int, default 1000
        Laplace draws when ``idata`` is None.
    random_seed : int or numpy.random.Generator, default 0
        Seed of the GP-conditional draws at new inputs.

    Returns
    -------
    xarray.DataArray with dims ``(chain, draw, obs)``.
    """
    y = _held_out_response(gum_model, data)
    columns, n = new_columns(gum_model.blocks, gum_model.labels, data)
    if n != y.size:
        raise ValueError(f"Held-out response has {y.size} rows but the regressors have {n}.")
    d = gum_model.design
    rho, noise = predict_draws(gum_model, columns, n, idata, draws=draws, random_seed=random_seed)
    if noise is None and d.family in ("gaussian", "negative_binomial"):
        raise ValueError(
            f"Scoring {d.family} responses needs the dispersion (fixed in gum() or sampled)."
        )
    dispersion = 1.0 if noise is None else np.asarray(noise, float)[..., None]
    ll, _, _ = loglik(d.family, d.link, y, rho, noise_sd=dispersion)
    return as_dataarray(np.asarray(ll, dtype=np.float64), d.response)


def held_out_lpd(gum_model, data, idata=None, *, draws=1000, random_seed=0) -> np.ndarray:
    """``log mean_s p(y*_i | draw s)`` for every held-out row (see the module doc).

    Parameters
    ----------
    gum_model : GumModel
        The fitted model.
    data : pandas.DataFrame or dict
        Held-out rows (regressors and response).
    idata : xarray.DataTree, optional
        Posterior draws (default: ``draws`` Laplace draws).
    draws : int, default 1000
        Laplace draws when ``idata`` is None.
    random_seed : int or numpy.random.Generator, default 0
        Seed of the draws.

    Returns
    -------
    numpy.ndarray (n_rows,)
        Log pointwise predictive density of each held-out row.
    """
    ll = held_out_log_density(gum_model, data, idata, draws=draws, random_seed=random_seed).values
    flat = ll.reshape(-1, ll.shape[-1])
    return logsumexp(flat, axis=0) - np.log(flat.shape[0])


class _GumFit:
    """Refit a GUM on training rows: ``build(train)``, then its own NUTS or Laplace fit."""

    def __init__(self, build, method, options):
        self.build, self.method, self.options = build, method, options
        self.models: dict = {}  # fit key -> GumModel, read back by _GumHeldOut

    def __call__(self, train):
        gum_model = self.build(train)
        options = dict(self.options)
        if self.method == "laplace":
            options.setdefault("draws", 2000)
            idata = gum_model.laplace(log_likelihood=False, posterior_predictive=False, **options)
        else:
            options.setdefault("posterior_predictive", False)
            idata = gum_model.sample(**options)
        key = f"gum-fit-{len(self.models)}-{id(gum_model)}"
        idata.attrs["pmctx_gum_fit"] = key
        self.models[key] = gum_model
        return idata


class _GumHeldOut:
    """Pointwise held-out log density (chain, draw, row) of a fit made by :class:`_GumFit`."""

    def __init__(self, fit: _GumFit, random_seed):
        self.fit, self.random_seed = fit, random_seed

    def __call__(self, idata, test):
        gum_model = self.fit.models.pop(idata.attrs["pmctx_gum_fit"])
        return held_out_log_density(gum_model, test, idata, random_seed=self.random_seed).values


def refit_functions(build, *, method: str = "laplace", fit_options=None, random_seed=0):
    """``(fit, log_predictive)``: refit a GUM on training rows, score it on held-out rows.

    Parameters
    ----------
    build : callable ``train_data -> GumModel``
        Declares the GUM on the training rows, e.g.
        ``lambda train: gum("y ~ f(x)", train, family="poisson")``, or a fitted model's
        ``redeclare``.
    method : {"laplace", "nuts"}, default "laplace"
        The refit: ``GumModel.laplace`` (``draws`` Gaussian draws, default 2000) or
        ``GumModel.sample`` (NUTS); ``fit_options`` are passed on.
    fit_options : dict, optional
        Keyword arguments of that fit (``draws``, ``tune``, ``chains``, ``random_seed``...).
    random_seed : int or numpy.random.Generator, default 0
        Seed of the GP-conditional draws at held-out inputs.

    Returns
    -------
    tuple of callable
        ``fit(train) -> DataTree`` and ``log_predictive(idata, test) -> (chain, draw,
        row)`` array (:func:`held_out_log_density`), for :func:`pmctx.kfold.kfold`,
        :func:`pmctx.kfold.reloo` and :class:`pmctx.refit.Refitter`.

    Examples
    --------
    >>> from pmctx.gum import gum
    >>> rng = np.random.default_rng(1)
    >>> x = rng.uniform(0, 2, 40)
    >>> data = {"x": x, "y": rng.poisson(np.exp(np.sin(2 * x)))}
    >>> fit, log_predictive = refit_functions(
    ...     lambda d: gum("y ~ f(x, lengthscale=0.5)", d, family="poisson"),
    ...     fit_options={"draws": 100})
    >>> train = {k: v[:30] for k, v in data.items()}
    >>> test = {k: v[30:] for k, v in data.items()}
    >>> log_predictive(fit(train), test).shape
    (1, 100, 10)
    """
    if method not in ("nuts", "laplace"):
        raise ValueError(
            f"method must be 'nuts' or 'laplace'; got {method!r}. Laplace refits are cheap "
            "(a Newton fit and Gaussian draws); NUTS refits sample each training set."
        )
    fit = _GumFit(build, method, dict(fit_options or {}))
    return fit, _GumHeldOut(fit, random_seed)
