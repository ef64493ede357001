"""Grouped GP functions ``f(x|g)`` and the hierarchical ``f(x) + f(x|g)``.

* same logp as a hand-built pm.Model whose prior is written from the kernel (I (x) K, the
  stacked constraint) at random points, additive and in a product;
* identifiability: the default constraints, and a Laplace fit whose posterior is proper;
* exact prediction per level: at training inputs it reproduces the fitted values, at new
  inputs it is the GP conditional of each level;
* a simulated multi-subject experiment recovers every subject's function and the population
  function (Laplace with evidence-fitted shared hyperparameters; NUTS in a slow test).
"""

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest

from pmctx.gum import gum
from pmctx.gum.constraints import projection
from pmctx.gum.evidence import log_evidence_gradient
from pmctx.gum.hyper import fit_evidence, free_hyperparameters
from pmctx.gum.kernels import kernel_matrix
from pmctx.gum.laplace import log_joint

N = 72
LEVELS = ("s1", "s2", "s3")


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(5)
    return {
        "x": rng.integers(0, 5, N).astype(float),  # exact support: indicator bases
        "z": rng.integers(0, 4, N).astype(float),
        "g": rng.choice(LEVELS, N),
        "y": rng.poisson(2.0, N),
    }


def _codes(values):
    return np.unique(values, return_inverse=True)[1]


def _hand_gp(name, x_support, *, lengthscale, variance, levels, constraint):
    """GP values written from the kernel: ``theta0 + P^T chol(P (I (x) K) P^T) z``."""
    m = len(x_support)
    K = kernel_matrix("se", x_support, x_support, lengthscale=lengthscale, variance=variance)
    K = K + 1e-6 * variance * np.eye(m)
    cov = np.kron(np.eye(levels), K)
    P, theta0 = projection(constraint, levels * m)
    Q = P.T @ np.linalg.cholesky(P @ cov @ P.T)
    z = pm.Normal(f"{name}_z", 0.0, 1.0, shape=P.shape[0])
    return pt.as_tensor(theta0) + pt.dot(pt.as_tensor(Q), z)


def _same_logp(g, hand, n_points=3):
    ours, theirs = g.model.compile_logp(), hand.compile_logp()
    rng = np.random.default_rng(0)
    base = g.model.initial_point()
    assert set(base) == set(hand.initial_point())
    values = []
    for _ in range(n_points):
        point = {k: 0.5 * rng.standard_normal(np.shape(v)) for k, v in base.items()}
        assert np.isclose(ours(point), theirs(point), rtol=1e-10, atol=1e-8)
        u = np.zeros(g.design.n_free)
        for name, sl in g.design.slices.items():
            u[sl] = np.atleast_1d(point[f"{name}_z"])
        values.append((ours(point), log_joint(g.design, u)))
    # the Laplace log joint is the same density up to a constant
    diffs = [(a - values[0][0], b - values[0][1]) for a, b in values[1:]]
    assert all(np.isclose(d1, d2) for d1, d2 in diffs), diffs


def test_hierarchical_sum_matches_hand_built_model(data):
    g = gum("y ~ f(x) + f(x|g, lengthscale=0.7, variance=0.5)", data, family="poisson")
    assert g.constraints == {"f_x": "mean-zero", "f_x_g": "mean-zero"}
    support = np.arange(5.0)
    with pm.Model() as hand:
        pop = _hand_gp(
            "f_x", support, lengthscale=1.0, variance=1.0, levels=1, constraint="mean-zero"
        )
        dev = _hand_gp(
            "f_x_g", support, lengthscale=0.7, variance=0.5, levels=3, constraint="mean-zero"
        )
        x, lev = _codes(data["x"]), _codes(data["g"])
        rho = pop[x] + pt.reshape(dev, (3, 5))[lev, x] + 10.0 * pm.Normal("intercept_z", 0, 1)
        pm.Poisson("y", mu=pt.exp(rho), observed=data["y"])
    _same_logp(g, hand)


def test_grouped_gp_in_a_product_matches_hand_built_model(data):
    # the grouped function keeps the free scale (GP, name sorts first); f_z has mean one
    g = gum("y ~ f(z) * f(x|g, lengthscale=0.7)", data, family="poisson")
    assert g.constraints == {"f_x_g": "free", "f_z": "mean-one"}
    with pm.Model() as hand:
        dev = _hand_gp(
            "f_x_g", np.arange(5.0), lengthscale=0.7, variance=1.0, levels=3, constraint="free"
        )
        f_z = _hand_gp(
            "f_z", np.arange(4.0), lengthscale=1.0, variance=1.0, levels=1, constraint="mean-one"
        )
        x, lev, z = _codes(data["x"]), _codes(data["g"]), _codes(data["z"])
        rho = pt.reshape(dev, (3, 5))[lev, x] * f_z[z] + 10.0 * pm.Normal("intercept_z", 0, 1)
        pm.Poisson("y", mu=pt.exp(rho), observed=data["y"])
    _same_logp(g, hand)


def test_grouped_gp_dims_coords_and_shared_hyperparameters(data):
    g = gum("y ~ f(x|g)", data, family="poisson")
    post = g.laplace(draws=20).posterior["f_x_g"]
    assert post.dims == ("chain", "draw", "f_x_g_level", "f_x_g_x")
    assert list(post["f_x_g_level"].values) == list(LEVELS)
    assert tuple(g.model.named_vars_to_dims["f_x_g"]) == ("f_x_g_level", "f_x_g_x")
    # the shared variance is the pooling strength: fitted by the evidence by default
    assert ("f_x_g", "variance") in free_hyperparameters(g)
    summary = g.function_summary(g.laplace(draws=20), "f_x_g")
    assert list(summary.columns[:2]) == ["level", "x"] and len(summary) == 15


def test_grouped_gp_errors_are_clear(data):
    with pytest.raises(ValueError, match="Unknown column"):
        gum("y ~ f(x|nope)", data, family="poisson")
    with pytest.raises(ValueError, match="f\\(\\.\\.\\.\\) takes a column name or x\\|g"):
        gum("y ~ f(x + z)", data, family="poisson")
    g = gum("y ~ f(x|g)", data, family="poisson")
    with pytest.raises(ValueError, match="not seen in training"):
        g.predict({"x": np.array([1.0]), "g": np.array(["s9"])}, draws=5)


def test_prediction_per_level_is_exact(data):
    g = gum("y ~ f(x) + f(x|g, variance=0.3)", data, family="poisson")
    idata = g.laplace(draws=200)
    # at the training inputs the prediction reproduces the fitted predictor draw by draw
    train = {"x": data["x"], "g": data["g"]}
    rho = g.predict(train, idata, kind="rho").values[0]
    pop = idata.posterior["f_x"].values[0]
    dev = idata.posterior["f_x_g"].values[0]
    x, lev = _codes(data["x"]), _codes(data["g"])
    direct = pop[:, x] + dev[:, lev, x] + idata.posterior["intercept"].values[0][:, None]
    np.testing.assert_allclose(rho, direct, atol=1e-10)
    # at a new input each level's function is its own GP conditional: its mean is
    # K(x*, s) K(s, s)^-1 theta_level, level by level
    fn = g.design.functions["f_x_g"]
    values = g.function_values("f_x_g", [2.5], idata, draws=200)
    assert values.shape == (1, 200, 3, 1)
    K = fn.kernel_cov()
    k_star = kernel_matrix("se", np.array([2.5]), fn.support, lengthscale=1.0, variance=0.3)
    expected = (dev @ np.linalg.solve(K, k_star.T))[..., 0].mean(axis=0)
    np.testing.assert_allclose(values[0, :, :, 0].mean(axis=0), expected, atol=0.08)


def _experiment(seed, *, subjects=6, trials=150):
    """Poisson responses of several subjects: population function plus smooth deviations
    that average to zero over subjects at every x."""
    rng = np.random.default_rng(seed)
    amplitude, phase = rng.normal(0, 0.35, subjects), rng.uniform(0, 2 * np.pi, subjects)

    def deviation(x):
        dev = amplitude[:, None] * np.sin(2.0 * np.asarray(x)[None] + phase[:, None])
        return dev - dev.mean(axis=0)

    def population(x):
        return 0.5 + np.sin(2.0 * np.asarray(x))

    x = rng.uniform(0, 2, subjects * trials)
    s = np.repeat(np.arange(subjects), trials)
    rho = population(x) + deviation(x)[s, np.arange(x.size)]
    data = {"x": x, "s": np.char.add("subj", s.astype(str)), "y": rng.poisson(np.exp(rho))}
    return data, population, deviation


def _level_curves(g, grid, idata=None):
    """Posterior mean predictor of every level on ``grid`` (levels x grid)."""
    levels = g.design.functions["f_x_s"].level_names
    rows = {"x": np.tile(grid, len(levels)), "s": np.repeat(levels, len(grid))}
    rho = g.predict(rows, idata, kind="rho", draws=300).values
    return rho.reshape(-1, len(levels), len(grid)).mean(axis=0)


def _rmse(a, b):
    return float(np.sqrt(np.mean((a - b) ** 2)))


@pytest.fixture(scope="module")
def experiment():
    data, population, deviation = _experiment(3)
    g = gum("y ~ f(x, max_points=12) + f(x|s, max_points=12)", data, family="poisson")
    fit_evidence(g)
    return g, data, population, deviation


def test_multi_subject_recovery_laplace(experiment):
    # Tolerances (fixed seed 3; measured: per-subject RMSE 0.08-0.19, mean 0.130; the
    # average subject 0.053; the centred population GP 0.066; six separate evidence-fitted
    # fits mean 0.137; seed 4 gave 0.087 / 0.038 / 0.018 / 0.093): every subject's predictor
    # within 0.25 RMSE on [0.1, 1.9] (mean < 0.16), the population function (the average
    # subject) within 0.1, the population GP's shape within 0.12, and pooling strictly
    # better on average than separate fits of the same subjects.
    g, data, population, deviation = experiment
    grid = np.linspace(0.1, 1.9, 19)
    truth = population(grid)[None] + deviation(grid)
    curves = _level_curves(g, grid)
    per_subject = [_rmse(c, t) for c, t in zip(curves, truth)]
    assert max(per_subject) < 0.25 and np.mean(per_subject) < 0.16, per_subject
    assert _rmse(curves.mean(axis=0), population(grid)) < 0.1
    # the population GP itself carries the shape (the deviations average near zero)
    pop = g.function_values("f_x", grid, draws=300).mean(axis=(0, 1))
    centred = pop - pop.mean()
    assert _rmse(centred, population(grid) - population(grid).mean()) < 0.12
    separate = []
    for k, level in enumerate(g.design.functions["f_x_s"].level_names):
        rows = data["s"] == level
        one = gum(
            "y ~ f(x, max_points=12)",
            {"x": data["x"][rows], "y": data["y"][rows]},
            family="poisson",
        )
        fit_evidence(one)
        rho = one.predict({"x": grid}, kind="rho", draws=300).values.mean(axis=(0, 1))
        separate.append(_rmse(rho, truth[k]))
    assert np.mean(per_subject) < np.mean(separate), (per_subject, separate)


@pytest.mark.slow
def test_multi_subject_recovery_nuts_agrees_with_laplace(experiment):
    g, _, population, deviation = experiment
    idata = g.sample(draws=1000, tune=500, chains=2, cores=1, random_seed=1, progressbar=False)
    grid = np.linspace(0.1, 1.9, 19)
    truth = population(grid)[None] + deviation(grid)
    nuts, laplace = _level_curves(g, grid, idata), _level_curves(g, grid)
    assert _rmse(nuts, laplace) < 0.05
    assert max(_rmse(c, t) for c, t in zip(nuts, truth)) < 0.25


@pytest.mark.slow
def test_sampled_lengthscale_builds_the_same_grouped_prior(data):
    # with lengthscale_prior_sigma the kernel of every level is rebuilt in the graph; at the
    # declared lengthscale the log density differs from the fixed one by the prior term only
    form = "y ~ f(x|g, lengthscale=0.7)"
    sampled = gum(form, data, family="poisson", lengthscale_prior_sigma=0.5)
    fixed = gum(form, data, family="poisson")
    ours, theirs = sampled.model.compile_logp(), fixed.model.compile_logp()
    rng = np.random.default_rng(1)
    diffs = []
    for _ in range(3):
        p, q = sampled.model.initial_point(), fixed.model.initial_point()
        p["f_x_g_z"] = q["f_x_g_z"] = rng.standard_normal(q["f_x_g_z"].shape)
        p["intercept_z"] = q["intercept_z"] = rng.standard_normal()
        p["f_x_g_lengthscale_log__"] = np.log(0.7)
        diffs.append(ours(p) - theirs(q))
    np.testing.assert_allclose(diffs, diffs[0], atol=1e-9)


def test_evidence_gradient_of_shared_hyperparameters_matches_finite_differences(data):
    # the grouped prior's derivatives (I (x) dK for the lengthscale, I (x) K for the
    # variance) give the evidence gradient that central differences of the re-optimised
    # evidence give (relative 1e-5, as for ungrouped functions in test_gum_evidence)
    from tests.gum.test_gum_evidence import _finite_difference

    g = gum("y ~ f(z) + f(x|g, lengthscale=0.8, variance=0.4)", data, family="poisson")
    pairs = free_hyperparameters(g)
    assert ("f_x_g", "lengthscale") in pairs and ("f_x_g", "variance") in pairs
    expected, result = _finite_difference(g, pairs)
    gradient = log_evidence_gradient(g.design, result, pairs)
    assert np.allclose(gradient, expected, rtol=1e-5, atol=1e-5), (gradient, expected)
