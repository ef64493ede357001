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
from pmctx.gum.synthetic import match_constraints, section_3_1_formula, seed_section_3_1
from pmctx.io import save_figure, save_idata, write_summary

__all__ = [
    "GP",
    "Categorical",
    "Fixed",
    "GumModel",
    "Linear",
    "demo",
    "fit",
    "gum",
    "plot_functions",
    "section_3_1_formula",
    "seed_section_3_1",
]


def plot_functions(gum_model: GumModel, idata, *, truth: dict | None = None, title: str = ""):
    """One panel per function: posterior mean and 94% band, optionally against the truth."""
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


def _write_outputs(gum_model, idata, out_dir: Path, stem: str, truth=None, extra=None):
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    var_names = gum_model.function_names + [
        v for v in idata.posterior.data_vars if v.startswith("c_") or v == "intercept"
    ]
    var_names = [v for v in var_names if not v.endswith("_z")]
    paths = [
        save_idata(idata, out_dir / f"{stem}.nc"),
        write_summary(idata, out_dir / f"{stem}_summary.csv", var_names=var_names),
        save_figure(
            plot_functions(gum_model, idata, truth=truth), out_dir / f"{stem}_functions.png"
        ),
    ]
    if extra:
        path = out_dir / f"{stem}_info.json"
        path.write_text(json.dumps(extra, indent=2, default=float))
        paths.append(path)
    return paths


def demo(out_dir, *, quick: bool = False, seed: int = 0) -> list[Path]:
    """Seed section 3.1: Poisson ``f1(x1) f2(x2) + f3(x3)``, Laplace (+ evidence-fitted
    lengthscales) and, unless ``quick``, NUTS; recovered functions against the truth."""
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
    paths = _write_outputs(g, laplace, out_dir, "gum_laplace", truth, info)
    if not quick:
        nuts = g.sample(draws=500, tune=500, chains=2, seed=seed)
        paths += _write_outputs(g, nuts, out_dir, "gum_nuts", truth)
        path = Path(out_dir) / "gum_loo.csv"
        az.compare({"laplace": laplace, "nuts": nuts}).to_csv(path)
        paths.append(path)
    return paths


def fit(data_path, *, draws: int, tune: int, chains: int, seed: int, out_dir) -> list[Path]:
    """Fit a GUM to user data by NUTS.

    ``data_path`` is a ``.npz`` or ``.csv`` file with the regressor columns and the response.
    The model is given by the string key/column ``formula`` of a ``.npz`` (e.g.
    ``"y ~ f(x1) * f(x2, kernel='periodic', period=pi) + f(x3)"``) and ``family``
    (``gaussian``/``bernoulli``/``poisson``, default gaussian); a ``.csv`` takes the formula
    from a sidecar ``<file>.formula`` text file (first line formula, optional second line
    family). 2-D regressors (trials x positions) are supported in ``.npz`` only.
    """
    data_path = Path(data_path)
    if data_path.suffix == ".npz":
        with np.load(data_path, allow_pickle=False) as archive:
            data = {key: archive[key] for key in archive.files}
        formula = str(data.pop("formula", "")) or None
        family = str(data.pop("family", "gaussian"))
    elif data_path.suffix == ".csv":
        import pandas as pd

        data = pd.read_csv(data_path)
        sidecar = data_path.with_suffix(".formula")
        if not sidecar.exists():
            raise ValueError(f"A .csv needs its model in {sidecar} (formula, then family).")
        lines = [line.strip() for line in sidecar.read_text().splitlines() if line.strip()]
        formula, family = lines[0], (lines[1] if len(lines) > 1 else "gaussian")
    else:
        raise ValueError(f"fit reads .npz or .csv files, got {data_path.name!r}.")
    if not formula:
        raise ValueError(
            f"{data_path.name} holds no 'formula' entry. Save one, e.g. "
            "np.savez(path, formula='y ~ f(x)', family='poisson', x=..., y=...)."
        )
    g = gum(formula, data, family=family)
    idata = g.sample(draws=draws, tune=tune, chains=chains, seed=seed)
    return _write_outputs(g, idata, out_dir, "gum_fit")
