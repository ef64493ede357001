"""Prediction at new inputs (seed 002 eq. 14) and the posterior_predictive group."""

import arviz as az
import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from scipy.special import logsumexp

from pmctx.gum import gum
from pmctx.gum.kernels import kernel_matrix
from pmctx.gum.synthetic import psychophysics, section_3_1_formula, seed_section_3_1


def _data(n, seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 5, n).astype(float)  # exact support {0..4}
    z = rng.uniform(0, 2, n)  # inducing grid
    y = rng.poisson(np.exp(0.3 + np.sin(1.3 * x) + 0.5 * np.cos(2 * z)))
    return {"x": x, "z": z, "y": y}


FORMULA = "y ~ f(x, lengthscale=0.7) + f(z, lengthscale=0.5, max_points=10)"


def _held_out_lpd(rho, y):
    """Sum over held-out points of log mean_s Poisson(y | exp(rho_s)), and its MC sd."""
    ll = y * rho - np.exp(rho) - np.array([np.sum(np.log(np.arange(1, k + 1))) for k in y])
    lpd = logsumexp(ll, axis=0) - np.log(len(ll))
    weights = np.exp(ll - logsumexp(ll, axis=0))  # p_s / sum p_s
    mc_sd = np.sqrt(np.sum(np.var(weights * len(ll), axis=0) / len(ll)))
    return float(lpd.sum()), float(mc_sd)


@pytest.fixture(scope="module")
def nuts_fit():
    g = gum(FORMULA, _data(150, 0), family="poisson")
    idata = g.sample(draws=400, tune=400, chains=2, random_seed=1, cores=1)
    return g, idata


@pytest.mark.slow
def test_prediction_matches_pymc_conditional_through_sample_posterior_predictive(nuts_fit):
    """Held-out lpd of GumModel.predict (NUTS draws) equals, within Monte Carlo error, the lpd
    of the same draws pushed through a hand-built PyMC GP conditional (seed eq. 14) with
    pm.sample_posterior_predictive; per-point means and sds agree too. New x lie between and
    beyond the training support, where the conditional variance matters."""
    g, idata = nuts_fit
    test = _data(200, 7)
    test["x"] = test["x"] + np.where(np.arange(200) % 2 == 0, 0.5, 0.0)  # 0.5 .. 4.5 halves
    ours = g.predict(test, idata, kind="rho", random_seed=3).values.reshape(-1, 200)

    fn = g.design.functions["f_x"]
    new = np.unique(test["x"][~np.isin(test["x"], fn.support)])
    K_ss = fn.prior_cov()
    K_xs = kernel_matrix("se", new, fn.support, lengthscale=0.7)
    K_xx = kernel_matrix("se", new, new, lengthscale=0.7)
    A = K_xs @ np.linalg.inv(K_ss)
    cond = K_xx - A @ K_xs.T + 1e-6 * np.eye(len(new))
    values_x = np.concatenate([fn.support, new])
    index_x = np.array([np.flatnonzero(values_x == v)[0] for v in test["x"]])
    grid = g.design.functions["f_z"].support
    weights_z = np.stack([np.interp(grid, grid, np.eye(len(grid))[k]) for k in range(len(grid))])
    zc = np.clip(test["z"], grid[0], grid[-1])
    W_z = np.stack([np.interp(zc, grid, weights_z[k]) for k in range(len(grid))], axis=1)
    with g.model:
        f_new = pm.MvNormal("f_x_new", mu=pt.dot(pt.as_tensor(A), g.model["f_x"]), cov=cond)
        f_all = pt.concatenate([g.model["f_x"], f_new])
        rho = f_all[index_x] + pt.dot(pt.as_tensor(W_z), g.model["f_z"]) + g.model["intercept"]
        pm.Deterministic("rho_new", rho)
        theirs = (
            pm.sample_posterior_predictive(
                idata, var_names=["rho_new"], random_seed=4, progressbar=False
            )
            .posterior_predictive["rho_new"]
            .values.reshape(-1, 200)
        )
    n_draws = ours.shape[0]
    se = theirs.std(axis=0) / np.sqrt(n_draws)
    assert np.all(np.abs(ours.mean(axis=0) - theirs.mean(axis=0)) < 5 * np.sqrt(2) * se + 1e-9)
    assert np.allclose(ours.std(axis=0), theirs.std(axis=0), rtol=0.15)
    lpd_ours, sd_ours = _held_out_lpd(ours, test["y"])
    lpd_theirs, sd_theirs = _held_out_lpd(theirs, test["y"])
    assert abs(lpd_ours - lpd_theirs) < 4 * np.hypot(sd_ours, sd_theirs) + 0.05, (
        lpd_ours,
        lpd_theirs,
        sd_ours,
    )
    # ... and the conditional variance matters here: between support points it adds spread
    between = ~np.isin(test["x"], fn.support)
    assert np.median(ours.std(axis=0)[between]) > 1.2 * np.median(ours.std(axis=0)[~between])


@pytest.mark.slow
def test_posterior_predictive_group_matches_pm_sample_posterior_predictive(nuts_fit):
    g, idata = nuts_fit
    assert "posterior_predictive" in idata.children
    ours = idata.posterior_predictive["y"].values.reshape(-1, g.design.n_obs)
    with g.model:
        theirs = pm.sample_posterior_predictive(idata, random_seed=5, progressbar=False)
    theirs = theirs.posterior_predictive["y"].values.reshape(-1, g.design.n_obs)
    se = np.sqrt(theirs.var(axis=0) / len(theirs) * 2) + 1e-9
    assert np.mean(np.abs(ours.mean(axis=0) - theirs.mean(axis=0)) < 4 * se) > 0.98
    pit = az.loo_pit(idata, var_names=["y"])["y"]
    assert pit.shape == (g.design.n_obs,) and np.all((pit >= 0) & (pit <= 1))


def test_prediction_at_training_inputs_reproduces_the_model_predictor():
    for data, formula, family in [
        (seed_section_3_1(80, random_seed=2), section_3_1_formula(max_points=10), "poisson"),
        (
            psychophysics(80, random_seed=2),
            "choice ~ w(position) * f(angle, kernel='periodic', period=2*pi, max_points=12)",
            "bernoulli",
        ),
    ]:
        g = gum(formula, data, family=family)
        u = np.random.default_rng(0).standard_normal((3, g.design.n_free)) * 0.3
        idata = g.to_idata(u, log_likelihood=False)
        pred = g.predict(data, idata).values[0]
        expected = np.stack([g.design.predictor(row) for row in u])
        assert np.allclose(pred, expected)
        mean = g.predict(data, idata, kind="mean").values[0]
        inverse = np.exp if family == "poisson" else lambda r: 1 / (1 + np.exp(-r))
        assert np.allclose(mean, inverse(expected))


def test_laplace_prediction_and_function_values():
    data = _data(150, 1)
    g = gum(FORMULA, data, family="poisson")
    idata = g.laplace(draws=500)
    assert {"posterior_predictive", "log_likelihood", "observed_data"} <= set(idata.children)
    default = g.predict({"x": [0.0, 0.5], "z": [1.0, 1.0]}, draws=500)  # Laplace draws
    explicit = g.predict({"x": [0.0, 0.5], "z": [1.0, 1.0]}, idata)
    assert default.shape == explicit.shape == (1, 500, 2)
    assert np.allclose(default.mean(("chain", "draw")), explicit.mean(("chain", "draw")), atol=0.1)
    values = g.function_values("f_x", [1.0, 1.5], idata)
    assert np.allclose(values[..., 0], idata.posterior["f_x"].sel(f_x_x=1.0).values)
    response = g.predict({"x": [0.0], "z": [1.0]}, idata, kind="response")
    assert response.name == "y" and response.values.dtype.kind == "i"


def test_prediction_bad_input():
    data = psychophysics(60, random_seed=3)
    data["group"] = np.where(np.arange(60) % 2 == 0, "a", "b")
    g = gum(
        "choice ~ w(group) + f(normative, max_points=8)",
        {
            "choice": data["choice"],
            "group": data["group"],
            "normative": np.nan_to_num(data["normative"][:, 0]),
        },
        family="bernoulli",
    )
    g.fit_laplace()
    with pytest.raises(ValueError, match="lacks column"):
        g.predict({"group": ["a"]})
    with pytest.raises(ValueError, match="not seen in training"):
        g.predict({"group": ["c"], "normative": [0.0]})
    with pytest.raises(ValueError, match="kind"):
        g.predict({"group": ["a"], "normative": [0.0]}, kind="probability")
    ok = g.predict({"group": ["b", "a"], "normative": [0.0, 0.1]}, kind="mean", draws=50)
    assert np.all((ok > 0) & (ok < 1))
