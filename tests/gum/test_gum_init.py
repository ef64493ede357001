"""GUM initial values at the Laplace mode (pmctx.gum.init)."""

import numpy as np
import pymc as pm
import pytest

from pmctx.convergence import convergence_report
from pmctx.gum import gum
from pmctx.gum.build import build_pymc_model
from pmctx.gum.init import laplace_initvals, set_laplace_initvals
from pmctx.gum.synthetic import section_3_1_formula, seed_section_3_1


def test_initvals_are_the_laplace_mode_and_beat_the_default_start():
    g = gum(
        section_3_1_formula(max_points=8), seed_section_3_1(80, random_seed=2), family="poisson"
    )
    start = laplace_initvals(g)
    u = g.laplace_result.u_map
    for name, sl in g.design.slices.items():
        np.testing.assert_allclose(np.ravel(start[f"{name}_z"]), u[sl], atol=1e-12)
    logp = g.model.compile_logp()
    pymc_default = {name: np.zeros_like(value) for name, value in start.items()}  # Normal(0, 1)
    assert logp(start) > logp(pymc_default)
    # the model's own default start is that mode, without stored initial values ...
    point = g.model.initial_point()
    for name, value in start.items():
        np.testing.assert_allclose(point[name], value)
    # ... and set_laplace_initvals (for models built another way) stores the same point
    model = build_pymc_model(g.design)
    set_laplace_initvals(g, model)
    np.testing.assert_allclose(model.initial_point()["f_x1_z"], start["f_x1_z"])


def test_gaussian_with_sampled_noise_has_no_laplace_start():
    rng = np.random.default_rng(0)
    data = {"x": rng.uniform(0, 1, 30)}
    data["y"] = np.sin(3 * data["x"]) + rng.normal(0, 0.1, 30)
    g = gum("y ~ f(x, lengthscale=0.3, max_points=6)", data)
    assert laplace_initvals(g) is None
    assert isinstance(g.model, pm.Model)


def test_the_laplace_start_is_not_stored_on_the_model():
    # PyMC cannot convert a model with initial values (log_likelihood, pm.do), so the start
    # travels as pm.sample(initvals=...) (GumModel.sample) and the model keeps none.
    g = gum(section_3_1_formula(max_points=8), seed_section_3_1(60), family="poisson")
    assert laplace_initvals(g) is not None
    assert all(value is None for value in g.model.rvs_to_initial_values.values())


def test_the_model_starts_at_the_mode_lazily_and_converts_to_a_graph():
    g = gum(section_3_1_formula(max_points=8), seed_section_3_1(60), family="poisson")
    model = g.model
    assert g.laplace_result is None  # building the model fits nothing
    assert set(model.dim_lengths) == set(model.coords)  # no stray dims (nutpie reads them all)
    point = model.initial_point()
    assert g.laplace_result is not None  # the first initial point did
    np.testing.assert_allclose(point["intercept_z"], g.map_point()["intercept_z"])
    # a plain Normal(0, 1) in every other respect: same log density, graph conversion works
    plain = build_pymc_model(g.design)
    np.testing.assert_allclose(model.compile_logp()(point), plain.compile_logp()(point))
    idata = g.laplace(draws=5, log_likelihood=False, posterior_predictive=False)
    pm.compute_log_likelihood(idata, model=model, progressbar=False)
    expected = np.stack(
        [g.pointwise_loglik(u) for u in g.laplace_result.draws(5, np.random.default_rng(0))]
    )
    np.testing.assert_allclose(idata.log_likelihood["y"].values[0], expected, rtol=1e-8)
    with pm.do(model, {"intercept_z": 0.0}):
        pass
    prior = pm.sample_prior_predictive(draws=400, model=model, random_seed=0)
    assert abs(float(prior.prior["f_x1_z"].std()) - 1.0) < 0.1  # draws are the N(0, 1) prior


@pytest.mark.slow
def test_plain_pm_sample_converges_from_its_default_start():
    """Issue 15: ``with g.model: pm.sample()`` -- no initvals, PyMC's default init
    (jitter+adapt_diag, target_accept 0.8), 4 chains -- on seed 002 section 3.1 (N=500). From
    PyMC's own zero start one of four chains stayed in a flat-f2 region (R-hat 1.53 on f_x1);
    the model now starts at the Laplace mode. 400 + 400 iterations per chain keep it short."""
    g = gum(section_3_1_formula(), seed_section_3_1(500, random_seed=0), family="poisson")
    with g.model:
        idata = pm.sample(tune=400, draws=400, chains=4, random_seed=11, progressbar=False)
    names = [*g.function_names, "intercept"]
    report = convergence_report(idata.posterior.to_dataset()[names])
    assert (report["r_hat"] < 1.01).all(), report
    pm.compute_log_likelihood(idata, model=g.model, progressbar=False)
    assert idata.log_likelihood["y"].shape == (4, 400, 500)
