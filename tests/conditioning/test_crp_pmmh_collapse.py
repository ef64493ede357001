"""ParticleMarginalMH's independence proposal and collapsed (level, gain) block: exactness.

Same tiny problem as ``test_crp_pmmh`` (6 trials, one-particle filter whose runs are
enumerable, ``exact.single_particle_paths``), with the linear-Gaussian CR model of
``build_subject_model``: ``level ~ N(0.6, 1)``, ``gain ~ N(0, 2)``, ``sd`` fixed at 0.2.
Given a path ``V`` the responses are Gaussian with (level, gain) integrated out,
``y ~ N(X m0, sd^2 I + X S0 X^T)`` with ``X = [1, V - 0.5]``, so the posterior of alpha on a
fine grid is exact up to quadrature. The sampler (tuning, then the grid independence
proposal at every step and the exact (level, gain) redraw) must reproduce it: 5 equal-mass
bins, total-variation tolerance 0.07 (about twice the expected Monte Carlo TV at the chain's
ESS) plus a chi-square test at that ESS, as the other PMMH checks; the posterior mean of
``gain`` must match the exact one within 4 Monte Carlo standard errors. A sampler that
leaves out the independence proposal's Hastings correction must fail the same check.
"""

import arviz as az
import numpy as np
import pymc as pm
import pytest
from scipy import stats
from scipy.special import logsumexp

from pmctx.conditioning.design import Design, Phase
from pmctx.conditioning.exact import single_particle_paths
from pmctx.conditioning.likelihood import SubjectLikelihood
from pmctx.conditioning.pmmh import ParticleMarginalMH
from pmctx.conditioning.posterior import FilterV, _GaussianBlock, build_subject_model
from pmctx.testing import compare_to_exact

DESIGN = Design(
    [
        Phase("acquisition", n=3, cs=["tone"], us=True, context="A"),
        Phase("extinction", n=2, cs=["tone"], us=False, context="B"),
        Phase("test", n=1, cs=["tone"], us=False, context="A"),
    ]
)
Y = np.array([0.5, 0.8, 0.95, 0.9, 0.35, 0.85])
SD, ALPHA_MAX, N_BINS = 0.2, 5.0, 5
M0, S0 = np.array([0.6, 0.0]), np.array([1.0, 2.0])


def _path_terms(alpha):
    """Per path: log probability, marginal log likelihood, posterior mean of gain given V."""
    log_p, V = single_particle_paths(DESIGN, alpha=alpha, a=1.0)
    ll, gain = [], []
    for v in V:
        X = np.column_stack([np.ones(6), v - 0.5])
        cov = SD**2 * np.eye(6) + X @ np.diag(S0**2) @ X.T
        ll.append(stats.multivariate_normal.logpdf(Y, X @ M0, cov))
        P = X.T @ X / SD**2 + np.diag(1 / S0**2)
        gain.append(np.linalg.solve(P, X.T @ Y / SD**2 + M0 / S0**2)[1])
    return log_p, np.array(ll), np.array(gain)


@pytest.fixture(scope="module")
def exact():
    """Equal-mass bin edges of alpha and the exact posterior mean of gain (midpoint rule)."""
    n_grid = 100
    grid = (np.arange(n_grid) + 0.5) * ALPHA_MAX / n_grid
    log_post, gain_mean = [], []
    for alpha in grid:
        log_p, ll, gain = _path_terms(alpha)
        log_post.append(logsumexp(log_p + ll))
        w = np.exp(log_p + ll - log_post[-1])
        gain_mean.append(w @ gain)
    w = np.exp(np.array(log_post) - max(log_post))
    w /= w.sum()
    cdf = np.cumsum(w)
    edges = np.interp(np.arange(1, N_BINS) / N_BINS, cdf, grid + 0.5 * ALPHA_MAX / n_grid)
    return edges, float(w @ np.array(gain_mean))


def run_step(step_class, seed, draws=4000):
    lik = SubjectLikelihood(Y, DESIGN, n_particles=1, rng=seed)
    op = FilterV(lik)
    block = _GaussianBlock(M0, S0, Y, np.arange(6), sd=SD)
    with pm.Model():
        alpha = pm.Uniform("alpha", 0.0, ALPHA_MAX)
        V = op(alpha, 1.0, 1.0, 0.0, 1.0)
        level = pm.Normal("level", M0[0], S0[0])
        gain = pm.Normal("gain", M0[1], S0[1])
        pm.Normal("cr", level + gain * (V - 0.5), SD, observed=Y)
        step = step_class([alpha], op, collapse=block, independence_prob=1.0)
        idata = pm.sample(
            draws=draws,
            tune=500,
            chains=1,
            cores=1,
            step=[step],
            random_seed=seed,
            progressbar=False,
            compute_convergence_checks=False,
        )
    return idata


class NoHastings(ParticleMarginalMH):
    """Broken: the independence proposal without its Hastings correction ``q(x) / q(x')``."""

    def _grid_log_density(self, q):
        return 0.0


def _compare(idata, edges):
    x = idata.posterior["alpha"].values.ravel()
    ess = float(az.ess(idata, var_names=["alpha"])["alpha"])
    probs = np.full(N_BINS, 1.0 / N_BINS)
    return compare_to_exact(np.digitize(x, edges), probs, tv_tol=0.07, ess=ess)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2])
def test_collapsed_independence_pmmh_matches_exact_posterior(exact, seed):
    edges, gain_mean = exact
    idata = run_step(ParticleMarginalMH, seed)
    result = _compare(idata, edges)
    assert result.passed, result
    g = idata.posterior["gain"]
    se = float(az.mcse(idata, var_names=["gain"])["gain"])
    assert abs(float(g.mean()) - gain_mean) < 4 * se, (float(g.mean()), gain_mean, se)


@pytest.mark.slow
def test_missing_hastings_correction_fails_the_same_check(exact):
    result = _compare(run_step(NoHastings, 1), exact[0])
    assert not result.passed, result


@pytest.fixture(scope="module")
def lcm_model():
    """The model of ``build_subject_model`` on the tiny design and its compiled logp."""
    model = build_subject_model(Y, DESIGN, variant="lcm", n_particles=3, rng=0)
    return model, model.compile_logp()


def test_gaussian_block_is_the_exact_conditional(lcm_model):
    """Bayes' identity: log p(level, gain, y | V) - log N((level, gain); m, C) is constant."""
    design_len = 6
    model, logp = lcm_model
    block = model.collapse
    assert block is not None and block.names == ("level", "gain")
    point = model.initial_point()
    point["alpha_interval__"] = np.array(0.3)
    point["sd_log__"] = np.array(np.log(0.15))
    logp(point)  # runs the filter: V is cached in the Op
    V = model.filter_op._cache[1]
    assert V.shape == (design_len,)
    mean, chol = block.conditional(point, V)
    rng = np.random.default_rng(0)
    diffs = []
    for _ in range(5):
        beta = mean + rng.normal(size=2)
        p = dict(point, level=np.array(beta[0]), gain=np.array(beta[1]))
        cov = chol @ chol.T
        diffs.append(float(logp(p)) - stats.multivariate_normal.logpdf(beta, mean, cov))
    np.testing.assert_allclose(diffs, diffs[0], atol=1e-8)


def test_independence_prob_is_validated():
    lik = SubjectLikelihood(Y, DESIGN, n_particles=1, rng=0)
    op = FilterV(lik)
    with pm.Model():
        alpha = pm.Uniform("alpha", 0.0, ALPHA_MAX)
        pm.Normal("cr", op(alpha, 1.0, 1.0, 0.0, 1.0), SD, observed=Y)
        with pytest.raises(ValueError, match="independence_prob must lie in"):
            ParticleMarginalMH([alpha], op, independence_prob=1.5)


def test_numpy_multivariate_t_matches_scipy():
    """The independence proposal's t: log density equals SciPy's; draws follow it (KS test
    of the squared Mahalanobis distance, whose law is d F(d, df); fixed seed, 4,000 draws)."""
    from pmctx.conditioning.pmmh import _MultivariateT

    mean, shape = np.array([0.3, -1.0]), np.array([[2.0, 0.6], [0.6, 0.5]])
    t = _MultivariateT(mean, shape, df=4.0)
    ref = stats.multivariate_t(mean, shape, df=4)
    rng = np.random.default_rng(3)
    for x in rng.normal(size=(5, 2)) * 3:
        np.testing.assert_allclose(t.log_density(x), ref.logpdf(x), rtol=1e-12)
    draws = np.array([t.draw(rng) for _ in range(4000)])
    z = np.linalg.solve(np.linalg.cholesky(shape), (draws - mean).T)
    ks = stats.kstest((z**2).sum(axis=0) / 2, stats.f(2, 4).cdf)
    assert ks.pvalue > 0.001, ks


def test_collapsed_log_density_is_bayes_identity(lcm_model):
    """The step's collapsed log density (log prior of the rest + closed-form marginal
    likelihood) equals Bayes' identity at the block's conditional mean,
    ``log p(rest, m, y | V) - log N(m; m, C)``, at several points and filter runs."""
    model, logp = lcm_model
    with model:
        step = ParticleMarginalMH(
            [model["alpha"], model["a"]], model.filter_op, collapse=model.collapse, rng=0
        )
    assert {v.name for v in step.vars} == {"alpha_interval__", "a_interval__", "level", "gain"}
    rng = np.random.default_rng(5)
    for _ in range(4):
        point = model.initial_point()
        point["alpha_interval__"] = np.array(rng.normal())
        point["a_interval__"] = np.array(rng.normal())
        point["sd_log__"] = np.array(np.log(rng.uniform(0.05, 0.5)))
        density, states = step._runs(point, step._draw_uniforms(2))
        for got, state in zip(density, states, strict=True):
            model.filter_op.set_state(state)
            mean, chol = model.collapse.conditional(point, state[1][1])
            at_mean = dict(point, level=np.array(mean[0]), gain=np.array(mean[1]))
            log_norm = stats.multivariate_normal.logpdf(mean, mean, chol @ chol.T)
            np.testing.assert_allclose(got, float(logp(at_mean)) - log_norm, rtol=1e-10)
