"""NUTS on the GUM pm.Model: recovery on seed section 3.1, agreement with Laplace, and the
scale degeneracy that the Appendix A constraints remove."""

import arviz as az
import numpy as np
import pytest
from scipy.special import logsumexp

from pmctx.gum import GP, gum
from pmctx.gum.synthetic import match_constraints, section_3_1_formula, seed_section_3_1


def recovery_errors(g, idata):
    """RMSE of each posterior-mean function against the constraint-matched truth."""
    truth = match_constraints({k: fn.support for k, fn in g.design.functions.items()})
    return {
        k: float(np.sqrt(np.mean((g.function_summary(idata, k)["mean"] - truth[k]) ** 2)))
        for k in g.design.functions
    }


def waic(idata):
    """``(elpd_waic, se)`` of the pointwise ``y`` log-likelihood, as ArviZ 0.x's ``az.waic``
    computed them (ArviZ 1 has no WAIC): lppd minus the posterior variance, per point."""
    ll = idata.log_likelihood["y"].values
    ll = ll.reshape(-1, ll.shape[-1])  # (samples, obs)
    elpd_i = logsumexp(ll, axis=0) - np.log(len(ll)) - ll.var(axis=0)
    return float(elpd_i.sum()), float(np.sqrt(len(elpd_i) * elpd_i.var()))


@pytest.fixture(scope="module")
def section_3_1_n200():
    g = gum(
        section_3_1_formula(max_points=16), seed_section_3_1(200, random_seed=0), family="poisson"
    )
    nuts = g.sample(draws=300, tune=300, chains=2, random_seed=1, cores=1, check_convergence=False)
    laplace = g.laplace(draws=2000, random_seed=2)
    return g, nuts, laplace


def test_nuts_converges_and_recovers_section_3_1(section_3_1_n200):
    g, nuts, _ = section_3_1_n200
    summary = az.summary(nuts, var_names=[*list(g.design.functions), "intercept"])
    assert summary["r_hat"].max() < 1.05
    errors = recovery_errors(g, nuts)
    # with the seed's fixed short lengthscales (0.1) the posterior mean is wiggly at N = 200;
    # errors of a wrong model (e.g. the flipped mode, or no product) are > 1
    assert max(errors.values()) < 0.6, errors
    assert "y" in nuts.log_likelihood


def test_laplace_agrees_with_nuts_at_n200(section_3_1_n200):
    """Stated tolerance, in units of the NUTS posterior sd on each function's grid: the
    Laplace mean (a mode) is within 1.25 sd everywhere and 0.75 sd on average for the product
    factors, whose posterior is skewed (observed: 0.78 / 0.48 for f_x1), and within 0.5 sd
    everywhere for the additive f_x3 (observed 0.16); posterior sds agree within a factor 1.5.
    A wrong Laplace (other mode, wrong constraint or curvature) is off by several sds."""
    g, nuts, laplace = section_3_1_n200
    for name in g.design.functions:
        a, b = g.function_summary(laplace, name), g.function_summary(nuts, name)
        z = np.abs(a["mean"] - b["mean"]) / b["sd"]
        if name == "f_x3":
            assert z.max() < 0.5, (name, z.max())
        assert z.max() < 1.25 and z.mean() < 0.75, (name, z.max(), z.mean())
        ratio = np.median(a["sd"] / b["sd"])
        assert 1 / 1.5 < ratio < 1.5, (name, ratio)
    (elpd_nuts, se_nuts), (elpd_laplace, _) = waic(nuts), waic(laplace)
    assert abs(elpd_nuts - elpd_laplace) < se_nuts, (elpd_nuts, elpd_laplace, se_nuts)


@pytest.mark.parametrize("constrained", [False, True])
def test_constraints_remove_the_scale_degeneracy(constrained):
    """f1(x1) f2(x2) is invariant under (f1, f2) -> (-f1, -f2) and (l f1, f2 / l). Without
    constraints two chains started at two equivalent modes stay apart (R-hat >> 1); with the
    default constraints (f2 mean-one) the flipped start is not a mode and the chains agree."""
    rng = np.random.default_rng(5)
    n = 150
    data = {"x1": rng.uniform(0, 2, n), "x2": rng.uniform(0, 2, n)}
    data["y"] = rng.poisson(np.exp((1 + data["x1"]) * (0.5 + np.sin(data["x2"]))))
    constraint = None if constrained else "free"
    expr = GP("x1", max_points=6, constraint=constraint) * GP(
        "x2", max_points=6, constraint=constraint
    )
    g = gum(expr, data, response="y", family="poisson", intercept=False)
    u = g.fit_laplace().u_map
    flipped = u.copy()
    flipped[g.design.slices["f_x1"]] *= -1
    if not constrained:
        flipped[g.design.slices["f_x2"]] *= -1
    starts = [g.map_point(u), g.map_point(flipped)]
    # 300 tuning steps: with 150, NUTS adapted badly along the unconstrained ridge in some
    # runs (product ESS 14, R-hat 1.20 under PyTensor's NUMBA mode); with 300, six seeds gave
    # product R-hat 1.001-1.019 (ESS 287-632) and f_x1 R-hat 1.85-1.97.
    idata = g.sample(
        draws=300,
        tune=300,
        chains=2,
        random_seed=3,
        cores=1,
        initvals=starts,
        check_convergence=False,
    )
    rhat = float(az.rhat(idata, var_names=["f_x1"])["f_x1"].max())
    product = idata.posterior["f_x1"].isel(f_x1_x=-1) * idata.posterior["f_x2"].isel(f_x2_x=-1)
    product_rhat = float(az.rhat(product.rename("p").to_dataset())["p"])
    if constrained:
        assert rhat < 1.05
    else:
        assert rhat > 1.5
        assert product_rhat < 1.1  # the predictor itself is identified either way


@pytest.mark.slow
def test_nuts_recovery_error_decreases_with_n():
    """Seed 3.1 with NUTS at N = 50, 200, 500 (two data sets each, 24-point grids)."""
    errors = {}
    for n in (50, 200, 500):
        runs = []
        for seed in range(2):
            g = gum(
                section_3_1_formula(max_points=24),
                seed_section_3_1(n, random_seed=seed),
                family="poisson",
            )
            idata = g.sample(
                draws=400, tune=400, chains=2, random_seed=seed, cores=1, check_convergence=False
            )
            runs.append(list(recovery_errors(g, idata).values()))
        errors[n] = np.mean(runs, axis=0)
    assert np.all(errors[200] < errors[50]), errors
    assert np.all(errors[500] < errors[200]), errors
