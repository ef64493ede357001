"""Exact refits of the IBP without some trials: K-fold and :func:`pmctx.compare`'s refits.

A refit runs the model's own ``sample`` (:func:`pmctx.models.ibp.sample`, passed in: the
declaration sits above this package) on the training trials; held-out trials are scored by
the integrated likelihood of :mod:`pmctx.ibp.marginal`: ``joint`` (the whole trial), ``F``
(forces given cues) or ``X`` (cues given forces). The callables pickle, so refits can run on
Dask workers. :func:`pmctx.models.ibp.kfold_functions` and
:func:`pmctx.models.ibp.refit_functions` are the public entry points.
"""

from __future__ import annotations

import numpy as np

from pmctx.ibp.hyper import HYPER_NAMES

__all__ = ["VAR_NAMES", "kfold_pair", "warm_refit"]

#: What a held-out trial can be scored on.
VAR_NAMES = ("joint", "F", "X")


class _KfoldFit:
    """``sample`` on the training trials (``{"F": ..., "X": ...}``, either may be absent)."""

    def __init__(self, sample, options):
        self.sample, self.options = sample, options

    def __call__(self, train):
        return self.sample(train.get("F"), train.get("X"), log_likelihood=False, **self.options)


class _HeldOutTrials:
    """Integrated log likelihood ``var_name`` of held-out trials, per posterior draw."""

    def __init__(self, var_name, options):
        self.var_name, self.options = var_name, options

    def __call__(self, idata, test):
        from pmctx.ibp.marginal import integrated_log_likelihood

        hyper = {}
        for name in ("sigma_n", "lam", "eps"):
            if name not in idata.posterior:
                hyper[name] = float(np.asarray(idata.constant_data[name]).reshape(-1)[0])
        ds = integrated_log_likelihood(
            idata.posterior, test.get("F"), test.get("X"), hyper=hyper, **self.options
        )
        return ds[self.var_name].values


class _WarmRefit:
    """A refit on training trials: a short run of ``sample`` from the full fit's last draws."""

    def __init__(self, sample, idata, options):
        self.sample, self.posterior, self.options = sample, idata.posterior, options

    def __call__(self, train):
        rows, post = np.asarray(train["trial_index"]), self.posterior
        points = []
        for chain in range(self.options["chains"]):
            draw = post.isel(chain=chain % post.sizes["chain"], draw=-1)
            point = {"Z": draw["Z"].values[rows], "pi": np.clip(draw["pi"].values, 1e-9, 1 - 1e-9)}
            for name in ("A", "Y", "alpha", "sigma_n2", "sigma_A2", "phi", "lam", "eps"):
                if name in draw:
                    point[name] = draw[name].values
            points.append(point)
        return self.sample(train.get("F"), train.get("X"), initvals=points, log_likelihood=False,
                           reconstructions=False, posterior_predictive=False,
                           check_convergence=False, progressbar=False, **self.options)  # fmt: skip


def kfold_pair(sample, *, var_name="joint", marginal_options=None, **sample_options):
    """``(fit, log_predictive)``: refit by ``sample``, score held-out trials by ``var_name``.

    Parameters
    ----------
    sample : callable
        :func:`pmctx.models.ibp.sample`.
    var_name : {"joint", "F", "X"}, default "joint"
        What a held-out trial is scored on.
    marginal_options : dict, optional
        Options of the integrated likelihood (:mod:`pmctx.ibp.marginal`).
    **sample_options
        Passed to ``sample`` for every refit.

    Returns
    -------
    tuple of callable
        ``(fit, log_predictive)``.

    Examples
    --------
    >>> fit, log_predictive = kfold_pair(print, var_name="F", K_max=8)
    >>> log_predictive.var_name, fit.options
    ('F', {'K_max': 8})
    """
    if var_name not in VAR_NAMES:
        raise ValueError(f"var_name must be 'joint', 'F' or 'X'; got {var_name!r}.")
    return _KfoldFit(sample, sample_options), _HeldOutTrials(var_name, marginal_options or {})


def warm_refit(sample, idata, *, var_name="joint", draws=250, tune=100, chains=2, random_seed=0):
    """The fields of a :class:`pmctx.refit.Refitter` for an IBP fit, or None.

    Parameters
    ----------
    sample : callable
        :func:`pmctx.models.ibp.sample`.
    idata : xarray.DataTree
        A fit of ``sample`` (with ``observed_data``).
    var_name : {"joint", "F", "X"}, default "joint"
        What a held-out trial is scored on.
    draws, tune, chains : int
        Of each refit (a warm start needs little tuning).
    random_seed : int, default 0
        Seed of every refit.

    Returns
    -------
    dict or None
        ``fit``, ``log_predictive``, ``data`` and ``method``; None when the fit holds no
        observed data or no ``Z``.

    Examples
    --------
    >>> import arviz as az
    >>> warm_refit(print, az.from_dict({"posterior": {"Z": np.zeros((1, 2, 3, 4))}})) is None
    True
    """
    if "observed_data" not in idata.children or "Z" not in idata.posterior:
        return None
    obs = idata.observed_data
    data = {name: obs[name].values for name in ("F", "X") if name in obs}
    if not data:
        return None
    data["trial_index"] = np.arange(next(iter(data.values())).shape[0])
    fixed = {}
    if "constant_data" in idata.children:
        fixed = {n: float(idata.constant_data[n]) for n in HYPER_NAMES if n in idata.constant_data}
    options = dict(K_max=int(idata.posterior["Z"].shape[-1]), draws=draws, tune=tune,
                   chains=chains, cores=1, random_seed=random_seed, **fixed)  # fmt: skip
    _, log_predictive = kfold_pair(sample, var_name=var_name)
    return {"fit": _WarmRefit(sample, idata, options), "log_predictive": log_predictive,
            "data": data, "method": f"mcmc, warm start, {chains}x{draws} draws"}  # fmt: skip
