"""The toolbox's outputs for a fitted GUM: function bands, design matrix, binned data vs
prediction, explained variance, and a model comparison table (PSIS-LOO plus Laplace evidence).

Examples
--------
>>> import numpy as np
>>> from pmctx.gum import gum
>>> from pmctx.gum.outputs import binned_fit, explained_variance, function_bands
>>> rng = np.random.default_rng(0)
>>> data = {"x": rng.uniform(0, 2, 150)}
>>> data["y"] = rng.poisson(np.exp(np.sin(2 * data["x"])))
>>> g = gum("y ~ f(x, max_points=10)", data, family="poisson")
>>> idata = g.laplace(draws=300)
>>> list(function_bands(g, idata)["f_x"].columns)
['x', 'mean', 'sd', 'lower', 'upper']
>>> list(binned_fit(g, idata, "x", bins=5).columns)
['x', 'observed', 'predicted', 'lower', 'upper', 'count']
>>> bool(0 < explained_variance(g, idata)["r2"] < 1)
True
"""

from __future__ import annotations

import arviz as az
import numpy as np
import pandas as pd

from pmctx.gum.basis import quantile_bins
from pmctx.memory import (
    LOG_LIKELIHOOD_BYTES,
    PER_DRAW_BYTES,
    PREDICTIVE_BYTES,
    check_output_memory,
    nbytes,
    subset_draws,
    thin_to_fit,
)
from pmctx.validation import check_int

__all__ = [
    "CONVERGENCE_ADVICE",
    "binned_fit",
    "check_fit_memory",
    "comparison_table",
    "convergence_check",
    "design_matrix",
    "explained_variance",
    "function_bands",
    "invariants",
    "log_likelihood_thin",
]


def function_bands(gum_model, idata, *, x: dict | None = None, hdi_prob=0.94) -> dict:
    """``{function: DataFrame(x, mean, sd, lower, upper)}`` for every term.

    On each function's support by default; ``x={"f_angle": grid}`` evaluates a function
    exactly at other inputs (GP conditional, see :mod:`pmctx.gum.predict`).

    Parameters
    ----------
    gum_model : GumModel
        A model declared by :func:`pmctx.gum.gum`.

    idata : xarray.DataTree
        Posterior draws of the model.
    x : dict, optional
        ``{function: inputs}`` to evaluate at instead of the support.
    hdi_prob : float, default 0.94
        Mass of the equal-tailed band.

    Returns
    -------
    dict of pandas.DataFrame
        Per function: ``x``, ``mean``, ``sd``, ``lower``, ``upper``.
    """
    out = {}
    tail = (1.0 - hdi_prob) / 2.0
    for name in gum_model.function_names:
        if x is None or name not in x:
            out[name] = gum_model.function_summary(idata, name, hdi_prob=hdi_prob)
            continue
        grid = np.asarray(x[name], dtype=float)
        values = gum_model.function_values(name, grid, idata).reshape(-1, grid.size)
        out[name] = pd.DataFrame(
            {
                "x": grid,
                "mean": values.mean(0),
                "sd": values.std(0),
                "lower": np.quantile(values, tail, axis=0),
                "upper": np.quantile(values, 1 - tail, axis=0),
            }
        )
    return out


def design_matrix(gum_model) -> pd.DataFrame:
    """Every function's basis at the data, summed over positions: one column per parameter
    (``f_x[0.25]`` a GP's support point, ``w_g[level]`` a weight, ``b_x`` a slope), plus the
    values of fixed terms. In a product each column multiplies the other factors' values.

    Parameters
    ----------
    gum_model : GumModel
        A model declared by :func:`pmctx.gum.gum`.

    Returns
    -------
    pandas.DataFrame
        One row per observation, one column per parameter (or fixed term).
    """
    d = gum_model.design
    columns = {}
    for block in d.blocks:
        for factor in block:
            for use in factor:
                if use.basis is None:
                    columns[use.name] = columns.get(use.name, 0) + use.fixed_values.sum(1)
                    continue
                fn = d.functions[use.name]
                labels = gum_model.labels.get(use.name, fn.support)
                if fn.levels is not None:  # grouped GP: one column per (level, point)
                    labels = [f"{g}|{x}" for g in fn.level_names for x in labels]
                summed = use.basis.sum(axis=1)
                for k, label in enumerate(labels):
                    key = use.name if summed.shape[1] == 1 else f"{use.name}[{label}]"
                    columns[key] = columns.get(key, 0) + summed[:, k]
    return pd.DataFrame(columns)


def binned_fit(gum_model, idata, column: str, *, bins=10, hdi_prob=0.94) -> pd.DataFrame:
    """Observed mean response against the posterior mean prediction in quantile bins of
    regressor ``column`` (1-D), with a band of the predicted bin mean.

    Parameters
    ----------
    gum_model : GumModel
        A model declared by :func:`pmctx.gum.gum`.

    idata : xarray.DataTree
        Posterior draws of the model.
    column : str
        A 1-D regressor column.
    bins : int, default 10
        Quantile bins (>= 2).
    hdi_prob : float, default 0.94
        Mass of the band.

    Returns
    -------
    pandas.DataFrame
        One row per bin: centre ``x``, observed and predicted means and the band.
    """
    bins = check_int(bins, "bins", minimum=2)
    x = np.asarray(gum_model._training_columns[column], dtype=float)
    if x.shape[1] != 1:
        raise ValueError(f"binned_fit needs a 1-D regressor; {column!r} has {x.shape[1]} columns.")
    x = x[:, 0]
    edges, centres = quantile_bins(x, bins)
    index = np.searchsorted(edges, x, side="right")
    mean = gum_model.predict(gum_model._training_columns, idata, kind="mean").values
    mean = mean.reshape(-1, x.size)
    y = gum_model.design.y
    tail = (1.0 - hdi_prob) / 2.0
    rows = []
    for k, centre in enumerate(centres):
        sel = index == k
        per_draw = mean[:, sel].mean(axis=1)
        rows.append(
            {
                "x": centre,
                "observed": y[sel].mean(),
                "predicted": per_draw.mean(),
                "lower": np.quantile(per_draw, tail),
                "upper": np.quantile(per_draw, 1 - tail),
                "count": int(sel.sum()),
            }
        )
    return pd.DataFrame(rows)


def explained_variance(gum_model, idata) -> pd.Series:
    """Bayesian R^2 of the mean response draws (per draw, ``var(mean) / (var(mean) +
    var(y - mean))`` over the observations, as ArviZ 0.x's ``r2_score`` and ArviZ 1's
    ``residual_r2`` compute it) and the fraction of the response variance explained by the
    posterior mean prediction.

    Parameters
    ----------
    gum_model : GumModel
        A model declared by :func:`pmctx.gum.gum`.

    idata : xarray.DataTree
        Posterior draws of the model.

    Returns
    -------
    pandas.Series
        ``r2`` (mean over draws), ``r2_sd`` (its standard deviation over draws) and
        ``variance_explained``.
    """
    mean = gum_model.predict(gum_model._training_columns, idata, kind="mean").values
    mean = mean.reshape(-1, gum_model.design.n_obs)
    y = gum_model.design.y
    var_mean = mean.var(axis=1)
    r2 = var_mean / (var_mean + (y - mean).var(axis=1))
    resid = y - mean.mean(axis=0)
    return pd.Series(
        {
            "r2": float(r2.mean()),
            "r2_sd": float(r2.std()),
            "variance_explained": float(1.0 - resid.var() / y.var()),
        }
    )


def comparison_table(fits: dict, **kwargs) -> pd.DataFrame:
    """``az.compare`` of ``{name: (GumModel, DataTree)}`` plus each model's Laplace log
    evidence (NaN for models without a Laplace fit) and its difference to the best.

    Parameters
    ----------
    fits : dict
        ``{name: (GumModel, DataTree)}``.
    **kwargs
        Passed to :func:`arviz.compare`.

    Returns
    -------
    pandas.DataFrame
        The compare table with ``log_evidence`` and ``log_evidence_diff`` columns.
    """
    table = az.compare({name: idata for name, (_, idata) in fits.items()}, **kwargs)
    evidence = {
        name: (g.laplace_result.log_evidence if g.laplace_result is not None else np.nan)
        for name, (g, _) in fits.items()
    }
    table["log_evidence"] = pd.Series(evidence)
    table["log_evidence_diff"] = np.nanmax(table["log_evidence"]) - table["log_evidence"]
    return table


def invariants(idata):
    """Function values on their grids and the scalar hyperparameters/offsets.

    Every posterior variable except the non-centred coordinates (``*_z``), which are an
    internal parametrisation.

    Parameters
    ----------
    idata : xarray.DataTree
        A GUM fit (NUTS or Laplace).

    Returns
    -------
    xarray.Dataset
        Function values on their grids, offsets, intercept and hyperparameters.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> data = {"x": rng.uniform(0, 2, 30)}
    >>> data["y"] = rng.poisson(np.exp(np.sin(data["x"])))
    >>> from pmctx.gum import gum
    >>> g = gum("y ~ f(x, lengthscale=0.5)", data, family="poisson")
    >>> idata = g.laplace(draws=20)

    >>> sorted(invariants(idata).data_vars)
    ['f_x', 'intercept']
    """
    posterior = idata.posterior.to_dataset()
    names = [v for v in posterior.data_vars if not str(v).endswith("_z")]
    return posterior[names]


#: What to do when a GUM fit has not converged (ends the ConvergenceWarning).
CONVERGENCE_ADVICE = (
    "Run longer; divergences point to a product of functions with "
    "secondary modes: compare with g.laplace()"
)


def convergence_check():
    """The GUM's :class:`pmctx.convergence.ModelCheck` (its invariants and advice).

    Returns
    -------
    pmctx.convergence.ModelCheck
        What ``GumModel.sample`` hands to :func:`pmctx.convergence.report_after_fit`.

    Examples
    --------
    >>> convergence_check().name
    'gum'
    """
    from pmctx.convergence import ModelCheck

    return ModelCheck("gum", invariants=invariants, advice=CONVERGENCE_ADVICE)


def log_likelihood_thin(n_obs: int, *, draws: int, chains: int, keep="auto") -> int:
    """Every how many draws a NUTS fit keeps the pointwise log-likelihood (1: every draw).

    ``keep="auto"`` (``GumModel.sample``'s ``log_likelihood`` default): every draw while the
    float32 array takes at most :data:`pmctx.memory.LOG_LIKELIHOOD_BYTES` (1 GiB), else every
    k-th draw, the smallest k that fits (100,000 rows x 4 x 1,000 draws: every 2nd draw,
    0.8 GB instead of 1.6 GB). ``"all"`` keeps every draw, an integer k every k-th.

    Parameters
    ----------
    n_obs : int
        Rows of the data.
    draws, chains : int
        Draws per chain and chains.
    keep : {"auto", "all"} or int, default "auto"
        The rule, or a thinning interval (1 or more).

    Returns
    -------
    int
        The thinning interval, in ``1..draws``.

    Examples
    --------
    >>> log_likelihood_thin(100_000, draws=1000, chains=4), log_likelihood_thin(
    ...     100_000, draws=1000, chains=4, keep="all")
    (2, 1)
    """
    if isinstance(keep, str) and keep in ("auto", "all"):
        if keep == "all":
            return 1
        return thin_to_fit(chains, draws, n_obs, itemsize=4, budget=LOG_LIKELIHOOD_BYTES)
    if isinstance(keep, bool) or not isinstance(keep, int | np.integer) or keep < 1:
        raise ValueError(
            f"log_likelihood must be 'auto', 'all', False or a thinning interval (an integer "
            f">= 1), got {keep!r}; pass log_likelihood='all' to keep every draw."
        )
    return int(min(keep, max(draws, 1)))


def check_fit_memory(design, *, draws: int, chains: int, posterior_predictive=True,
                     log_likelihood_thin: int = 1) -> int:  # fmt: skip
    """Warn :class:`pmctx.exceptions.MemoryWarning` before a NUTS fit whose outputs would pass
    half the available memory (:func:`pmctx.memory.check_output_memory`).

    The pointwise ``log_likelihood`` keeps one value per row and kept draw (float32 once
    float64 would pass :data:`pmctx.memory.PER_DRAW_BYTES`); the posterior predictive keeps
    the draws that fit :data:`pmctx.memory.PREDICTIVE_BYTES`; the posterior itself holds
    function values on their grids (small).

    Parameters
    ----------
    design : pmctx.gum.design.GumDesign
        The numeric design (``n_obs`` rows, ``n_free`` free values).
    draws, chains : int
        Draws per chain and chains.
    posterior_predictive : bool, default True
        Whether the posterior predictive group is kept.
    log_likelihood_thin : int, default 1
        The log-likelihood is kept at every this many draws (:func:`log_likelihood_thin`);
        0: not kept.

    Returns
    -------
    int
        Bytes of the outputs.

    Examples
    --------
    >>> from pmctx.gum import gum
    >>> rng = np.random.default_rng(0)
    >>> x = rng.uniform(0, 2, 100_000)
    >>> g = gum("y ~ f(x, max_points=8)", {"x": x, "y": rng.poisson(1.0, x.size)},
    ...         family="poisson")
    >>> round(check_fit_memory(g.design, draws=1000, chains=4) / 1e9, 2)
    1.73
    >>> round(check_fit_memory(g.design, draws=1000, chains=4, log_likelihood_thin=2) / 1e9, 2)
    0.93
    """
    n = int(design.n_obs)
    kept = -(-draws // log_likelihood_thin) if log_likelihood_thin else 0
    ll = nbytes((chains, kept, n))
    if ll > PER_DRAW_BYTES:
        ll //= 2
    outputs = {
        "log_likelihood": ll,
        "posterior (free values)": 2 * nbytes((chains, draws, design.n_free)),
    }
    if posterior_predictive:
        kept = subset_draws(chains, draws, n, budget=PREDICTIVE_BYTES)
        outputs["posterior_predictive"] = 2 * nbytes((chains, kept, n))  # predictor + draws
    return check_output_memory(
        outputs,
        what=f"GUM NUTS fit ({n} rows, {chains} x {draws} draws)",
        advice="Keep less: fewer draws, posterior_predictive=False, or log_likelihood=k (every "
        "k-th draw) or False.",
        stacklevel=4,
    )
