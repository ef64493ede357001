"""Held-out log predictive density of the GUM (pmctx.gum.heldout) and GUM K-fold refits."""

import arviz as az
import numpy as np
import pymc as pm
import pytest
from scipy.special import logsumexp
from scipy.stats import poisson

from pmctx.gum import gum
from pmctx.gum.heldout import held_out_log_density, held_out_lpd
from pmctx.kfold import gum_functions, kfold

FORMULA = "y ~ f(x, lengthscale=0.5)"


def _data(n, seed):
    rng = np.random.default_rng(seed)
    x = np.round(rng.uniform(0, 2, n), 2)
    return {"x": x, "y": rng.poisson(np.exp(0.5 + np.sin(2 * x)))}


def _build(data, **kwargs):
    return gum(FORMULA, data, family="poisson", **kwargs)


def test_held_out_density_is_the_family_density_of_the_predicted_predictor():
    train, test = _data(40, 0), _data(12, 1)
    g = _build(train)
    ll = held_out_log_density(g, test, draws=300, random_seed=4)
    # same draws, same conditional
    rho = g.predict(test, kind="rho", draws=300, random_seed=4).values
    np.testing.assert_allclose(ll.values, poisson.logpmf(test["y"], np.exp(rho)), rtol=1e-10)
    lpd = held_out_lpd(g, test, draws=300, random_seed=4)
    np.testing.assert_allclose(lpd, logsumexp(ll.values[0], axis=0) - np.log(300))


def test_held_out_rows_at_training_inputs_score_like_pymc_log_likelihood():
    train = _data(30, 2)
    g = _build(train)
    idata = g.laplace(draws=50, log_likelihood=False, posterior_predictive=False)
    pm.compute_log_likelihood(idata, model=g.model, progressbar=False)
    ours = held_out_log_density(g, train, idata).values
    np.testing.assert_allclose(ours, idata.log_likelihood["y"].values, rtol=1e-8, atol=1e-10)


def test_held_out_bad_input():
    g = _build(_data(20, 3))
    with pytest.raises(ValueError, match="response column 'y'"):
        held_out_log_density(g, {"x": np.array([0.5])})
    with pytest.raises(ValueError, match="count"):
        held_out_log_density(g, {"x": np.array([0.5]), "y": np.array([-1.0])})
    with pytest.raises(ValueError, match="method must be"):
        gum_functions(_build, method="mcmc")


def test_kfold_leave_one_out_by_laplace_refits_agrees_with_psis():
    # A smooth one-function GUM: PSIS is reliable here, so exact leave-one-out refits
    # through the GUM's own (Laplace) fit and its exact prediction must agree with it.
    data = _data(30, 5)
    full = _build(data).laplace(draws=4000)
    loo = az.loo(full, pointwise=True)
    assert float((loo.pareto_k > 0.7).mean()) == 0.0
    fit, log_predictive = gum_functions(_build, method="laplace", fit_options={"draws": 4000})
    exact = kfold(fit, log_predictive, data, k=30)
    assert abs(exact.elpd - loo.elpd) < 0.25, (exact.elpd, loo.elpd)
    np.testing.assert_allclose(exact.elpd_i, loo.elpd_i, atol=0.1)
    assert fit.models == {}  # every refit was scored and released


@pytest.mark.slow
def test_held_out_lpd_matches_a_joint_pymc_fit_of_the_unobserved_function_values():
    """Independent route: a GUM on train + test inputs whose test rows have weight 0 has the
    train-only posterior, with the GP values at the test inputs sampled jointly by PyMC's NUTS
    (no GP-conditional code); its draws give the held-out lpd directly."""
    train, test = _data(35, 6), _data(10, 7)
    test["x"] = test["x"] + 0.005  # new inputs, off the training support
    g = _build(train, intercept=False)
    idata = g.sample(draws=1000, tune=1000, chains=2, cores=1, random_seed=1,
                     posterior_predictive=False)  # fmt: skip
    ours = held_out_log_density(g, test, idata, random_seed=2).values.reshape(-1, 10)

    union = {key: np.concatenate([train[key], test[key]]) for key in train}
    weights = np.r_[np.ones(35), np.zeros(10)]
    joint = gum(FORMULA, union, family="poisson", intercept=False, weights=weights)
    with joint.model:
        jdata = pm.sample(draws=1000, tune=1000, chains=2, cores=1, random_seed=3,
                          progressbar=False, target_accept=0.9)  # fmt: skip
    support = joint.design.functions["f_x"].support
    index = np.searchsorted(support, test["x"])
    assert np.allclose(support[index], test["x"])
    f_test = jdata.posterior["f_x"].values.reshape(-1, len(support))[:, index]
    theirs = poisson.logpmf(test["y"], np.exp(f_test))

    def lpd_and_mc_sd(ll):
        lpd = logsumexp(ll, axis=0) - np.log(len(ll))
        ratio = np.exp(ll - lpd)  # p_s / mean p; the MC sd of lpd is sd(ratio) / sqrt(S_eff)
        return lpd, ratio.std(axis=0) / np.sqrt(len(ll) / 4)  # S_eff >= S / 4 here

    (lpd_ours, sd_ours), (lpd_theirs, sd_theirs) = lpd_and_mc_sd(ours), lpd_and_mc_sd(theirs)
    assert np.all(np.abs(lpd_ours - lpd_theirs) < 4 * np.hypot(sd_ours, sd_theirs) + 0.02), (
        lpd_ours - lpd_theirs,
        np.hypot(sd_ours, sd_theirs),
    )
