"""``pmctx.summary(idata)``: posterior summary of the quantities that mean something.

By default it summarises the fit's label-invariant quantities (its model's ``invariants``,
see :mod:`pmctx.registry`), not label-switching latents: ``n_active``, ``loglik`` and
reconstructions for the IBP; occupied causes, co-assignment and V for the CRP; circular
statistics of theta, smoothness and pinwheels for the von Mises map; function values and
hyperparameters for the GUM. Circular quantities (``attrs["period"]``) get the circular
mean and circular sd, an interval centred on the circular mean, and R-hat/ESS on
(cos, sin) — never linear statistics of angles.

Circular rows follow one convention, so that their columns agree as written:

* ``mean`` is the circular mean wrapped into ``[0, period)``;
* ``lower`` and ``upper`` lie on the mean's branch: they are the mean plus the equal-tailed
  quantiles of each draw's signed deviation from it (a deviation lies in
  ``[-period/2, period/2)``). So ``lower <= mean <= upper`` holds in every row (unless more
  than ``(1 + prob) / 2`` of the draws lie on one side of the mean, a posterior so skewed
  that its equal-tailed interval excludes the mean, as can happen for a linear quantity),
  and an end may fall below 0 or above ``period``: the interval is the arc from ``lower``
  to ``upper`` read modulo ``period`` (e.g. ``[-0.2, 0.3]`` with period pi is the arc
  through 0 from ``pi - 0.2`` to 0.3);
* the ``period`` column gives the period (NaN for linear rows), so a ``*_summary.csv``
  read on its own says which rows are circular and modulo what.

Examples
--------
>>> import numpy as np, xarray as xr
>>> from pmctx.summarize import summary
>>> rng = np.random.default_rng(0)
>>> angle = np.mod(np.pi + 0.1 * rng.normal(size=(2, 200)), 2 * np.pi)
>>> ds = xr.Dataset({"phase": (("chain", "draw"), angle, {"period": 2 * np.pi})})
>>> row = summary(ds).loc["phase"]
>>> round(float(row["mean"]), 1), row["kind"]
(3.1, 'circular')
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

from pmctx.convergence import element_diagnostics, flatten_elements

__all__ = ["summary"]


def _coordinate_text(values: np.ndarray) -> list[str]:
    """Coordinate labels: floats with the fewest significant digits that keep them distinct
    (``f_x[0.006374]``, not ``f_x[0.006373541236234237]``), anything else as ``str``."""
    if values.dtype.kind != "f":
        return [str(v) for v in values]
    for digits in (4, 6, 8, 12):
        text = [f"{v:.{digits}g}" for v in values]
        if len(set(text)) == len(set(values.tolist())):
            return text
    return [repr(float(v)) for v in values]


def _labels(name: str, da: xr.DataArray) -> list[str]:
    dims = [d for d in da.dims if d not in ("chain", "draw")]
    if not dims:
        return [name]
    coords = [
        _coordinate_text(np.asarray(da[d].values)) if d in da.coords else range(da.sizes[d])
        for d in dims
    ]
    index = np.meshgrid(*[np.arange(len(c)) for c in coords], indexing="ij")
    flat = [i.ravel() for i in index]
    return [
        f"{name}[{', '.join(str(c[k[i]]) for c, k in zip(coords, flat, strict=True))}]"
        for i in range(flat[0].size)
    ]


def _circular_stats(x: np.ndarray, period: float, prob: float):
    """Circular mean, sd and ``prob`` interval of draws ``x`` (draw, element).

    The mean is wrapped into ``[0, period)``; the interval ends are the mean plus the
    equal-tailed quantiles of the draws' signed deviations from it, so they lie on the mean's
    branch (``lower <= mean <= upper``, an end possibly outside ``[0, period)``).
    """
    scale = period / (2.0 * np.pi)
    angle = x / scale
    resultant = np.mean(np.exp(1j * angle), axis=0)
    centre = np.angle(resultant)
    length = np.clip(np.abs(resultant), 1e-300, 1.0)
    sd = np.sqrt(-2.0 * np.log(length)) * scale
    offset = np.mod(angle - centre + np.pi, 2.0 * np.pi) - np.pi
    mean = np.mod(centre * scale, period)
    mean = np.where(mean >= period, 0.0, mean)  # np.mod(-1e-17, p) rounds to p
    tail = (1.0 - prob) / 2.0
    lower, upper = mean + np.quantile(offset, [tail, 1 - tail], axis=0) * scale  # one pass
    return mean, sd, lower, upper


def summary(idata, var_names=None, *, prob: float = 0.94) -> pd.DataFrame:
    """Posterior summary table of label-invariant quantities, one row per element.

    Parameters
    ----------
    idata : xarray.DataTree, arviz.InferenceData or xarray.Dataset
        A pmctx fit (its model's invariants are summarised; a fit pmctx did not make: its
        posterior), one group of a fit (e.g. ``fit.posterior``) or a dataset with
        ``chain``/``draw`` dims.
    var_names : list of str, optional
        Quantities to include (default: all the model's label-invariant quantities).
    prob : float, default 0.94
        Mass of the equal-tailed interval (``lower``, ``upper``).

    Returns
    -------
    pandas.DataFrame
        Columns ``kind, mean, sd, lower, upper, r_hat, ess_bulk, ess_tail, period``.
        ``period`` is NaN for linear rows. In circular rows ``mean`` lies in
        ``[0, period)`` and ``lower``/``upper`` on the mean's branch, so that
        ``lower <= mean <= upper`` as written; an end may lie outside ``[0, period)`` and
        the interval is read modulo ``period`` (see the module docstring). For a fit,
        ``attrs["sampling"]`` says how its run ended (:mod:`pmctx.continuation`: draws
        requested and kept, extensions, stop reason).

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> rng = np.random.default_rng(0)
    >>> ds = xr.Dataset({"loglik": (("chain", "draw"), rng.normal(-50.0, 2.0, (2, 300)))})
    >>> table = summary(ds)
    >>> table.loc["loglik", "kind"], round(float(table.loc["loglik", "mean"]))
    ('linear', -50)
    """
    from pmctx.registry import invariants_of
    from pmctx.trees import as_datatree

    sampling = {}
    if isinstance(idata, xr.Dataset):
        dataset = idata
    elif isinstance(idata, xr.DataTree) and not idata.children and idata.data_vars:
        dataset = idata.to_dataset()  # one group of a fit
    else:
        idata = as_datatree(idata)
        dataset = invariants_of(idata)
        if "sample_stats" in idata.children:
            attrs = idata["sample_stats"].attrs
            sampling = {k[6:]: attrs[k] for k in attrs if k.startswith("pmctx_")}
    names = list(dataset.data_vars) if var_names is None else list(var_names)
    frames = []
    for name in names:
        da = dataset[name].transpose("chain", "draw", ...)
        x = flatten_elements(da.values)
        pooled = x.reshape(-1, x.shape[2])
        period = da.attrs.get("period")
        if period is None:
            tail = (1.0 - prob) / 2.0
            lower, upper = np.quantile(pooled, [tail, 1 - tail], axis=0)  # one partition
            stats = (pooled.mean(axis=0), pooled.std(axis=0), lower, upper)
        else:
            stats = _circular_stats(pooled, float(period), prob)
        diag = element_diagnostics(x, period)
        frames.append(
            pd.DataFrame(
                {
                    "kind": "circular" if period is not None else "linear",
                    "mean": stats[0],
                    "sd": stats[1],
                    "lower": stats[2],
                    "upper": stats[3],
                    "r_hat": diag["r_hat"],
                    "ess_bulk": diag["ess_bulk"],
                    "ess_tail": diag["ess_tail"],
                    "period": np.nan if period is None else float(period),
                },
                index=_labels(name, da),
            )
        )
    table = pd.concat(frames) if frames else pd.DataFrame()
    if sampling:
        table.attrs["sampling"] = sampling
    return table
