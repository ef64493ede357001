"""Convergence report: warns on unconverged label-invariant quantities, never on converged."""

import warnings

import arviz as az
import numpy as np
import pytest
import xarray as xr
from pmctx.models import crp_conditioning as crp
from pmctx.models import ibp

import pmctx
from pmctx import ConvergenceWarning
from pmctx.conditioning import shipped_design
from pmctx.convergence import check_convergence, convergence_report, element_diagnostics
from pmctx.ibp.data import visuomotor_data


def _ds(values, **attrs):
    return xr.Dataset({"q": (("chain", "draw", "e")[: np.ndim(values)], values, attrs)})


def test_diagnostics_match_arviz():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(3, 400, 4))
    for t in range(1, 400):
        x[:, t] = 0.8 * x[:, t - 1] + 0.6 * x[:, t]
    x[:, :, 0] = np.round(x[:, :, 0])  # ties
    ds = xr.Dataset({"a": (("chain", "draw", "e"), x)})
    diag = element_diagnostics(x)
    np.testing.assert_allclose(diag["r_hat"], az.rhat(ds)["a"].values, rtol=1e-10)
    np.testing.assert_allclose(diag["ess_bulk"], az.ess(ds)["a"].values, rtol=0.01)
    np.testing.assert_allclose(diag["ess_tail"], az.ess(ds, method="tail")["a"].values, rtol=0.01)


def test_constant_quantities_give_no_nan_and_no_numpy_warning():
    x = np.zeros((2, 1000, 3))
    x[:, :, 1] = np.random.default_rng(0).normal(size=(2, 1000))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        report = convergence_report(_ds(x))
        summary = pmctx.summary(_ds(x))
    assert bool(report.loc["q", "converged"]) and report.loc["q", "constant"] == 2
    assert np.isfinite(summary[["r_hat", "ess_bulk", "ess_tail"]].to_numpy()).all()


def test_chains_stuck_at_different_constants_fail():
    x = np.zeros((2, 100))
    x[1] = 1.0
    report = convergence_report(_ds(x))
    assert not report.loc["q", "converged"] and report.loc["q", "r_hat"] > 1.01


def test_circular_quantities_use_cos_and_sin_not_linear_statistics():
    rng = np.random.default_rng(1)
    # Concentrated around 0 = 2 pi: linear statistics see two far-apart clusters.
    angle = np.mod(0.2 * rng.normal(size=(4, 500)), 2 * np.pi)
    ds = _ds(angle, period=2 * np.pi)
    row = pmctx.summary(ds).loc["q"]
    assert row["kind"] == "circular"
    assert min(row["mean"], 2 * np.pi - row["mean"]) < 0.05 and row["sd"] < 0.3
    assert bool(convergence_report(ds).loc["q", "converged"])
    assert np.std(angle) > 2.0  # what a linear sd would have said


def test_warning_names_quantity_figure_and_what_to_do():
    x = np.cumsum(np.random.default_rng(2).normal(size=(2, 200)), axis=1)  # random walk
    with pytest.warns(ConvergenceWarning, match=r"q: R-hat [\d.]+ > 1.01.*Run longer"):
        check_convergence(_ds(x))


def test_short_ibp_run_warns():
    data = visuomotor_data(30, seed=0)
    # K_max=12 leaves room (the chains use up to 8 features with learned hyperparameters, so
    # K_max=6 would fill the truncation): only the shortness of the run is at fault here.
    with pytest.warns(ConvergenceWarning, match="n_active"):
        ibp.sample(data.F, data.X, K_max=12, draws=20, tune=5, chains=2, cores=1, random_seed=0)


def test_converged_fit_does_not_warn():
    design = shipped_design("renewal_aba", n_acquisition=3, n_extinction=3, n_test=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        idata = crp.sample_posterior(
            design, max_causes=4, draws=1000, tune=200, chains=2, cores=1, random_seed=1
        )
    assert idata.posterior.attrs["pmctx_model"] == "crp"
    summary = pmctx.summary(idata)
    assert {"n_occupied", "V[0]", "coassigned[0-1]"} <= set(summary.index)
    assert (summary["r_hat"] <= 1.01).all()
