"""Hyperparameter updates: each against the model's own density on a grid, then Geweke."""

import math

import numpy as np
import pytest
from pmctx.models.ibp import build_model
from scipy import stats

from pmctx.ibp.conditionals import noisy_or_loglik
from pmctx.ibp.hyper import (
    HYPER_PRIORS,
    noisy_or_count_histogram,
    noisy_or_loglik_from_counts,
    sample_basis_var,
    sample_noise_var,
    sample_phi,
    slice_sample_logit,
)
from pmctx.ibp.sampler import IBPHyper, IBPState, gibbs_sweep
from pmctx.steps.ibp_gibbs import IBPHyperGibbs
from pmctx.testing import assert_geweke, geweke_test

RNG = np.random.default_rng(0)
F_SMALL = RNG.normal(size=(5, 2))
X_SMALL = RNG.integers(0, 2, size=(5, 3))
Z_POINT = np.array([[1, 0], [1, 1], [0, 1], [1, 0], [0, 0]])
A_POINT = np.array([[0.8, -0.3], [0.1, 1.2]])
Y_POINT = np.array([[1, 0, 1], [0, 1, 1]])
# (learned variable, grid on its natural scale, how to write a natural value into the point)
GRIDS = {
    "sigma_n2": np.linspace(1e-3, 6.0, 2500),
    "sigma_A2": np.linspace(1e-3, 12.0, 2500),
    "phi": np.linspace(1e-4, 1 - 1e-4, 2000),
    "lam": np.linspace(1e-4, 1 - 1e-4, 2000),
    "eps": np.linspace(1e-5, 1 - 1e-4, 4000),
}


@pytest.fixture(scope="module")
def model():
    return build_model(F_SMALL, X_SMALL, K_max=2, reconstructions=False)


def to_value(name, x):
    return np.log(x) if name.startswith("sigma") else np.log(x) - np.log1p(-x)


def grid_cdf(model, point, name):
    logp = model.compile_logp(jacobian=False)
    key = model.rvs_to_values[model[name]].name
    grid = GRIDS[name]
    dens = []
    for x in grid:
        point[key] = to_value(name, x)
        dens.append(logp(point))
    dens = np.exp(np.array(dens) - max(dens))
    return grid, np.cumsum(dens) / dens.sum()


def draws_of(model, point, name, n, priors=None, thin=1):
    with model:
        step = IBPHyperGibbs([model[name]], priors=priors, rng=1)
    key = model.rvs_to_values[model[name]].name
    out = []
    for _ in range(n):
        for _ in range(thin):
            point = step.step(point)[0]
        v = float(point[key])
        out.append(np.exp(v) if name.startswith("sigma") else 1 / (1 + np.exp(-v)))
    return np.array(out)


def fixed_point(model):
    point = model.initial_point()
    point.update(Z=Z_POINT, A=A_POINT, Y=Y_POINT)
    return point


@pytest.mark.parametrize("name", list(GRIDS))
def test_hyper_update_matches_the_model_density(model, name):
    point = fixed_point(model)
    grid, cdf = grid_cdf(model, dict(point), name)
    thin = 3 if name in ("lam", "eps") else 1  # slice sampling: a Markov chain, thinned
    draws = draws_of(model, dict(point), name, 3000, thin=thin)
    assert stats.kstest(draws, lambda x: np.interp(x, grid, cdf)).pvalue > 1e-3


@pytest.mark.parametrize("name", ["sigma_n2", "phi", "lam"])
def test_grid_test_rejects_a_wrong_prior_in_the_update(model, name):
    """The test above is discriminating: a step that assumes another prior fails it."""
    point = fixed_point(model)
    grid, cdf = grid_cdf(model, dict(point), name)
    wrong = {name: (HYPER_PRIORS[name][0] + 3.0, HYPER_PRIORS[name][1])}
    thin = 3 if name == "lam" else 1
    draws = draws_of(model, dict(point), name, 3000, priors=wrong, thin=thin)
    assert stats.kstest(draws, lambda x: np.interp(x, grid, cdf)).pvalue < 1e-3


def test_noisy_or_histogram_likelihood_matches_direct_sum():
    ll = noisy_or_loglik(X_SMALL, Z_POINT, Y_POINT, 0.7, 0.2).sum()
    n0, n1 = noisy_or_count_histogram(Z_POINT, Y_POINT, X_SMALL)
    assert noisy_or_loglik_from_counts(n0, n1, 0.7, 0.2) == pytest.approx(ll, rel=1e-12)


def test_hyper_step_rejects_a_model_without_learned_hyperparameters():
    fixed = dict(alpha=1.0, sigma_n=0.5, sigma_A=1.0, phi=0.5, lam=0.9, eps=0.05)
    m = build_model(F_SMALL, K_max=2, **fixed)
    with m, pytest.raises(ValueError, match="all are fixed"):
        IBPHyperGibbs()


# ---------------------------------------------------------------- Geweke with hyperparameters

N, K_MAX, D, T = 4, 3, 1, 3


def sample_hyper(rng):
    p = HYPER_PRIORS
    return {
        "alpha": rng.gamma(p["alpha"][0], 1 / p["alpha"][1]),
        "sigma_n2": p["sigma_n2"][1] / rng.gamma(p["sigma_n2"][0]),
        "sigma_A2": p["sigma_A2"][1] / rng.gamma(p["sigma_A2"][0]),
        "phi": rng.beta(*p["phi"]),
        "lam": rng.beta(*p["lam"]),
        "eps": rng.beta(*p["eps"]),
    }


def geweke_pieces(broken=False):
    def sample_prior(rng):
        h = sample_hyper(rng)
        pi = rng.beta(h["alpha"] / K_MAX, 1.0, size=K_MAX)
        Z = (rng.random((N, K_MAX)) < pi).astype(np.int64)
        A = np.sqrt(h["sigma_A2"]) * rng.normal(size=(K_MAX, D))
        Y = (rng.random((K_MAX, T)) < h["phi"]).astype(np.int64)
        return IBPState.from_arrays(Z, A, Y, np.log(pi) - np.log1p(-pi)), h

    def sample_data(params, rng):
        s, h = params
        F = s.Z @ s.A + np.sqrt(h["sigma_n2"]) * rng.normal(size=(N, D))
        p1 = -np.expm1(noisy_or_loglik(np.zeros((N, T)), s.Z, s.Y, h["lam"], h["eps"]))
        return F, (rng.random((N, T)) < p1).astype(np.int64)

    def transition(params, data, rng):
        s, h = params
        F, X = data
        hyper = IBPHyper(h["alpha"], math.sqrt(h["sigma_n2"]), math.sqrt(h["sigma_A2"]),
                         h["phi"], h["lam"], h["eps"])  # fmt: skip
        gibbs_sweep(s, F, X, hyper, rng)
        h = dict(h)
        noise_prior = HYPER_PRIORS["sigma_n2"]
        if broken:  # drops the 1/2 on the sum of squared residuals in the rate
            root2 = math.sqrt(2.0)
            h["sigma_n2"] = sample_noise_var(root2 * F, s.Z, root2 * s.A, noise_prior, rng)
        else:
            h["sigma_n2"] = sample_noise_var(F, s.Z, s.A, noise_prior, rng)
        h["sigma_A2"] = sample_basis_var(s.A, HYPER_PRIORS["sigma_A2"], rng)
        h["phi"] = sample_phi(s.Y, HYPER_PRIORS["phi"], rng)
        n0, n1 = noisy_or_count_histogram(s.Z, s.Y, X)
        for name in ("lam", "eps"):
            a, b = HYPER_PRIORS[name]

            def logd(p, name=name, a=a, b=b):
                v = {**h, name: p}
                prior = (a - 1) * math.log(p) + (b - 1) * math.log1p(-p)
                return prior + noisy_or_loglik_from_counts(n0, n1, v["lam"], v["eps"])

            h[name] = slice_sample_logit(h[name], logd, rng)
        log_pi = -np.logaddexp(0.0, -s.pi_logit)
        a, b = HYPER_PRIORS["alpha"]
        h["alpha"] = rng.gamma(a + K_MAX, 1.0 / (b - log_pi.sum() / K_MAX))
        return s, h

    tests = {name: (lambda p, d, name=name: p[1][name]) for name in HYPER_PRIORS}
    tests["log_sigma_n2"] = lambda p, d: math.log(p[1]["sigma_n2"])
    tests["n_active"] = lambda p, d: p[0].n_active
    tests["fit"] = lambda p, d: float(((d[0] - p[0].Z @ p[0].A) ** 2).sum())
    return sample_prior, sample_data, transition, tests


def test_geweke_with_hyperparameter_updates():
    result = geweke_test(*geweke_pieces(), n_marginal=4000, n_successive=4000, rng=3)
    assert_geweke(result, z_threshold=4.0)


def test_geweke_rejects_a_broken_noise_update():
    result = geweke_test(*geweke_pieces(broken=True), n_marginal=4000, n_successive=4000, rng=3)
    assert not result.passed(4.0), str(result)
