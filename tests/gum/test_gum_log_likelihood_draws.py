"""GumModel.log_likelihood_draws equals PyMC's pointwise log-likelihood of the same draws."""

import numpy as np
import pymc as pm
import pytest

from pmctx.gum import gum


def _data(family, n=60, seed=0):
    rng = np.random.default_rng(seed)
    data = {"x": rng.uniform(0, 2, n), "z": rng.normal(size=n)}
    eta = np.sin(2 * data["x"]) + 0.5 * data["z"]
    if family == "poisson":
        data["y"] = rng.poisson(np.exp(eta))
    elif family == "bernoulli":
        data["y"] = (rng.random(n) < 1 / (1 + np.exp(-eta))).astype(int)
    else:
        data["y"] = eta + 0.3 * rng.normal(size=n)
    return data


@pytest.mark.parametrize(
    ("family", "options"),
    [("poisson", {}), ("bernoulli", {}), ("gaussian", {"noise_sd": 0.3})],
)
def test_numpy_log_likelihood_equals_pymc(family, options):
    g = gum("y ~ f(x, lengthscale=0.5) + z", _data(family), family=family, **options)
    idata = g.laplace(draws=7, random_seed=1, log_likelihood=False, posterior_predictive=False)
    ours = g.log_likelihood_draws(idata.posterior)["y"]
    reference = pm.compute_log_likelihood(
        idata, model=g.model, extend_inferencedata=False, progressbar=False
    )["y"].values
    assert ours.shape == reference.shape == (1, 7, 60)
    np.testing.assert_allclose(ours, reference, rtol=0, atol=1e-10)
    # A draw moved off its values changes the answer (the test can fail).
    moved = idata.posterior.copy()
    moved["f_x_z"] = moved["f_x_z"] + 0.1
    assert np.abs(g.log_likelihood_draws(moved)["y"] - reference).max() > 1e-3


def test_missing_free_variable_falls_back_to_none():
    g = gum("y ~ f(x, lengthscale=0.5)", _data("poisson"), family="poisson")
    idata = g.laplace(draws=3, random_seed=1, log_likelihood=False, posterior_predictive=False)
    assert g.log_likelihood_draws(idata.posterior.to_dataset().drop_vars("f_x_z")) is None


def test_nutpie_sample_log_likelihood_group_equals_pymc():
    g = gum("y ~ f(x, lengthscale=0.5) + z", _data("poisson"), family="poisson")
    idata = g.sample(
        draws=30, tune=30, chains=2, random_seed=0, backend="nutpie", check_convergence=False
    )
    reference = pm.compute_log_likelihood(
        idata, model=g.model, extend_inferencedata=False, progressbar=False
    )["y"]
    assert idata.log_likelihood["y"].dims == ("chain", "draw", "obs")
    np.testing.assert_allclose(idata.log_likelihood["y"].values, reference.values, atol=1e-10)


@pytest.mark.parametrize(
    "formula",
    [
        "y ~ f(x, lengthscale=0.5) + z",
        "y ~ f(x, lengthscale=0.5) * f(z, lengthscale=1.0) + f(z)",  # a product of two GPs
        "y ~ (f(x) + f(z)) * z",  # a sum times a linear term
        "y ~ 2*f(z) - f(x)",  # fixed weights
        "y ~ f(z) * f(x|g, lengthscale=0.7)",  # grouped
        "y ~ lag(u, lags=1:3)",  # several positions per row
        "y ~ [u] + f(x)",  # a fixed function
        "y ~ [u] * f(x) + z",  # a fixed factor in a product
    ],
)
def test_batched_predictor_equals_the_per_draw_predictor(formula):
    """log_likelihood_draws evaluates chunks of draws at once (design.predictor of a batch);
    each row must be design.predictor of that draw alone, for every shape of design."""
    data = _data("poisson", n=50)
    rng = np.random.default_rng(3)
    data["g"] = rng.integers(0, 3, 50)
    data["u"] = rng.normal(size=50)
    d = gum(formula, data, family="poisson").design
    u = rng.normal(size=(9, d.n_free))
    batched = d.predictor(u)
    assert batched.shape == (9, 50)
    for row, draw in zip(batched, u, strict=True):
        np.testing.assert_allclose(row, d.predictor(draw), rtol=1e-12, atol=1e-12)


def test_chunked_log_likelihood_equals_one_chunk(monkeypatch):
    from pmctx.gum import assemble

    g = gum("y ~ f(x, lengthscale=0.5) + z", _data("poisson"), family="poisson")
    idata = g.laplace(draws=7, random_seed=1, log_likelihood=False, posterior_predictive=False)
    whole = g.log_likelihood_draws(idata.posterior)["y"]
    monkeypatch.setattr(assemble, "_CHUNK_VALUES", 2 * 60)  # two draws per chunk, last one odd
    # Equal to rounding: BLAS may sum a product in another order for another number of draws.
    np.testing.assert_allclose(g.log_likelihood_draws(idata.posterior)["y"], whole, rtol=1e-13)
