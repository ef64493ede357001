"""A GUM with variables outside its Laplace vector, sampled by a plain ``pm.sample()``.

``GumModel.model`` starts its standard-normal ``*_z`` vectors at the Laplace mode
(:mod:`pmctx.gum.init`); variables the Laplace fit does not cover -- here a sampled GP
lengthscale (``lengthscale_prior_sigma``, a prior on the GP's scale) next to a linear
regressor -- start at PyMC's default. The posterior from a plain call must equal the one of
plain NUTS on the same model built without pmctx's start (an independent run, other seed,
three times longer). Tolerance: 4 combined Monte Carlo standard errors (ArviZ ``mcse``)
plus 0.02, for every quantity; fixed seeds.
"""

import arviz as az
import numpy as np
import pymc as pm
import pytest

from pmctx.gum import gum
from pmctx.gum.build import build_pymc_model

pytestmark = pytest.mark.slow

QUANTITIES = ["f_x_lengthscale", "f_x", "b_x4", "intercept"]


def _data(n=80, seed=0):
    rng = np.random.default_rng(seed)
    x, x4 = rng.uniform(0, 2, n), rng.normal(size=n)
    return {"x": x, "x4": x4, "y": rng.poisson(np.exp(0.2 + np.sin(2 * x) + 0.4 * x4))}


def _sample(model, draws, seed, **kwargs):
    with model:
        return pm.sample(draws=draws, tune=500, chains=2, cores=1, random_seed=seed,
                         progressbar=False, compute_convergence_checks=False, **kwargs)  # fmt: skip


def test_plain_sample_with_a_sampled_gp_scale_matches_plain_nuts_without_pmctx_start():
    g = gum("y ~ f(x, lengthscale=0.5, max_points=8) + x4", _data(), family="poisson",
            lengthscale_prior_sigma=0.5)  # fmt: skip
    free = {rv.name for rv in g.model.free_RVs}
    assert {"f_x_lengthscale", "f_x_z", "b_x4_z", "intercept_z"} == free
    start = g.model.initial_point()
    np.testing.assert_allclose(start["f_x_z"], g.map_point()["f_x_z"])  # the Laplace start
    ours = _sample(g.model, 500, seed=1)
    reference = _sample(
        build_pymc_model(g.design, lengthscale_prior_sigma=0.5, start=None),
        1500,
        seed=2,
    )
    assert "b_x4" in ours.posterior and "b_x4" in reference.posterior
    for name in QUANTITIES:
        a, b = ours.posterior[name], reference.posterior[name]
        mcse = np.hypot(
            az.mcse(ours, var_names=[name])[name], az.mcse(reference, var_names=[name])[name]
        )
        diff = np.abs(a.mean(("chain", "draw")) - b.mean(("chain", "draw")))
        assert np.all(diff.values < 4 * mcse.values + 0.02), (name, diff.values, mcse.values)
