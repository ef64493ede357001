"""GUM: generalized unrestricted models with Gaussian-process priors (seed 002).

``rho(x) = sum_i prod_j (sum_l f_k(ijl)(x) + c_ij) + c0`` with GP, linear, categorical and
fixed functions; Bernoulli (logit/probit), Poisson (log) and Gaussian observations. The model
is a real ``pm.Model`` (``gum(...).model``) fitted by NUTS, Laplace (Newton MAP, Hessian,
evidence, hyperparameters by evidence or K-fold CV) or ADVI. The library lives in
:mod:`pmctx.gum`; this module is the CLI entry (``pmctx demo gum``, ``pmctx fit gum``).

Examples
--------
>>> from pmctx.models.gum import gum, seed_section_3_1, section_3_1_formula
>>> g = gum(section_3_1_formula(max_points=12), seed_section_3_1(50), family="poisson")
>>> sorted(g.function_names)
['f_x1', 'f_x2', 'f_x3']
"""

from __future__ import annotations

import xarray as xr

from pmctx.gum import GP, Categorical, Fixed, GumModel, Linear, gum
from pmctx.gum.demo import demo, write_outputs
from pmctx.gum.outputs import CONVERGENCE_ADVICE, invariants
from pmctx.gum.plots import plot_functions
from pmctx.gum.synthetic import section_3_1_formula, seed_section_3_1
from pmctx.sampling import fit_with_sampler

__all__ = [
    "GP",
    "Categorical",
    "Fixed",
    "GumModel",
    "Linear",
    "demo",
    "fit",
    "fit_data",
    "fit_unit",
    "gum",
    "invariants",
    "plot_functions",
    "predict",
    "refit_functions",
    "section_3_1_formula",
    "seed_section_3_1",
    "write_outputs",
]


def predict(
    idata, new_data, *, random_seed=None, gum_model, kind: str = "mean", **kwargs
) -> xr.Dataset:
    """Predictor ``rho``, mean or response draws at new inputs, from ``GumModel.predict``.

    The GP conditional at new x (seed 002 eq. 14) lives in :mod:`pmctx.gum`; this is the
    registry's entry point to it.

    Parameters
    ----------
    idata : xarray.DataTree
        A fit of ``gum_model``.
    new_data : dict or pandas.DataFrame
        The new inputs, with the columns the formula names.
    random_seed : int or numpy.random.Generator, optional
        Seed of the GP-conditional and response draws (default 0, as ``GumModel.predict``).
    gum_model : GumModel
        The fitted model.
    kind : str, default "mean"
        What to predict, as ``GumModel.predict`` takes it (``"rho"``, the predictor;
        ``"mean"``; ``"response"`` draws).
    **kwargs
        Passed to ``GumModel.predict``.

    Returns
    -------
    xarray.Dataset
        One variable (named ``kind``, or the response's name) with draws ``(chain, draw,
        obs)`` at the new inputs.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> data = {"x": rng.uniform(0, 2, 30)}
    >>> data["y"] = rng.poisson(np.exp(np.sin(data["x"])))
    >>> g = gum("y ~ f(x, lengthscale=0.5)", data, family="poisson")
    >>> idata = g.laplace(draws=20)

    >>> predict(idata, {"x": np.array([0.5, 1.5])}, gum_model=g)["mean"].shape
    (1, 20, 2)
    """
    seed = 0 if random_seed is None else random_seed
    return gum_model.predict(new_data, idata, kind=kind, random_seed=seed, **kwargs).to_dataset()


@fit_with_sampler
def fit_data(
    data: dict, sample_kwargs: dict, formula: str | None = None, family="gaussian", **options
):
    """Declare ``gum(formula, data["columns"], family=family, **options)`` and run NUTS.

    Parameters
    ----------
    data : dict
        ``{"columns": ..., "options": ...}``, as :func:`pmctx.gum.inputs.load_gum` loads it.
    formula : str, optional
        The model formula, when not stored in the data.
    family : str, default "gaussian"
        Response family (``gaussian``, ``bernoulli``, ``poisson``, ``negative_binomial``).
    **options
        Model options (see ``SPEC.options``); ``target_accept`` and ``check_convergence`` go
        to ``GumModel.sample``.

    Returns
    -------
    xarray.DataTree
        The fit, as ``GumModel.sample`` returns it.

    Examples
    --------
    >>> idata = fit_data({"columns": data}, formula="y ~ f(x)", family="poisson",
    ...                  draws=200, tune=200, chains=2)  # doctest: +SKIP
    """
    if not formula:
        raise ValueError(
            "The GUM needs a formula, e.g. 'y ~ f(x)': save one in the .npz "
            "(np.savez(path, formula='y ~ f(x)', family='poisson', x=..., y=...)) or pass "
            "--set formula='y ~ f(x)'."
        )
    for key in ("target_accept", "check_convergence"):  # GumModel.sample's, not gum()'s
        if key in options:  # given as a model option by the CLI
            sample_kwargs = {**sample_kwargs, key: options.pop(key)}
    g = gum(formula, data["columns"], family=family, **options)
    return g.sample(**sample_kwargs)


def fit_unit(data: dict, *, random_seed=None, method: str = "laplace", draws: int = 1000,
             **options):  # fmt: skip
    """One batch unit: a Laplace fit (default) or NUTS (``method="nuts"``, :func:`fit_data`);
    ``formula`` and ``family`` come from ``options`` or from the data (an ``.npz`` entry or a
    column).

    Parameters
    ----------
    data : dict
        One unit's columns, optionally with ``formula``, ``family`` and ``noise_sd`` entries.
    random_seed : int or numpy.random.Generator, optional
        Seed of the Laplace draws or of NUTS (Laplace: 0 when None).
    method : {"laplace", "nuts"}, default "laplace"
        Laplace approximation (seconds per unit) or NUTS through :func:`fit_data`.
    draws : int, default 1000
        Posterior draws.
    **options
        ``formula``, ``family`` and further :func:`pmctx.gum.gum` (Laplace) or
        :func:`fit_data` (NUTS) options; NUTS's sampling budget (``until_converged``,
        ``max_draws``, ``max_time``) is ignored by Laplace, whose draws are independent.

    Returns
    -------
    xarray.DataTree
        The unit's fit.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> unit = {"x": rng.uniform(0, 2, 30), "formula": "y ~ f(x)"}
    >>> unit["y"] = rng.normal(np.sin(unit["x"]), 0.3)
    >>> fit_unit(unit, random_seed=0, draws=50, noise_sd=0.3).posterior["f_x"].shape[:2]
    (1, 50)
    """
    from pmctx.validation import stored_scalar

    data = dict(data)
    formula = str(stored_scalar(options.pop("formula", None) or data.pop("formula", "")))
    family = str(stored_scalar(options.pop("family", None) or data.pop("family", "gaussian")))
    data.pop("formula", None), data.pop("family", None)
    if "noise_sd" in data:
        options.setdefault("noise_sd", float(stored_scalar(data.pop("noise_sd"))))
    if not formula:
        raise ValueError(
            "A GUM unit needs a formula: pass --set formula='y ~ f(x)' or store 'formula' in "
            "each unit's .npz."
        )
    if method == "nuts":
        return fit_data({"columns": data}, random_seed=random_seed, draws=draws,
                        formula=formula, family=family, **options)  # fmt: skip
    if method != "laplace":
        raise ValueError(f"method must be 'laplace' or 'nuts', got {method!r}.")
    for name in ("until_converged", "max_draws", "max_time"):  # independent draws: no chains
        options.pop(name, None)
    random_seed = 0 if random_seed is None else random_seed
    return gum(formula, data, family=family, **options).laplace(
        draws=draws, random_seed=random_seed
    )


def refit_functions(idata, *, var_name=None, method=None, fit_options=None):
    """How :func:`pmctx.compare` refits a GUM fit exactly (the spec's ``refit`` hook).

    A fit remembers the ``GumModel`` that made it while the user holds the model
    (:mod:`pmctx.gum.declaration`); each refit declares the same GUM on the training rows,
    with the model's current hyperparameters, and fits it the way the fit was made (Laplace
    for Laplace and ADVI fits, NUTS for NUTS fits).

    Parameters
    ----------
    idata : xarray.DataTree
        A fit of a ``GumModel`` (``g.sample()``, ``g.laplace()``, ``g.advi()``).
    var_name : str, optional
        The log-likelihood variable compared (a GUM has one).
    method : {"laplace", "nuts"}, optional
        Override how refits are made.
    fit_options : dict, optional
        Keywords of each refit (default: Laplace 2,000 draws; NUTS 2 chains x (500 + 500),
        without convergence warnings).

    Returns
    -------
    dict or None
        ``fit``, ``log_predictive``, ``data`` and ``method`` (the fields of
        :class:`pmctx.refit.Refitter`); None when the fit's model is gone (a fit read from
        disk), so :func:`pmctx.compare` keeps PSIS and says how to refit by hand.

    Examples
    --------
    >>> import numpy as np
    >>> g = gum("y ~ x", {"x": np.arange(8.0), "y": np.arange(8)}, family="poisson")
    >>> sorted(refit_functions(g.laplace(draws=20)))
    ['data', 'fit', 'log_predictive', 'method']
    """
    from pmctx.gum.declaration import fitted_model, redeclare, refit_data
    from pmctx.gum.heldout import refit_functions as gum_refits

    gum_model = fitted_model(idata)
    data = None if gum_model is None else refit_data(gum_model)
    if data is None:
        return None
    if method is None:
        method = "nuts" if idata.posterior.attrs.get("inference") in (None, "nuts") else "laplace"
    if fit_options is None and method == "nuts":
        fit_options = {"draws": 500, "tune": 500, "chains": 2, "check_convergence": False}
    fit, log_predictive = gum_refits(
        lambda rows: redeclare(gum_model, rows), method=method, fit_options=fit_options
    )
    return {"fit": fit, "log_predictive": log_predictive, "data": data, "method": method}


def _spec():
    from pmctx.gum.inputs import load_gum
    from pmctx.gum.simulate import invariants as sbc_quantities
    from pmctx.gum.simulate import simulate
    from pmctx.registry import ModelSpec

    return ModelSpec(
        name="gum",
        summary="GUM: sums of products of sums of GP, linear and fixed functions (NUTS, Laplace)",
        module=__name__,
        load=load_gum,
        fit=fit_data,
        invariants=invariants,
        write_outputs=write_outputs,
        demo=demo,
        fit_unit=fit_unit,
        simulate=simulate,
        sbc_quantities=sbc_quantities,
        predict=predict,
        refit=refit_functions,
        population=("intercept",),
        options={
            "formula": 'model formula, e.g. "y ~ f(x1) * f(x2) + f(x3)"',
            "family": "gaussian, bernoulli, poisson or negative_binomial (default gaussian)",
            "noise_sd": "fix the Gaussian noise sd (default: sampled)",
            "alpha": "fix the negative-binomial dispersion (default: sampled)",
            "target_accept": "NUTS's target acceptance rate (default 0.9; 0.95 or 0.99 when "
            "NUTS reports divergences)",
        },
        advice=CONVERGENCE_ADVICE,
        demo_seconds=(5, 8),
    )


#: The model's entry in the registry (:mod:`pmctx.registry`).
SPEC = _spec()

#: ``fit(data_path, *, out_dir="pmctx-fit", **kwargs)``: load a data file, fit, write the
#: files (:meth:`pmctx.registry.ModelSpec.fit_file`, what ``pmctx fit`` runs).
fit = SPEC.fit_file
