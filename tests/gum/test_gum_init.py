"""GUM models start at the Laplace mode (pmctx.gum.init)."""

import numpy as np

from pmctx.gum import gum
from pmctx.gum.init import laplace_initvals
from pmctx.gum.laplace import log_joint
from pmctx.gum.synthetic import section_3_1_formula, seed_section_3_1


def test_initial_point_is_the_laplace_mode_not_zero():
    g = gum(section_3_1_formula(max_points=8), seed_section_3_1(80, seed=2), family="poisson")
    point = g.model.initial_point()
    u = g.laplace_result.u_map
    for name, sl in g.design.slices.items():
        np.testing.assert_allclose(np.ravel(point[f"{name}_z"]), u[sl], atol=1e-12)
    zero = np.zeros_like(u)
    assert log_joint(g.design, u) > log_joint(g.design, zero)
    # pm.sample starts there: the model's logp is finite and higher than at zero.
    logp = g.model.compile_logp()
    assert logp(point) > logp({k: np.zeros_like(v) for k, v in point.items()})


def test_gaussian_with_sampled_noise_keeps_pymc_defaults():
    rng = np.random.default_rng(0)
    data = {"x": rng.uniform(0, 1, 30)}
    data["y"] = np.sin(3 * data["x"]) + rng.normal(0, 0.1, 30)
    g = gum("y ~ f(x, lengthscale=0.3, max_points=6)", data)
    assert laplace_initvals(g) is None
    point = g.model.initial_point()
    assert all(np.allclose(v, 0.0) for k, v in point.items() if k.endswith("_z"))
