"""Gradient of the Laplace evidence (pmctx.gum.evidence) and the gradient-based fit_evidence."""

import numpy as np
import pytest

from pmctx.gum import gum
from pmctx.gum.evidence import cov_derivative, log_evidence_gradient
from pmctx.gum.hyper import _get, _set, fit_evidence, free_hyperparameters
from pmctx.gum.laplace import laplace_fit
from pmctx.gum.synthetic import psychophysics, section_3_1_formula, seed_section_3_1


def _finite_difference(g, pairs, step=1e-4):
    """Central differences of the evidence, re-optimising the mode at every point."""
    x0 = _get(g, pairs)
    _set(g, pairs, x0)
    u0, thetas = None, None
    base = g.fit_laplace(tol=1e-14)
    u0, thetas = base.u_map, g.design.thetas(base.u_map)
    out = []
    for k in range(len(pairs)):
        values = []
        for sign in (1.0, -1.0):
            x = x0.copy()
            x[k] += sign * step
            _set(g, pairs, x)
            start = g.design.warm_start(u0, thetas)
            values.append(laplace_fit(g.design, u0=start, tol=1e-14).log_evidence)
        out.append((values[0] - values[1]) / (2 * step))
    _set(g, pairs, x0)
    return np.array(out), g.fit_laplace(u0=g.design.warm_start(u0, thetas), tol=1e-14)


def _poisson_product():
    data = seed_section_3_1(300, random_seed=0)
    return gum(section_3_1_formula(max_points=12), data, family="poisson"), None


def _gaussian_matern():
    rng = np.random.default_rng(7)
    x = np.sort(rng.uniform(0, 4, 25))
    data = {"x": x, "y": np.sin(2 * x) + rng.normal(0, 0.3, 25)}
    g = gum("y ~ f(x, lengthscale=1.0, kernel='matern52') - 1", data, noise_sd=0.5)
    return g, [("f_x", "lengthscale"), ("f_x", "variance"), ("noise_sd", "noise_sd")]


def _bernoulli_random_effect():
    data = psychophysics(300, random_seed=2)
    formula = (
        "choice ~ w(position) * f(angle, kernel='periodic', period=2*pi, max_points=10)"
        " + (1|category)"
    )
    return gum(formula, data, family="bernoulli"), None


@pytest.mark.parametrize("make", [_poisson_product, _gaussian_matern, _bernoulli_random_effect])
def test_gradient_matches_finite_differences(make):
    """Lengthscales of a product, variance + Matérn lengthscale + Gaussian noise, a periodic
    lengthscale + random-effect sd: the analytic/implicit gradient equals central differences
    of the re-optimised evidence (relative 1e-5; dropping the third-derivative term of the
    mode's shift changes the product model's gradient by ~1e-2)."""
    g, which = make()
    pairs = free_hyperparameters(g, which)
    expected, result = _finite_difference(g, pairs)
    gradient = log_evidence_gradient(g.design, result, pairs)
    assert np.allclose(gradient, expected, rtol=1e-5, atol=1e-5), (gradient, expected)


def test_period_derivative_matches_kernel_difference():
    g = gum(
        "y ~ f(x, kernel='periodic', period=2.0, lengthscale=0.7)",
        {"x": 0.37 * np.arange(6.0), "y": np.zeros(6)},
    )
    fn = g.design.functions["f_x"]
    dK = {key: cov_derivative(fn, key) for key in ("period", "lengthscale")}
    for key, value in (("period", 2.0), ("lengthscale", 0.7)):
        fn.hyper[key] = value * np.exp(1e-6)
        up = fn.prior_cov()
        fn.hyper[key] = value * np.exp(-1e-6)
        down = fn.prior_cov()
        fn.hyper[key] = value
        assert np.allclose(dK[key], (up - down) / 2e-6, atol=1e-7), key
        assert np.abs(dK[key]).max() > 0.1


def test_gradient_fit_reaches_the_derivative_free_optimum():
    data = seed_section_3_1(500, random_seed=0)
    fits = {}
    for gradient in (True, False):
        g = gum(section_3_1_formula(max_points=24), data, family="poisson")
        fits[gradient] = fit_evidence(g, gradient=gradient)
    assert fits[True].objective >= fits[False].objective - 1e-3
    assert fits[True].n_evaluations < fits[False].n_evaluations
    for name in ("f_x1", "f_x2", "f_x3"):
        ratio = (
            fits[True].hyperparameters[name]["lengthscale"]
            / fits[False].hyperparameters[name]["lengthscale"]
        )
        assert abs(np.log(ratio)) < 0.1, (name, ratio)


def test_laplace_after_fit_evidence_reuses_the_fit(monkeypatch):
    import pmctx.gum.approximations as approximations

    g = gum(
        section_3_1_formula(max_points=12), seed_section_3_1(200, random_seed=1), family="poisson"
    )
    result = fit_evidence(g)

    def refit(*args, **kwargs):
        raise AssertionError("g.laplace() refitted the Laplace approximation")

    monkeypatch.setattr(approximations, "laplace_fit", refit)
    idata = g.laplace(draws=20, posterior_predictive=False)
    assert idata.posterior.attrs["log_evidence"] == pytest.approx(result.objective, abs=1e-9)
