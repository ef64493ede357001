"""GUM initial values at the Laplace mode (pmctx.gum.init)."""

import numpy as np
import pymc as pm

from pmctx.gum import gum
from pmctx.gum.build import build_pymc_model
from pmctx.gum.init import laplace_initvals, set_laplace_initvals
from pmctx.gum.synthetic import section_3_1_formula, seed_section_3_1


def test_initvals_are_the_laplace_mode_and_beat_the_default_start():
    g = gum(section_3_1_formula(max_points=8), seed_section_3_1(80, seed=2), family="poisson")
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
