"""GUM outputs of big fits: float32 pointwise log-likelihood and a posterior predictive at a
subset of draws once they would pass pmctx.memory's limits (set tiny here)."""

import numpy as np
import pymc as pm
import pytest
import xarray as xr

from pmctx.gum import assemble, gum


def _model():
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 2, 60)
    return gum("y ~ f(x, lengthscale=0.5)", {"x": x, "y": rng.poisson(np.exp(np.sin(x)))},
               family="poisson")  # fmt: skip


def test_big_log_likelihood_is_float32_and_equal_to_pymc_within_its_rounding(monkeypatch):
    g = _model()
    idata = g.laplace(draws=7, random_seed=1, log_likelihood=False, posterior_predictive=False)
    small = g.log_likelihood_draws(idata.posterior)["y"]
    assert small.dtype == np.float64
    monkeypatch.setattr(assemble, "PER_DRAW_BYTES", 100)
    big = g.log_likelihood_draws(idata.posterior)["y"]
    assert big.dtype == np.float32 and big.shape == (1, 7, 60)
    reference = pm.compute_log_likelihood(
        idata, model=g.model, extend_inferencedata=False, progressbar=False
    )["y"].values
    np.testing.assert_allclose(big, reference, rtol=1e-6, atol=1e-6)  # float32 rounding


def test_big_posterior_predictive_uses_evenly_spaced_draws(monkeypatch):
    g = _model()
    idata = g.laplace(draws=50, random_seed=1, posterior_predictive=False)
    full = g.add_posterior_predictive(idata.copy(), random_seed=0).posterior_predictive
    assert full.sizes["draw"] == 50
    monkeypatch.setattr(assemble, "PREDICTIVE_BYTES", 8 * 60 * 5)  # five draws of 60 values
    part = g.add_posterior_predictive(idata, random_seed=0).posterior_predictive
    assert part.sizes["draw"] == 5 and part["y"].shape == (1, 5, 60)
    np.testing.assert_array_equal(part["draw"].values, [0, 12, 24, 37, 49])


def test_sample_warns_before_sampling_when_outputs_pass_the_memory(monkeypatch):
    from pmctx.exceptions import MemoryWarning

    g = _model()
    monkeypatch.setenv("PMCTX_MEMORY_BYTES", "1000")

    def no_sampling(*args, **kwargs):
        raise RuntimeError("sampling started")

    monkeypatch.setattr("pmctx.gum.backends.choose_backend", no_sampling)
    with (
        pytest.warns(
            MemoryWarning,
            match=r"GUM NUTS fit \(60 rows, 4 x 1000 draws\) need .*"
            r"log_likelihood 2 MB.*posterior_predictive=False",
        ),  # fmt: skip
        pytest.raises(RuntimeError, match="sampling started"),
    ):
        g.sample(until_converged=False)
    # Sampling until converged sizes the check for its budget, 3 x 1000 draws per chain.
    with (
        pytest.warns(MemoryWarning, match=r"GUM NUTS fit \(60 rows, 4 x 3000 draws\)"),
        pytest.raises(RuntimeError, match="sampling started"),
    ):
        g.sample()


def test_float32_log_likelihood_gives_the_same_loo(monkeypatch):
    """az.loo of the float32 pointwise log-likelihood big fits keep equals float64's well
    within 0.1 elpd (float32 rounds each value by ~1e-7 relative; 60 points, 400 draws)."""
    import arviz as az

    g = _model()
    idata = g.laplace(draws=400, random_seed=2, log_likelihood=False, posterior_predictive=False)
    loo = {}
    for name, limit in (("float64", 2**40), ("float32", 100)):
        monkeypatch.setattr(assemble, "PER_DRAW_BYTES", limit)
        ll = g.log_likelihood_draws(idata.posterior)["y"]
        assert ll.dtype == np.dtype(name)
        one = idata.copy()
        one["log_likelihood"] = xr.Dataset({"y": (("chain", "draw", "obs"), ll)})
        loo[name] = az.loo(one, pointwise=True)
    assert abs(loo["float32"].elpd - loo["float64"].elpd) < 0.1
    np.testing.assert_allclose(loo["float32"].elpd_i, loo["float64"].elpd_i, atol=1e-3)


def test_pymc_backend_adds_the_numpy_log_likelihood_after_the_predictive():
    g = _model()
    kw = dict(draws=15, tune=15, chains=1, random_seed=3, backend="pymc", progressbar=False,
              check_convergence=False)  # fmt: skip
    idata = g.sample(**kw)
    assert idata.posterior_predictive["y"].dtype == np.int32
    reference = pm.compute_log_likelihood(
        idata, model=g.model, extend_inferencedata=False, progressbar=False
    )["y"]
    assert idata.log_likelihood["y"].dims == reference.dims == ("chain", "draw", "obs")
    np.testing.assert_allclose(idata.log_likelihood["y"].values, reference.values, atol=1e-9)
    bare = g.sample(**kw, idata_kwargs={"log_likelihood": False}, posterior_predictive=False)
    assert "log_likelihood" not in bare.children and "posterior_predictive" not in bare.children


def test_log_likelihood_thin_rule_and_bad_values():
    from pmctx.gum.outputs import log_likelihood_thin

    assert log_likelihood_thin(10_000, draws=1000, chains=4) == 1  # 160 MB: every draw
    assert log_likelihood_thin(100_000, draws=1000, chains=4) == 2  # 1.6 GB -> 0.8 GB
    assert log_likelihood_thin(400_000, draws=1000, chains=4) == 6  # 6.4 GB -> 1.07 GB
    assert log_likelihood_thin(100_000, draws=1000, chains=4, keep="all") == 1
    assert log_likelihood_thin(100, draws=10, chains=4, keep=4) == 4
    for bad in ("every", 0, -2, 1.5, True):
        with pytest.raises(ValueError, match=r"log_likelihood must be 'auto', 'all', False or"):
            log_likelihood_thin(100, draws=10, chains=4, keep=bad)


def test_sample_thins_a_log_likelihood_past_its_budget(monkeypatch, caplog):
    """A budget of 40 draws of 60 rows (float32) makes 80 draws keep every 2nd: the INFO line
    and attrs say so, az.loo and pmctx.summary run on the result, the kept draws equal the
    full log-likelihood's, and log_likelihood='all' overrides the rule. (40 kept draws: ArviZ
    1's PSIS refuses fewer than 5 tail draws, i.e. fewer than 25 draws.)"""
    import logging

    import arviz as az

    import pmctx
    from pmctx.gum import outputs

    g = _model()
    kw = dict(draws=80, tune=15, chains=1, random_seed=3, backend="pymc", progressbar=False,
              check_convergence=False, posterior_predictive=False)  # fmt: skip
    monkeypatch.setattr(outputs, "LOG_LIKELIHOOD_BYTES", 40 * 60 * 4)
    with caplog.at_level(logging.INFO, logger="pmctx.gum.nuts"):
        idata = g.sample(**kw)
    assert "kept at one draw in 2" in caplog.text and "log_likelihood='all'" in caplog.text
    ll = idata.log_likelihood
    assert ll.attrs["thin"] == 2 and ll["y"].shape == (1, 40, 60)
    np.testing.assert_array_equal(ll["draw"].values, np.arange(0, 80, 2))
    full = g.log_likelihood_draws(idata.posterior)["y"]
    np.testing.assert_allclose(ll["y"].values, full[:, ::2], rtol=1e-6, atol=1e-6)
    assert np.isfinite(az.loo(idata).elpd)
    assert len(pmctx.summary(idata)) > 0
    every = g.sample(**kw, log_likelihood="all").log_likelihood
    assert every.attrs["thin"] == 1 and every.sizes["draw"] == 80
    with pytest.raises(ValueError, match="log_likelihood must be"):
        g.sample(**kw, log_likelihood="some")


def test_pymc_fallback_log_likelihood_is_thinned_too():
    from pmctx.gum.backends import add_log_likelihood_group

    g = _model()
    idata = g.laplace(draws=9, random_seed=1, log_likelihood=False, posterior_predictive=False)
    add_log_likelihood_group(idata, g.model, None, thin=3)
    reference = pm.compute_log_likelihood(
        idata, model=g.model, extend_inferencedata=False, progressbar=False
    )["y"].values
    assert idata.log_likelihood.attrs["thin"] == 3
    np.testing.assert_allclose(idata.log_likelihood["y"].values, reference[:, ::3], atol=1e-9)


def test_thinned_log_likelihood_gives_loo_within_its_monte_carlo_error():
    """PSIS-LOO from every 2nd of 800 independent (Laplace) draws equals that from all 800
    within 4 Monte Carlo standard deviations of the thinned estimate (the importance-sampling
    variance of each point's 1 / mean(1 / p), summed over the 60 points)."""
    import arviz as az

    from pmctx.gum.backends import add_log_likelihood_group

    g = _model()
    idata = g.laplace(draws=800, random_seed=4, log_likelihood=False, posterior_predictive=False)
    loo = {}
    for thin in (1, 2):
        one = idata.copy()
        add_log_likelihood_group(one, g.model, g.log_likelihood_draws, thin=thin)
        loo[thin] = az.loo(one).elpd
    w = np.exp(-g.log_likelihood_draws(idata.posterior)["y"][0])  # (draw, obs): 1 / p
    mc_sd = np.sqrt(np.sum(w.var(axis=0) / (400 * w.mean(axis=0) ** 2)))
    assert 0 < mc_sd < 1
    assert abs(loo[2] - loo[1]) < 4 * mc_sd
