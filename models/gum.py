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

import json
import time
from pathlib import Path

import arviz as az
import numpy as np

from pmctx.gum import GP, Categorical, Fixed, GumModel, Linear, gum
from pmctx.gum.hyper import fit_evidence
from pmctx.gum.outputs import CONVERGENCE_ADVICE, invariants
from pmctx.gum.synthetic import match_constraints, section_3_1_formula, seed_section_3_1
from pmctx.io import save_figure
from pmctx.sampling import SAMPLE_DEFAULTS, resolve_seed

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
    "section_3_1_formula",
    "seed_section_3_1",
    "write_outputs",
]


def plot_functions(gum_model: GumModel, idata, *, truth: dict | None = None, title: str = ""):
    """One panel per function: posterior mean and 94% band, optionally against the truth.

    Parameters
    ----------
    gum_model : GumModel
        The model (its function grids and names).
    idata : arviz.InferenceData
        A fit of it (NUTS or Laplace).
    truth : dict, optional
        Function name -> true values on the grid, drawn dashed.
    title : str, default ""
        Appended to every panel's title.

    Returns
    -------
    matplotlib.figure.Figure
        One panel per function.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> data = {"x": rng.uniform(0, 2, 30)}
    >>> data["y"] = rng.poisson(np.exp(np.sin(data["x"])))
    >>> g = gum("y ~ f(x, lengthscale=0.5)", data, family="poisson")
    >>> idata = g.laplace(draws=20)

    >>> fig = plot_functions(g, idata)
    >>> len(fig.axes)
    1
    """
    import matplotlib.pyplot as plt

    names = gum_model.function_names
    fig, axes = plt.subplots(1, len(names), figsize=(4 * len(names), 3.2), squeeze=False)
    for ax, name in zip(axes[0], names):
        summary = gum_model.function_summary(idata, name)
        x = np.arange(len(summary)) if summary["x"].dtype == object else summary["x"]
        ax.fill_between(x, summary["lower"], summary["upper"], alpha=0.3, label="94% band")
        ax.plot(x, summary["mean"], "k-", label="posterior mean")
        if truth is not None and name in truth:
            ax.plot(x, truth[name], "r--", label="truth (constraints matched)")
        ax.set_title(f"{name} {title}".strip())
        ax.set_xlabel(name.split("_", 1)[-1])
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    return fig


def predict(idata, new_data, *, gum_model, kind: str = "mean", **kwargs):
    """Predictor ``rho``, mean or response draws at new inputs, from ``GumModel.predict``.

    The GP conditional at new x (seed 002 eq. 14) lives in :mod:`pmctx.gum`; this is the
    registry's entry point to it.

    Parameters
    ----------
    idata : arviz.InferenceData
        A fit of ``gum_model``.
    new_data : dict or pandas.DataFrame
        The new inputs, with the columns the formula names.
    gum_model : GumModel
        The fitted model.
    kind : str, default "mean"
        What to predict, as ``GumModel.predict`` takes it (``"rho"``, the predictor;
        ``"mean"``; ``"response"`` draws).
    **kwargs
        Passed to ``GumModel.predict``.

    Returns
    -------
    xarray.DataArray or xarray.Dataset
        Draws of the prediction at the new inputs, as ``GumModel.predict`` returns them.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> data = {"x": rng.uniform(0, 2, 30)}
    >>> data["y"] = rng.poisson(np.exp(np.sin(data["x"])))
    >>> g = gum("y ~ f(x, lengthscale=0.5)", data, family="poisson")
    >>> idata = g.laplace(draws=20)

    >>> predict(idata, {"x": np.array([0.5, 1.5])}, gum_model=g).shape
    (1, 20, 2)
    """
    if not hasattr(gum_model, "predict"):
        raise NotImplementedError(
            "This pmctx has no GumModel.predict yet; it arrives with the GUM prediction work."
        )
    return gum_model.predict(new_data, idata, kind=kind, **kwargs)


def write_outputs(idata, out_dir: Path, prefix: str = "gum", *, gum_model=None, truth=None,
                  extra=None) -> list[Path]:  # fmt: skip
    """Standard outputs (posterior, summary, diagnostics), the function plot when
    ``gum_model`` is given, and ``<prefix>_info.json`` from ``extra``.

    Parameters
    ----------
    idata : arviz.InferenceData
        A GUM fit.
    out_dir : path-like
        Output folder.
    prefix : str, default "gum"
        File name prefix.
    gum_model : GumModel, optional
        The model, for the function plot.
    truth : dict, optional
        True function values by name, drawn in the plot.
    extra : dict, optional
        Written as ``<prefix>_info.json``.

    Returns
    -------
    list of pathlib.Path
        The files written.

    Examples
    --------
    >>> paths = write_outputs(idata, "pmctx-out", gum_model=g)  # doctest: +SKIP
    """
    from pmctx.io import write_standard_outputs

    out_dir = Path(out_dir)
    paths = write_standard_outputs(idata, out_dir, prefix)
    if gum_model is not None:
        fig = plot_functions(gum_model, idata, truth=truth)
        paths.append(save_figure(fig, out_dir / f"{prefix}_functions.png"))
    if extra:
        path = out_dir / f"{prefix}_info.json"
        path.write_text(json.dumps(extra, indent=2, default=float))
        paths.append(path)
    return paths


def demo(
    out_dir, *, quick: bool = False, random_seed: int = 0, seed=None, cores=None
) -> list[Path]:
    """Seed section 3.1: Poisson ``f1(x1) f2(x2) + f3(x3)``, Laplace (+ evidence-fitted
    lengthscales) and, unless ``quick``, NUTS; recovered functions against the truth.

    Writes ``gum_laplace_*`` (posterior, summary, diagnostics, functions, info) and, unless
    ``quick``, ``gum_posterior.nc``, ``gum_summary.csv``, ``gum_diagnostics.csv`` (NUTS),
    ``gum_functions.png`` and ``gum_loo.csv``.

    Parameters
    ----------
    out_dir : path-like
        Output folder.
    quick : bool, default False
        Small sizes (seconds to a minute), for a first look and the tests.
    random_seed : int, default 0
        Seed of the data and the sampler.
    seed : optional
        Deprecated alias of ``random_seed``.
    cores : int, optional
        Parallel chains, as in :func:`pymc.sample`.

    Returns
    -------
    list of pathlib.Path
        The files written.

    Examples
    --------
    >>> paths = demo("pmctx-demo", quick=True)  # doctest: +SKIP
    """
    seed = resolve_seed(random_seed, seed)
    n = 200 if quick else 500
    data = seed_section_3_1(n, seed=seed)
    g = gum(section_3_1_formula(max_points=16 if quick else 32), data, family="poisson")
    start = time.perf_counter()
    hyper = fit_evidence(g)
    laplace = g.laplace(draws=1000, seed=seed)
    laplace_seconds = time.perf_counter() - start
    truth = match_constraints({k: fn.support for k, fn in g.design.functions.items()})
    errors = {
        k: float(np.sqrt(np.mean((g.function_summary(laplace, k)["mean"] - truth[k]) ** 2)))
        for k in g.function_names
    }
    info = {
        "n": n,
        "laplace_seconds": laplace_seconds,
        "log_evidence": hyper.objective,
        "hyperparameters": hyper.hyperparameters,
        "laplace_rmse": errors,
    }
    paths = write_outputs(laplace, out_dir, "gum_laplace", gum_model=g, truth=truth, extra=info)
    if not quick:
        nuts = g.sample(cores=cores, random_seed=seed)
        paths += write_outputs(nuts, out_dir, "gum", gum_model=g, truth=truth)
        path = Path(out_dir) / "gum_loo.csv"
        az.compare({"laplace": laplace, "nuts": nuts}).to_csv(path)
        paths.append(path)
    return paths


def fit_data(
    data: dict,
    *,
    draws: int = SAMPLE_DEFAULTS["draws"],
    tune: int = SAMPLE_DEFAULTS["tune"],
    chains: int = SAMPLE_DEFAULTS["chains"],
    cores: int | None = SAMPLE_DEFAULTS["cores"],
    random_seed=SAMPLE_DEFAULTS["random_seed"],
    progressbar: bool | None = SAMPLE_DEFAULTS["progressbar"],
    idata_kwargs: dict | None = SAMPLE_DEFAULTS["idata_kwargs"],
    seed=None,
    formula: str | None = None,
    family: str = "gaussian",
    **options,
):
    """Declare ``gum(formula, data["columns"], family=family, **options)`` and run NUTS.

    Parameters
    ----------
    data : dict
        Validated data as :mod:`pmctx.schema` loads it, ``{"columns": ..., "options": ...}``.
    draws, tune, chains, cores, random_seed, progressbar, idata_kwargs
        As in :func:`pymc.sample` (same defaults).
    seed : optional
        Deprecated alias of ``random_seed``.
    formula : str, optional
        The model formula, when not stored in the data.
    family : str, default "gaussian"
        Response family (``gaussian``, ``bernoulli``, ``poisson``, ``negative_binomial``).
    **options
        Model options (see ``SPEC.options``).

    Returns
    -------
    arviz.InferenceData
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
    g = gum(formula, data["columns"], family=family, **options)
    return g.sample(
        draws=draws,
        tune=tune,
        chains=chains,
        cores=cores,
        random_seed=resolve_seed(random_seed, seed),
        progressbar=progressbar,
        idata_kwargs=idata_kwargs,
    )


def fit(
    data_path,
    *,
    draws: int = SAMPLE_DEFAULTS["draws"],
    tune: int = SAMPLE_DEFAULTS["tune"],
    chains: int = SAMPLE_DEFAULTS["chains"],
    cores: int | None = SAMPLE_DEFAULTS["cores"],
    random_seed=SAMPLE_DEFAULTS["random_seed"],
    progressbar: bool | None = SAMPLE_DEFAULTS["progressbar"],
    idata_kwargs: dict | None = SAMPLE_DEFAULTS["idata_kwargs"],
    seed=None,
    out_dir: Path = Path("pmctx-fit"),
    **options,
) -> list[Path]:
    """Fit a GUM to user data by NUTS.

    ``data_path`` is a ``.npz`` or ``.csv`` file with the regressor columns and the response.
    The model is given by the string key/column ``formula`` of a ``.npz`` (e.g.
    ``"y ~ f(x1) * f(x2, kernel='periodic', period=pi) + f(x3)"``) and ``family``
    (``gaussian``/``bernoulli``/``poisson``, default gaussian); a ``.csv`` takes the formula
    from a sidecar ``<file>.formula`` text file (first line formula, optional second line
    family). ``options`` (``formula``, ``family``, ``noise_sd``, ...) override the file's.
    2-D regressors (trials x positions) are supported in ``.npz`` only. Writes
    ``gum_posterior.nc``, ``gum_summary.csv``, ``gum_diagnostics.csv`` into ``out_dir``.

    Parameters
    ----------
    data_path : str or path-like
        The data file (layout in :mod:`pmctx.schema` and the "Fitting your own data" guide).
    draws, tune, chains, cores, random_seed, progressbar, idata_kwargs
        As in :func:`pymc.sample` (same defaults).
    seed : optional
        Deprecated alias of ``random_seed``.
    out_dir : path-like, default "pmctx-fit"
        Output folder for the files.
    **options
        Model options; they override scalars stored in the file.

    Returns
    -------
    list of pathlib.Path
        The files written: posterior, summary, diagnostics and the model's figures.

    Examples
    --------
    >>> paths = fit("data.npz", out_dir="pmctx-fit")  # doctest: +SKIP
    """
    from pmctx.schema import load_gum

    data = load_gum(data_path, options)
    options = {**data.pop("options"), **options}
    idata = fit_data(
        data,
        draws=draws,
        tune=tune,
        chains=chains,
        cores=cores,
        random_seed=resolve_seed(random_seed, seed),
        progressbar=progressbar,
        idata_kwargs=idata_kwargs,
        **options,
    )
    return write_outputs(idata, out_dir)


def fit_unit(data: dict, *, random_seed=None, method: str = "laplace", draws: int = 1000,
             **options):  # fmt: skip
    """One batch unit: a Laplace fit (default) or NUTS (``method="nuts"``, :func:`fit_data`);
    ``formula`` and ``family`` come from ``options`` or from the data (an ``.npz`` entry or a
    column).

    Parameters
    ----------
    data : dict
        One unit's columns, optionally with ``formula``, ``family`` and ``noise_sd`` entries.
    random_seed : int, optional
        Seed of the Laplace draws or of NUTS.
    method : {"laplace", "nuts"}, default "laplace"
        Laplace approximation (seconds per unit) or NUTS through :func:`fit_data`.
    draws : int, default 1000
        Posterior draws.
    **options
        ``formula``, ``family`` and further :func:`pmctx.gum.gum` (Laplace) or
        :func:`fit_data` (NUTS) options.

    Returns
    -------
    arviz.InferenceData
        The unit's fit.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> unit = {"x": rng.uniform(0, 2, 30), "formula": "y ~ f(x)"}
    >>> unit["y"] = rng.normal(np.sin(unit["x"]), 0.3)
    >>> fit_unit(unit, random_seed=0, draws=50, noise_sd=0.3).posterior["f_x"].shape[:2]
    (1, 50)
    """
    from pmctx.schema import stored_scalar

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
    seed = 0 if random_seed is None else int(random_seed)
    return gum(formula, data, family=family, **options).laplace(draws=draws, seed=seed)


def _spec():
    from pmctx.gum.simulate import invariants as sbc_quantities
    from pmctx.gum.simulate import simulate
    from pmctx.registry import ModelSpec
    from pmctx.schema import load_gum

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
        population=("intercept",),
        options={
            "formula": 'model formula, e.g. "y ~ f(x1) * f(x2) + f(x3)"',
            "family": "gaussian, bernoulli, poisson or negative_binomial (default gaussian)",
            "noise_sd": "fix the Gaussian noise sd (default: sampled)",
            "alpha": "fix the negative-binomial dispersion (default: sampled)",
        },
        advice=CONVERGENCE_ADVICE,
        demo_seconds=(11, 8),
    )


#: The model's entry in the registry (:mod:`pmctx.registry`).
SPEC = _spec()
