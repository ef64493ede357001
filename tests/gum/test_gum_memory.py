"""GUM outputs of big fits: float32 pointwise log-likelihood and a posterior predictive at a
subset of draws once they would pass pmctx.memory's limits (set tiny here)."""

import numpy as np
import pymc as pm
import pytest

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
        one.add_groups(log_likelihood={"y": ll})
        loo[name] = az.loo(one, pointwise=True)
    assert abs(loo["float32"].elpd_loo - loo["float64"].elpd_loo) < 0.1
    np.testing.assert_allclose(loo["float32"].loo_i, loo["float64"].loo_i, atol=1e-3)


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
    assert "log_likelihood" not in bare.groups() and "posterior_predictive" not in bare.groups()
