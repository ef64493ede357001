"""Population view: per-unit results in one Dataset; per-model summaries; pooled functions."""

from __future__ import annotations

import numpy as np
import pytest
from pmctx.models.gum import fit_unit as fit_gum

from pmctx.batch import run_batch
from pmctx.batch.population import gather, per_unit_table, pooled_functions, population_summary
from pmctx.batch.toy import normal_mean_fit


def test_gather_stacks_units(tmp_path):
    units = {"a": {"y": [0.0, 0.1]}, "b": {"y": [2.0, 2.2, 1.9]}, "c": {"y": [-1.0]}}
    run_batch(normal_mean_fit, units, tmp_path, local=True, options={"draws": 50})
    ds = gather(tmp_path)
    assert ds["mu"].dims == ("unit", "sample") and ds["mu"].shape == (3, 50)
    table = per_unit_table(ds)
    assert table.loc["b", "mu_mean"] > table.loc["a", "mu_mean"] > table.loc["c", "mu_mean"]
    summary = population_summary("any", tmp_path)
    assert summary["population"].loc["mu_mean", "units"] == 3


def test_gather_without_results_says_so(tmp_path):
    with pytest.raises(ValueError, match="no finished units"):
        gather(tmp_path)


def test_gum_functions_pooled_by_precision(tmp_path):
    rng = np.random.default_rng(0)
    units = {}
    for i, n in enumerate((40, 400)):  # a small and a large neuron
        x = rng.uniform(0, 1, n)
        units[f"n{i}"] = {"x": x, "y": np.sin(2 * np.pi * x) + 0.3 * rng.normal(size=n)}
    options = {"formula": "y ~ f(x, lengthscale=0.2, max_points=10)", "noise_sd": 0.3,
               "draws": 300}  # fmt: skip
    run_batch(fit_gum, units, tmp_path, local=True, options=options)
    pooled = pooled_functions(tmp_path, grid_size=20)
    small = population_summary("gum", tmp_path)
    assert "functions" in small and "intercept_mean" in small["units"].columns
    # Where both units cover the grid: the inverse-variance average of the units' posteriors.
    from pmctx.io import load_idata

    both = pooled["f_x_units"].values == 2
    assert both.sum() >= 15
    grid = pooled["f_x_x"].values[both]
    means, variances = [], []
    for name in ("n0", "n1"):
        f = load_idata(tmp_path / "units" / f"{name}.nc").posterior["f_x"]
        x, draws = f["f_x_x"].values, f.values.reshape(-1, f.shape[-1])
        means.append(np.interp(grid, x, draws.mean(0)))
        variances.append(np.interp(grid, x, draws.var(0)))
    weights = 1 / np.array(variances)
    expected = (weights * np.array(means)).sum(0) / weights.sum(0)
    np.testing.assert_allclose(pooled["f_x_mean"].values[both], expected, rtol=1e-10)
    sd = pooled["f_x_sd"].values[both]
    assert (sd < np.sqrt(np.min(variances, axis=0))).all()
    # The large neuron dominates: the pooled curve is nearer to it than to the small one.
    assert np.abs(expected - means[1]).mean() < np.abs(expected - means[0]).mean()
