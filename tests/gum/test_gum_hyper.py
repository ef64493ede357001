"""Hyperparameter fitting (evidence, K-fold CV) and recovery on seed section 3.1 vs N."""

import numpy as np
import pytest
from scipy.stats import multivariate_normal

from pmctx.gum import gum
from pmctx.gum.hyper import cv_score, fit_cv, fit_evidence
from pmctx.gum.kernels import kernel_matrix
from pmctx.gum.synthetic import match_constraints, section_3_1_formula, seed_section_3_1


@pytest.fixture(scope="module")
def gp_data():
    rng = np.random.default_rng(7)
    x = np.sort(rng.uniform(0, 4, 25))
    K = kernel_matrix("se", x, x, lengthscale=0.6, variance=1.0) + 1e-9 * np.eye(25)
    f = np.linalg.cholesky(K) @ rng.standard_normal(25)
    return {"x": x, "y": f + rng.normal(0, 0.2, 25)}


def exact_log_marginal(x, y, lengthscale, noise):
    # f_x is a free GP (no intercept): y ~ N(0, K + noise^2 I)
    K = kernel_matrix("se", x, x, lengthscale=lengthscale) + 1e-6 * np.eye(len(x))
    return multivariate_normal(np.zeros(len(x)), K + noise**2 * np.eye(len(x))).logpdf(y)


def test_evidence_maximum_matches_exact_marginal_likelihood(gp_data):
    g = gum("y ~ f(x, lengthscale=2.0) - 1", gp_data, family="gaussian", noise_sd=1.0)
    result = fit_evidence(g)
    ell = result.hyperparameters["f_x"]["lengthscale"]
    noise = result.hyperparameters["noise_sd"]
    assert result.objective > result.initial_objective
    # the Laplace evidence is exact here, so its optimum is the exact marginal likelihood's
    assert result.objective == pytest.approx(
        exact_log_marginal(gp_data["x"], gp_data["y"], ell, noise), abs=1e-6
    )
    grid = [(a, b) for a in np.linspace(0.2, 2.0, 37) for b in np.linspace(0.05, 0.6, 23)]
    best = max(exact_log_marginal(gp_data["x"], gp_data["y"], a, b) for a, b in grid)
    assert result.objective >= best - 1e-3


def test_cv_fit_improves_the_cross_validated_likelihood(gp_data):
    g = gum("y ~ f(x, lengthscale=0.05) - 1", gp_data, family="gaussian", noise_sd=0.2)
    before = cv_score(g, k=5)
    result = fit_cv(g, k=5, which=[("f_x", "lengthscale")])
    assert result.objective > before + 5.0
    assert cv_score(g, k=5) == pytest.approx(result.objective)
    assert 0.2 < result.hyperparameters["f_x"]["lengthscale"] < 2.0


def _errors(n, seed, max_points=24):
    g = gum(
        section_3_1_formula(max_points=max_points),
        seed_section_3_1(n, random_seed=seed),
        family="poisson",
    )
    idata = g.laplace(draws=400, random_seed=seed)
    truth = match_constraints({k: fn.support for k, fn in g.design.functions.items()})
    return np.array(
        [
            np.sqrt(np.mean((g.function_summary(idata, k)["mean"] - truth[k]) ** 2))
            for k in g.design.functions
        ]
    )


def test_recovery_error_decreases_with_n():
    """Seed 3.1 / Fig. 4: average over 3 data sets of each function's RMSE at N=50, 200, 500."""
    errors = {n: np.mean([_errors(n, seed) for seed in range(3)], axis=0) for n in (50, 200, 500)}
    assert np.all(errors[200] < errors[50]), errors
    assert np.all(errors[500] < errors[200]), errors


def test_evidence_fit_recovers_section_3_1_at_n500():
    g = gum(
        section_3_1_formula(max_points=32), seed_section_3_1(500, random_seed=0), family="poisson"
    )
    result = fit_evidence(g)
    assert result.objective > result.initial_objective
    idata = g.laplace(draws=400)
    truth = match_constraints({k: fn.support for k, fn in g.design.functions.items()})
    errors = {
        k: np.sqrt(np.mean((g.function_summary(idata, k)["mean"] - truth[k]) ** 2))
        for k in g.design.functions
    }
    assert max(errors.values()) < 0.3, errors


def test_interrupted_search_keeps_the_best_so_far(gp_data, monkeypatch):
    import pmctx
    import pmctx.gum.hyper as hyper

    g = gum("y ~ f(x, lengthscale=2.0) - 1", gp_data, family="gaussian", noise_sd=1.0)
    real, calls = hyper.laplace_fit, []

    def flaky(*args, **kwargs):
        calls.append(1)
        if len(calls) > 12:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(hyper, "laplace_fit", flaky)
    with pytest.warns(pmctx.ConvergenceWarning, match="interrupted"):
        result = fit_evidence(g)
    assert result.interrupted
    assert result.objective >= result.initial_objective
    assert g.laplace_result is not None


def test_free_period_is_fitted_by_evidence():
    rng = np.random.default_rng(11)
    x = rng.uniform(0, 6, 120)
    y = np.sin(2 * np.pi * x / 1.7) + rng.normal(0, 0.2, 120)
    # the evidence is sharply peaked in the period: start within a few percent of it
    g = gum(
        "y ~ f(x, kernel='periodic', period=1.65, lengthscale=1.0) - 1",
        {"x": x, "y": y},
        family="gaussian",
        noise_sd=0.2,
    )
    result = fit_evidence(g, which=[("f_x", "period"), ("f_x", "lengthscale")])
    assert result.objective > result.initial_objective
    assert abs(result.hyperparameters["f_x"]["period"] - 1.7) < 0.05


@pytest.mark.slow
def test_nuts_samples_lengthscales_with_priors(gp_data):
    """Hyperparameters sampled under NUTS: the posterior of the lengthscale sits near the
    evidence optimum (LogNormal(log 0.3, 1) prior, 25 points, true lengthscale 0.6)."""
    import arviz as az

    g = gum(
        "y ~ f(x, lengthscale=0.3) - 1",
        gp_data,
        family="gaussian",
        noise_sd=0.2,
        lengthscale_prior_sigma=1.0,
    )
    assert "f_x_lengthscale" in g.model.named_vars
    idata = g.sample(draws=300, tune=300, chains=2, random_seed=4, cores=1, check_convergence=False)
    assert float(az.rhat(idata, var_names=["f_x_lengthscale"])["f_x_lengthscale"]) < 1.05
    posterior = np.median(idata.posterior["f_x_lengthscale"].values)
    fitted = gum("y ~ f(x, lengthscale=0.3) - 1", gp_data, family="gaussian", noise_sd=0.2)
    best = fit_evidence(fitted).hyperparameters["f_x"]["lengthscale"]
    assert abs(np.log(posterior) - np.log(best)) < 0.4, (posterior, best)


def test_a_glm_has_nothing_to_fit_and_keeps_its_evidence():
    rng = np.random.default_rng(4)
    data = {"x1": rng.normal(size=80), "x2": rng.normal(size=80)}
    data["y"] = rng.poisson(np.exp(0.3 * data["x1"] - 0.2 * data["x2"]))
    g = gum("y ~ x1 + x2", data, family="poisson")
    before = g.fit_laplace().log_evidence
    result = fit_evidence(g)
    assert result.objective == pytest.approx(before) == result.initial_objective
    assert result.n_evaluations == 1 and not result.interrupted
    assert g.laplace_result.log_evidence == pytest.approx(before)
    scored = fit_cv(g, k=3)
    assert scored.objective == scored.initial_objective and scored.n_evaluations == 1
