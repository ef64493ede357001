"""Laplace and ADVI for a GUM: the Gaussian approximations and their DataTree.

:func:`fit_laplace` runs the Newton MAP and Hessian of :mod:`pmctx.gum.laplace` at the model's
current hyperparameters and keeps it on the model; :func:`laplace` draws from it (reusing the
kept fit) and assembles DataTree named like the PyMC model's (:mod:`pmctx.gum.assemble`);
:func:`advi` runs ``pm.fit`` on the model, started at the Laplace MAP. The three functions
are :class:`pmctx.gum.GumModel`'s methods of the same names (the class binds them; ``self`` is
the model).

Examples
--------
>>> import numpy as np
>>> from pmctx.gum import gum
>>> rng = np.random.default_rng(0)
>>> data = {"x": rng.uniform(0, 2, 30)}
>>> data["y"] = rng.poisson(np.exp(np.sin(data["x"])))
>>> g = gum("y ~ f(x, lengthscale=0.5)", data, family="poisson")
>>> g.laplace(draws=10).posterior["f_x"].shape[:2]
(1, 10)
"""

from __future__ import annotations

import numpy as np
import pymc as pm

from pmctx.gum.assemble import to_idata
from pmctx.gum.build import build_pymc_model
from pmctx.gum.coordinates import free_dispersion
from pmctx.gum.families import DISPERSION
from pmctx.gum.laplace import laplace_fit
from pmctx.gum.streams import fixed_seed, stream
from pmctx.io import add_log_likelihood
from pmctx.validation import check_choice, check_int

__all__ = ["advi", "fit_laplace", "laplace"]


def fit_laplace(self, **kwargs):
    """Newton MAP + Hessian at the current hyperparameters (see :mod:`pmctx.gum.laplace`).

    Parameters
    ----------
    **kwargs
        Options of :func:`pmctx.gum.laplace.laplace_fit` (e.g. ``max_iter``, ``n_starts``).

    Returns
    -------
    pmctx.gum.laplace.LaplaceResult
        The mode ``u_map``, its covariance and the Laplace log evidence; also stored as
        ``laplace_result``.

    Examples
    --------
    >>> from pmctx.gum import gum
    >>> rng = np.random.default_rng(0)
    >>> data = {"x": rng.uniform(0, 2, 30)}
    >>> data["y"] = rng.poisson(np.exp(np.sin(data["x"])))
    >>> g = gum("y ~ f(x, lengthscale=0.5)", data, family="poisson")
    >>> g.fit_laplace().u_map.shape == (g.design.n_free,)
    True
    """
    design = self.design
    if free_dispersion(design):
        key = DISPERSION[design.family]
        raise ValueError(
            f"Laplace needs a fixed {key} for {design.family} data: pass {key}=... to "
            "gum() or fit it with pmctx.gum.hyper.fit_evidence(...)."
        )
    self.laplace_result = laplace_fit(design, **kwargs)
    return self.laplace_result


def laplace(
    self, *, draws=1000, random_seed=0, log_likelihood=True, posterior_predictive=True, result=None
):
    """Laplace posterior as DataTree (Gaussian draws; one chain).

    ``attrs["log_evidence"]`` holds the Laplace log marginal likelihood. The Newton fit is
    reused when the model already has one at its current hyperparameters (e.g. after
    :func:`pmctx.gum.hyper.fit_evidence`); pass ``result`` to use another.

    Parameters
    ----------
    draws : int, default 1000
        Independent draws from the Gaussian approximation.
    random_seed : int or numpy.random.Generator, default 0
        Seed of the draws (and of the posterior predictive).
    log_likelihood : bool, default True
        Add the pointwise ``log_likelihood`` group (for :func:`pmctx.compare`).
    posterior_predictive : bool, default True
        Add the ``posterior_predictive`` group (for ``az.plot_ppc``).
    result : LaplaceResult, optional
        A Newton fit to use instead of the model's own.

    Returns
    -------
    xarray.DataTree
        One chain of ``draws`` draws, with the same variables as :meth:`sample`.

    Examples
    --------
    >>> from pmctx.gum import gum
    >>> rng = np.random.default_rng(0)
    >>> data = {"x": rng.uniform(0, 2, 30)}
    >>> data["y"] = rng.poisson(np.exp(np.sin(data["x"])))
    >>> g = gum("y ~ f(x, lengthscale=0.5)", data, family="poisson")
    >>> idata = g.laplace(draws=20)
    >>> idata.posterior["f_x"].shape[:2], "log_evidence" in idata.posterior.attrs
    ((1, 20), True)
    """
    result = result or self.laplace_result or self.fit_laplace()
    u = result.draws(draws, stream(random_seed))
    idata = to_idata(self.design, u, result=result, log_likelihood=log_likelihood)
    if posterior_predictive:
        self.add_posterior_predictive(idata, random_seed=random_seed)
    return idata


def advi(
    self,
    *,
    n=20000,
    method="advi",
    draws=500,
    random_seed=0,
    minibatch_size=None,
    start_at_map=True,
    log_likelihood=True,
    **kwargs,
):
    """Mean-field (``"advi"``) or full-rank (``"fullrank_advi"``) ADVI via ``pm.fit``.

    Parameters
    ----------
    n : int, default 20000
        Optimisation steps.
    method : {"advi", "fullrank_advi"}, default "advi"
        Mean-field or full-rank ADVI.
    draws : int, default 500
        Draws from the fitted approximation.
    random_seed : int or numpy.random.Generator, default 0
        Seed of the optimisation and of the draws.
    minibatch_size : int, optional
        Stochastic ADVI on minibatches of this many observations (the scalable option for
        large N; the likelihood is rescaled by ``total_size``).
    start_at_map : bool, default True
        Start at the Laplace MAP with the Laplace sds (mean-field). Weak-prior terms have
        tiny posterior scales in the non-centred coordinates, where a cold start diverges.
    log_likelihood : bool, default True
        Add the pointwise ``log_likelihood`` group (size draws x N).
    **kwargs
        Passed to :func:`pymc.fit` (e.g. ``obj_optimizer``, ``callbacks``).

    Returns
    -------
    xarray.DataTree
        One chain of ``draws`` draws, with a ``log_likelihood`` group when requested.

    Examples
    --------
    >>> from pmctx.gum import gum
    >>> rng = np.random.default_rng(0)
    >>> data = {"x": rng.uniform(0, 2, 30)}
    >>> data["y"] = rng.poisson(np.exp(np.sin(data["x"])))
    >>> g = gum("y ~ f(x, lengthscale=0.5)", data, family="poisson")
    >>> idata = g.advi(n=2000, draws=100)  # doctest: +SKIP
    """
    check_choice(method, "method", ("advi", "fullrank_advi"))
    kwargs.setdefault("progressbar", False)
    if start_at_map and not free_dispersion(self.design):
        result = self.laplace_result or self.fit_laplace()
        kwargs.setdefault("start", self.map_point(result.u_map))
        if method == "advi":
            _, cov, _ = self._model_coordinates(result.u_map, result.cov)
            sd = self.map_point_raw(np.sqrt(np.diag(cov)))
            kwargs.setdefault("start_sigma", {k: np.asarray(v) for k, v in sd.items()})
    kwargs.setdefault("obj_optimizer", pm.adam(learning_rate=0.01))
    model = self.model
    if minibatch_size is not None:
        model = build_pymc_model(
            self.design,
            lengthscale_prior_sigma=self.lengthscale_prior_sigma,
            minibatch_size=check_int(minibatch_size, "minibatch_size", minimum=1),
        )
    random_seed = fixed_seed(random_seed)  # pm.fit takes no Generator
    with model:
        approx = pm.fit(n=n, method=method, random_seed=random_seed, **kwargs)
        idata = approx.sample(draws, random_seed=random_seed, return_inferencedata=True)
    for group in ("observed_data", "log_likelihood"):
        if minibatch_size is not None and group in idata.children:
            del idata[group]
    if log_likelihood:
        add_log_likelihood(idata, self.model)
    idata.posterior.attrs["inference"] = method
    return idata
