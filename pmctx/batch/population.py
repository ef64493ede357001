"""Population view of a batch: per-unit posteriors in one Dataset, summaries per model.

:func:`gather` stacks every finished unit's posterior draws into one ``xarray.Dataset`` with
a ``unit`` dim (draws of all chains in a ``sample`` dim; units with fewer draws are padded
with NaN). :func:`population_summary` gives each model's per-unit table and the
population-level view of each model's headline quantities (its spec's ``population``
variables or scalar invariants): CRP alpha (or number of causes) per subject and its spread
over subjects, IBP number of features per subject, von Mises map smoothness and pinwheels
per animal; :func:`pooled_functions` averages GUM functions over units weighted by
posterior precision.

Examples
--------
>>> import tempfile
>>> from pmctx.batch import run_batch
>>> from pmctx.batch.toy import normal_mean_fit
>>> out = tempfile.mkdtemp()
>>> _ = run_batch(normal_mean_fit, {"a": {"y": [0.0]}, "b": {"y": [2.0, 2.2]}}, out, local=True)
>>> gather(out)["mu"].dims
('unit', 'sample')
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr

from pmctx.validation import check_choice

__all__ = ["gather", "per_unit_table", "pooled_functions", "population_summary"]


def _ok_units(out_dir) -> pd.DataFrame:
    from pmctx.batch.engine import load_records

    records = load_records(out_dir)
    if records.empty or not (records["status"] == "ok").any():
        raise ValueError(f"{out_dir} holds no finished units; run the batch first.")
    return records[records["status"] == "ok"].sort_values("unit")


def _unit_posterior(path, var_names, groups=("posterior", "sample_stats")) -> xr.Dataset:
    from pmctx.io import load_idata

    idata = load_idata(path)
    parts = []
    for group in groups:
        if group not in idata.children:
            continue
        ds = idata[group].to_dataset()
        keep = [
            name
            for name, var in ds.data_vars.items()
            if (name in var_names if var_names is not None else set(var.dims) <= {"chain", "draw"})
            and var.dtype.kind in "biuf"
        ]
        parts.append(ds[keep])
    ds = xr.merge(parts, compat="override") if parts else xr.Dataset()
    ds = ds.stack(sample=("chain", "draw"))
    return ds.drop_vars(["sample", "chain", "draw"], errors="ignore").assign_coords(
        sample=np.arange(ds.sizes["sample"])
    )


def gather(out_dir, var_names=None) -> xr.Dataset:
    """Posterior draws of every finished unit in one Dataset with dims ``(unit, sample, ...)``.

    By default the scalar variables of ``posterior`` and ``sample_stats`` (those with only
    chain and draw dims); ``var_names`` picks variables, vector-valued ones included (their
    coordinates are outer-joined over units). Unit attributes (e.g. ``log_evidence``) become
    ``unit`` variables.

    Parameters
    ----------
    out_dir : path-like
        Batch output folder.
    var_names : sequence of str, optional
        Variables to gather (default: the scalar posterior and sample-stats variables).

    Returns
    -------
    xarray.Dataset
        Dims ``(unit, sample, ...)``, plus ``log_evidence`` per unit when the fits have it.

    Examples
    --------
    >>> import tempfile
    >>> from pmctx.batch import run_batch
    >>> from pmctx.batch.toy import normal_mean_fit
    >>> out = tempfile.mkdtemp()
    >>> _ = run_batch(normal_mean_fit, {"a": {"y": [0.0]}, "b": {"y": [2.0]}}, out, local=True)
    >>> gather(out)["mu"].sizes["unit"]
    2
    """
    from pmctx.io import load_idata

    records = _ok_units(out_dir)
    datasets, evidence = [], {}
    for row in records.itertuples():
        datasets.append(_unit_posterior(row.path, var_names))
        attrs = load_idata(row.path).posterior.attrs
        evidence[row.unit] = float(attrs.get("log_evidence", np.nan))
    ds = xr.concat(datasets, dim="unit", join="outer", coords="minimal", compat="override")
    ds = ds.assign_coords(unit=records["unit"].to_numpy())
    if np.isfinite(list(evidence.values())).any():
        ds["log_evidence"] = ("unit", [evidence[u] for u in ds["unit"].values])
    ds.attrs["source"] = str(Path(out_dir))
    return ds


def per_unit_table(ds: xr.Dataset, names=None, *, hdi_prob: float = 0.94) -> pd.DataFrame:
    """Mean, sd and equal-tailed interval of scalar quantities per unit (rows ``unit``).

    Parameters
    ----------
    ds : xarray.Dataset
        From :func:`gather`.
    names : sequence of str, optional
        Variables to summarise (default: every ``(unit, sample)`` variable).
    hdi_prob : float, default 0.94
        Mass of the equal-tailed interval.

    Returns
    -------
    pandas.DataFrame
        Index ``unit``; columns ``<name>_mean``, ``_sd``, ``_lower``, ``_upper``.

    Examples
    --------
    >>> import numpy as np
    >>> ds = xr.Dataset({"mu": (("unit", "sample"), np.arange(6.0).reshape(2, 3))},
    ...                 coords={"unit": ["a", "b"]})
    >>> per_unit_table(ds)["mu_mean"].tolist()
    [1.0, 4.0]
    """
    names = names or [n for n, v in ds.data_vars.items() if set(v.dims) == {"unit", "sample"}]
    tail = (1.0 - hdi_prob) / 2.0
    columns = {}
    for name in names:
        values = ds[name]
        columns[f"{name}_mean"] = values.mean("sample").values
        columns[f"{name}_sd"] = values.std("sample").values
        columns[f"{name}_lower"] = values.quantile(tail, "sample").values
        columns[f"{name}_upper"] = values.quantile(1 - tail, "sample").values
    return pd.DataFrame(columns, index=pd.Index(ds["unit"].values, name="unit"))


def _is_function(name: str, var) -> bool:
    """A GUM function on its grid: ``f_*`` with (chain, draw, grid) dims, not a ``*_z``."""
    return name.startswith("f_") and not name.endswith("_z") and var.ndim == 3


def pooled_functions(out_dir, *, grid_size: int = 50) -> xr.Dataset:
    """GUM functions averaged over units, each unit weighted by its posterior precision.

    Every unit's posterior mean and variance of each function ``f_*`` are interpolated onto a
    common grid spanning the units' grids; the pooled mean is
    ``sum_u m_u(x) / v_u(x) / sum_u 1 / v_u(x)`` and its sd ``(sum_u 1 / v_u(x))^-1/2``
    (the fixed-effect, inverse-variance average). Categorical functions are pooled by label.

    Parameters
    ----------
    out_dir : path-like
        Batch output folder of GUM fits.
    grid_size : int, default 50
        Points of the common grid of numeric functions.

    Returns
    -------
    xarray.Dataset
        ``<f>_mean``, ``<f>_sd`` and ``<f>_units`` (number of units covering each point) per
        function, on dims ``<f>_x``.

    Examples
    --------
    >>> functions = pooled_functions("gum-fits/")  # doctest: +SKIP
    """
    from pmctx.io import load_idata

    records = _ok_units(out_dir)
    per_function: dict[str, list] = {}
    for row in records.itertuples():
        post = load_idata(row.path).posterior
        functions = [n for n, v in post.data_vars.items() if _is_function(n, v)]
        if not functions and not per_function:  # a model without functions: one file tells
            break
        for name in functions:
            var = post[name]
            x = var[var.dims[2]].values
            draws = var.values.reshape(-1, var.shape[2])
            per_function.setdefault(name, []).append((x, draws.mean(0), draws.var(0)))
    out = xr.Dataset()
    for name, rows in per_function.items():
        numeric = all(np.asarray(x).dtype.kind in "iuf" for x, _, _ in rows)
        if numeric:
            lo = min(float(np.min(x)) for x, _, _ in rows)
            hi = max(float(np.max(x)) for x, _, _ in rows)
            grid = np.linspace(lo, hi, grid_size)
            means = np.array([np.interp(grid, x, m, left=np.nan, right=np.nan) for x, m, _ in rows])
            vars_ = np.array([np.interp(grid, x, v, left=np.nan, right=np.nan) for x, _, v in rows])
        else:
            grid = np.unique(np.concatenate([np.asarray(x).astype(str) for x, _, _ in rows]))
            means = np.full((len(rows), grid.size), np.nan)
            vars_ = np.full_like(means, np.nan)
            for i, (x, m, v) in enumerate(rows):
                idx = np.searchsorted(grid, np.asarray(x).astype(str))
                means[i, idx], vars_[i, idx] = m, v
        weights = np.where(np.isfinite(vars_), 1.0 / np.maximum(vars_, 1e-300), 0.0)
        total = weights.sum(axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            pooled = np.nansum(np.nan_to_num(means) * weights, axis=0) / total
            sd = 1.0 / np.sqrt(total)
        dim = f"{name}_x"
        out[f"{name}_mean"] = (dim, pooled)
        out[f"{name}_sd"] = (dim, sd)
        out[f"{name}_units"] = (dim, (weights > 0).sum(axis=0))
        out = out.assign_coords({dim: grid})
    return out


def _distribution(table: pd.DataFrame, column: str) -> pd.Series:
    values = table[column]
    return pd.Series(
        {"units": values.size, "mean": values.mean(), "sd": values.std(ddof=1),
         "q05": values.quantile(0.05), "median": values.median(), "q95": values.quantile(0.95)},
        name=column,
    )  # fmt: skip


def _invariant_scalars(out_dir, invariants) -> xr.Dataset:
    """Every unit's scalar label-invariant quantities (the spec's ``invariants``), stacked
    as :func:`gather` stacks posterior variables."""
    from pmctx.io import load_idata

    records = _ok_units(out_dir)
    datasets = []
    for row in records.itertuples():
        ds = invariants(load_idata(row.path))
        ds = ds[[n for n, v in ds.data_vars.items() if set(v.dims) == {"chain", "draw"}]]
        ds = ds.stack(sample=("chain", "draw"))
        datasets.append(
            ds.drop_vars(["sample", "chain", "draw"], errors="ignore").assign_coords(
                sample=np.arange(ds.sizes["sample"])
            )
        )
    ds = xr.concat(datasets, dim="unit", join="outer")
    return ds.assign_coords(unit=records["unit"].to_numpy())


def population_summary(model: str, out_dir) -> dict:
    """Per-unit table and the spread over units of each model's headline quantities.

    The headline quantities are the model spec's ``population`` variables, else the scalar
    label-invariant quantities of its ``invariants`` (e.g. a map's smoothness and pinwheel
    count); ``"any"`` takes every scalar posterior variable. Returns a dict: ``"units"``
    (DataFrame, one row per unit), ``"population"`` (DataFrame, distribution over units of
    each per-unit posterior mean) and, when the units hold functions ``f_*`` (GUM),
    ``"functions"`` (:func:`pooled_functions`).

    Parameters
    ----------
    model : str
        The registered model the batch fitted (see :func:`pmctx.registry.model_names`), or
        ``"any"``.
    out_dir : path-like
        Batch output folder.

    Returns
    -------
    dict
        ``"units"``, ``"population"`` and, for functions, ``"functions"``.

    Examples
    --------
    >>> import tempfile
    >>> from pmctx.batch import run_batch
    >>> from pmctx.batch.toy import normal_mean_fit
    >>> out = tempfile.mkdtemp()
    >>> _ = run_batch(normal_mean_fit, {"a": {"y": [0.0]}, "b": {"y": [2.0]}}, out, local=True)
    >>> summary = population_summary("any", out)
    >>> summary["units"].shape[0], sorted(summary)
    (2, ['population', 'units'])
    """
    from pmctx.registry import get_spec, model_names

    check_choice(model, "model", [*model_names(), "any"])
    spec = None if model == "any" else get_spec(model)
    if spec is not None and not spec.population:
        table = per_unit_table(_invariant_scalars(out_dir, spec.invariants))
    else:
        ds = gather(out_dir, var_names=list(spec.population) if spec is not None else None)
        table = per_unit_table(ds)
        if "log_evidence" in ds:
            table["log_evidence"] = ds["log_evidence"].values
    means = [c for c in table.columns if c.endswith("_mean")]
    out = {"units": table, "population": pd.DataFrame([_distribution(table, c) for c in means])}
    if spec is not None:
        functions = pooled_functions(out_dir)
        if functions.data_vars:
            out["functions"] = functions
    return out
