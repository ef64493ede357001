"""Laplace core: the numpy log joint is the PyMC model's, derivatives are exact, and the
evidence/posterior are exact where the model is linear-Gaussian."""

import numpy as np
import pytest
from scipy.optimize import approx_fprime
from scipy.stats import multivariate_normal

from pmctx.gum import GP, Categorical, Linear, gum
from pmctx.gum.families import loglik
from pmctx.gum.laplace import laplace_fit, log_joint
from pmctx.gum.synthetic import SECTION_3_1_FORMULA, seed_section_3_1


@pytest.fixture(scope="module")
def product_model():
    rng = np.random.default_rng(4)
    n = 60
    data = {"a": rng.uniform(0, 1, n), "b": rng.uniform(0, 1, n), "p": rng.integers(0, 3, n)}
    rho = (1 + data["a"]) * np.cos(3 * data["b"]) + 0.3 * data["p"]
    data["y"] = rng.poisson(np.exp(rho))
    expr = GP("a", max_points=8, lengthscale=0.5) * GP("b", max_points=8) + Categorical("p")
    return gum(expr, data, response="y", family="poisson")


def _point(design, u):
    point = {f"{name}_z": u[design.slices[name]] for name in design.functions}
    for key in design.slices:
        if key.startswith("c_") or key == "intercept":
            point[f"{key}_z"] = u[design.slices[key]][0]
    return point


def test_log_joint_equals_pymc_model_logp(product_model):
    design = product_model.design
    logp = product_model.model.compile_logp()
    rng = np.random.default_rng(0)
    diffs = []
    for _ in range(3):
        u = rng.standard_normal(design.n_free) * 0.5
        diffs.append(logp(_point(design, u)) - log_joint(design, u))
    # equal up to the prior's normalising constant -D/2 log(2 pi)
    assert np.allclose(diffs, -0.5 * design.n_free * np.log(2 * np.pi))


@pytest.mark.parametrize(
    "family_link",
    [("poisson", "log"), ("bernoulli", "logit"), ("bernoulli", "probit"), ("gaussian", "identity")],
)
def test_family_derivatives(family_link):
    family, link = family_link
    rho = np.linspace(-3, 3, 7)
    y = {"poisson": np.arange(7.0), "gaussian": np.linspace(-1, 1, 7)}.get(
        family, np.array([0, 1, 1, 0, 1, 0, 1.0])
    )
    ll, d1, w = loglik(family, link, y, rho, noise_sd=0.7)
    eps = 1e-5
    up = loglik(family, link, y, rho + eps, noise_sd=0.7)
    down = loglik(family, link, y, rho - eps, noise_sd=0.7)
    assert np.allclose(d1, (up[0] - down[0]) / (2 * eps), atol=1e-6)
    assert np.allclose(w, -(up[1] - down[1]) / (2 * eps), atol=1e-5)
    from scipy import stats

    reference = {
        "poisson": lambda: stats.poisson.logpmf(y, np.exp(rho)),
        "gaussian": lambda: stats.norm.logpdf(y, rho, 0.7),
    }.get(
        family,
        lambda: stats.bernoulli.logpmf(
            y, 1 / (1 + np.exp(-rho)) if link == "logit" else stats.norm.cdf(rho)
        ),
    )
    assert np.allclose(ll, reference())


def test_gradient_and_hessian_are_exact(product_model):
    design = product_model.design
    u = np.random.default_rng(1).standard_normal(design.n_free) * 0.3
    values = design.factor_values(u)
    rho = design.predictor(u)
    _, d1, w = loglik("poisson", "log", design.y, rho)
    J = design.jacobian(u, values)
    grad = J.T @ d1 - u
    numeric = approx_fprime(u, lambda v: log_joint(design, v), 1e-6)
    assert np.allclose(grad, numeric, rtol=1e-4, atol=1e-3)
    hessian = (J * w[:, None]).T @ J + np.eye(len(u)) - design.curvature_term(u, d1, values)

    def gradient(v):
        r = design.predictor(v)
        return design.jacobian(v).T @ loglik("poisson", "log", design.y, r)[1] - v

    numeric_h = np.array(
        [approx_fprime(u, lambda v, k=k: gradient(v)[k], 1e-6) for k in range(len(u))]
    )
    assert np.allclose(-hessian, numeric_h, rtol=1e-4, atol=1e-3)


@pytest.fixture(scope="module")
def gaussian_gam():
    rng = np.random.default_rng(2)
    n = 40
    data = {"a": rng.uniform(0, 2, n), "b": rng.uniform(0, 2, n), "c": rng.normal(size=n)}
    data["y"] = np.sin(2 * data["a"]) + 0.5 * data["b"] ** 2 + 0.3 * data["c"]
    data["y"] = data["y"] + rng.normal(0, 0.3, n)
    formula = (
        "y ~ f(a, lengthscale=0.5, max_points=10) + f(b, kernel='matern52', max_points=10) + c"
    )
    return gum(formula, data, family="gaussian", noise_sd=0.3)


def test_gaussian_laplace_is_exact(gaussian_gam):
    """Linear-Gaussian GAM: the Laplace evidence is the exact marginal likelihood and the
    Laplace posterior is the conjugate one (ERRATA: -1/2 log|I + K W|, no 1/2 inside)."""
    design = gaussian_gam.design
    result = laplace_fit(design)
    J = design.jacobian(np.zeros(design.n_free))  # rho = J u + const for an additive model
    const = design.predictor(np.zeros(design.n_free))
    cov = J @ J.T + 0.3**2 * np.eye(design.n_obs)
    exact = multivariate_normal(const, cov).logpdf(design.y)
    assert result.log_evidence == pytest.approx(exact, abs=1e-8)
    precision = J.T @ J / 0.3**2 + np.eye(design.n_free)
    mean = np.linalg.solve(precision, J.T @ (design.y - const) / 0.3**2)
    assert np.allclose(result.u_map, mean, atol=1e-8)
    assert np.allclose(result.cov, np.linalg.inv(precision), atol=1e-10)
    # the halved-determinant typo of the seed's eq. 15 would give a different value
    W = np.eye(design.n_obs) / 0.3**2
    typo = np.linalg.slogdet(np.eye(design.n_obs) + 0.5 * J @ J.T @ W)[1]
    right = np.linalg.slogdet(np.eye(design.n_obs) + J @ J.T @ W)[1]
    assert abs(typo - right) > 1.0


def test_laplace_idata_has_named_dims_and_log_likelihood(product_model):
    idata = product_model.laplace(draws=50)
    assert idata.posterior["f_a"].dims == ("chain", "draw", "f_a_x")
    assert idata.posterior["w_p"].dims == ("chain", "draw", "w_p_level")
    assert idata.log_likelihood["y"].shape == (1, 50, 60)
    assert np.isfinite(idata.posterior.attrs["log_evidence"])
    # mean-zero default on the additive categorical term
    assert np.allclose(idata.posterior["w_p"].mean("w_p_level"), 0.0, atol=1e-10)


def test_multistart_finds_the_better_mode():
    data = seed_section_3_1(300, random_seed=0)
    g = gum(
        SECTION_3_1_FORMULA.replace("0.1", "1.5").replace("pi/20", "2.0"), data, family="poisson"
    )
    single = [laplace_fit(g.design, n_starts=1, random_seed=s) for s in range(4)]
    best = laplace_fit(g.design, n_starts=4)
    assert (
        log_joint(g.design, best.u_map) >= max(log_joint(g.design, f.u_map) for f in single) - 1e-6
    )
    assert best.converged and best.exact_hessian


def test_linear_terms_only_match_statsmodels():
    sm = pytest.importorskip("statsmodels.api")
    rng = np.random.default_rng(3)
    n = 400
    X = rng.normal(size=(n, 2))
    for family, smfam, y in [
        (
            "poisson",
            sm.families.Poisson(),
            rng.poisson(np.exp(0.3 + 0.5 * X[:, 0] - 0.4 * X[:, 1])),
        ),
        (
            "bernoulli",
            sm.families.Binomial(),
            (rng.uniform(size=n) < 1 / (1 + np.exp(-(-0.2 + X[:, 0] + 0.7 * X[:, 1])))).astype(int),
        ),
    ]:
        g = gum(
            Linear("x1", sd=100.0) + Linear("x2", sd=100.0),
            {"x1": X[:, 0], "x2": X[:, 1], "y": y},
            response="y",
            family=family,
            intercept_sd=100.0,
        )
        idata = g.laplace(draws=20)
        result = g.laplace_result
        fit = sm.GLM(y, sm.add_constant(X), family=smfam).fit()
        u = result.u_map
        ours = [
            g.design.scalars(u)["intercept"],
            *(g.design.thetas(u)[k][0] for k in ("b_x1", "b_x2")),
        ]
        assert np.allclose(ours, fit.params, atol=2e-3), (ours, fit.params)
        ours_sd = np.sqrt(np.diag(result.cov))[[2, 0, 1]] * 100.0
        assert np.allclose(ours_sd, fit.bse, rtol=0.02)
        assert "y" in idata.log_likelihood


def test_fixed_offset_regressor_enters_with_coefficient_one():
    rng = np.random.default_rng(8)
    x, z = rng.normal(size=50), rng.normal(size=50)
    g = gum("y ~ fixed(z) + x", {"x": x, "z": z, "y": 2 * x + z}, family="gaussian", noise_sd=0.5)
    u = np.zeros(g.design.n_free)
    assert np.allclose(g.design.predictor(u), z)


@pytest.mark.slow
def test_laplace_matches_pymc_extras(product_model):
    """Independent implementation: pymc-extras' fit_laplace (BFGS + autodiff Hessian)."""
    pmx = pytest.importorskip("pymc_extras")
    ours = laplace_fit(product_model.design)
    idata = pmx.fit_laplace(
        model=product_model.model,
        initvals=product_model.map_point(ours.u_map),
        draws=4000,
        random_seed=1,
        progressbar=False,
        optimize_method="trust-ncg",
    )
    design = product_model.design
    for name in design.functions:
        theirs = idata.posterior[name].values.reshape(-1, len(design.functions[name].support))
        mean = design.thetas(ours.u_map)[name]
        sd = np.sqrt(
            np.diag(
                design.functions[name].Q
                @ ours.cov[design.slices[name], design.slices[name]]
                @ design.functions[name].Q.T
            )
        )
        assert np.allclose(theirs.mean(0), mean, atol=0.1 * sd.max() + 1e-6)
        assert np.allclose(theirs.std(0), sd, rtol=0.1, atol=1e-6)


def test_laplace_after_fit_evidence_reuses_the_newton_fit(monkeypatch):
    """g.laplace() after fit_evidence draws from the stored fit: no Newton run."""
    import pmctx.gum.approximations as approximations
    from pmctx.gum.hyper import fit_evidence

    data = seed_section_3_1(80, random_seed=1)
    g = gum("y ~ f(x1, max_points=8) + f(x3, max_points=8)", data, family="poisson")
    fit_evidence(g, max_evaluations=10)
    stored = g.laplace_result

    def forbidden(*args, **kwargs):
        raise AssertionError("laplace_fit was called again")

    monkeypatch.setattr(approximations, "laplace_fit", forbidden)
    idata = g.laplace(draws=50)
    assert idata.posterior.attrs["log_evidence"] == stored.log_evidence
    g.set_hyperparameters({"f_x1": {"lengthscale": 0.3}})  # invalidates the stored fit
    with pytest.raises(AssertionError, match="called again"):
        g.laplace(draws=50)


def test_constant_regressor_is_a_clear_error():
    data = seed_section_3_1(30, random_seed=1)
    data["x1"] = np.full(30, 0.5)
    with pytest.raises(ValueError, match="single value 0.5.*intercept"):
        gum("y ~ f(x1) + f(x3)", data, family="poisson")
