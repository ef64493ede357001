"""ParticleMarginalMH: its stationary distribution against the exact posterior.

A 6-trial renewal design and a one-particle filter, whose every run (path of causes) can be
enumerated with its probability (``exact.single_particle_paths``): the exact likelihood
``E_u p(y | V(alpha, u))`` is a finite sum, and the posterior of alpha on a fine grid is
exact up to quadrature. The step must reproduce it (fixed seeds; total-variation tolerance
0.07 over 5 equal-probability bins, about twice the expected Monte Carlo TV at the chains'
ESS of ~500, plus a chi-square test at that ESS), and a sampler with a broken acceptance
ratio (Jacobian of the interval transform left out) or with frozen random numbers (common
random numbers, the old per-chain scheme: TV 0.24 with 10 bins) must fail the same check.
With ``R = 4`` averaged filter runs (response sd 0.1, where one run's log-likelihood sd is
2.3-3.3) the same check passes (TV 0.030 and 0.038 at seeds 1, 2), and averaging the runs'
*log* likelihoods instead of their likelihoods fails it (TV 0.31; taking the best run: 0.09).
The default step (random walk during tuning, then the grid-fitted t independence proposal)
is checked with 16,000 draws per seed; the broken samplers at 4,000. The
stationary-distribution runs take ~3 min on a loaded 2-core machine (slow).
"""

import dataclasses

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
from pmctx.conditioning.posterior import FilterV
from pmctx.testing import compare_to_exact

DESIGN = Design(
    [
        Phase("acquisition", n=3, cs=["tone"], us=True, context="A"),
        Phase("extinction", n=2, cs=["tone"], us=False, context="B"),
        Phase("test", n=1, cs=["tone"], us=False, context="A"),
    ]
)
Y = np.array([0.5, 0.8, 0.95, 0.9, 0.35, 0.85])
SD, ALPHA_MAX = 0.2, 5.0
NOISY_SD = 0.1  # one run's log-likelihood sd 2.3-3.3: averaging runs matters
N_BINS = 5


def exact_posterior_bins(n_bins=N_BINS, n_grid=100, sd=SD):
    """Bin edges with equal exact posterior mass, from a grid (midpoint rule)."""
    grid = (np.arange(n_grid) + 0.5) * ALPHA_MAX / n_grid
    log_post = []
    for alpha in grid:
        log_p, V = single_particle_paths(DESIGN, alpha=alpha, a=1.0)
        log_post.append(logsumexp(log_p + stats.norm.logpdf(Y, V, sd).sum(axis=1)))
    w = np.exp(np.array(log_post) - max(log_post))
    cdf = np.cumsum(w) / w.sum()
    return np.interp(np.arange(1, n_bins) / n_bins, cdf, grid + 0.5 * ALPHA_MAX / n_grid)


def run_step(step_class, seed, draws=4000, sd=SD, **options):
    lik = SubjectLikelihood(Y, DESIGN, n_particles=1, rng=seed)
    op = FilterV(lik)
    with pm.Model():
        alpha = pm.Uniform("alpha", 0.0, ALPHA_MAX)
        V = op(alpha, 1.0, 1.0, 0.0, 1.0)
        pm.Normal("cr", V, sd, observed=Y)
        step = step_class([alpha], op, **options)
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


class NoJacobian(ParticleMarginalMH):
    """Broken: the acceptance ratio leaves out the interval transform's Jacobian."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.logp = self.compile_fn(self.model.logp(jacobian=False))


class FrozenNoise(ParticleMarginalMH):
    """Broken: one set of random numbers for the whole chain (common random numbers)."""

    def _fresh_uniforms(self):
        return self._uniforms if self._uniforms is not None else super()._fresh_uniforms()


class MeanOfLogs(ParticleMarginalMH):
    """Broken: averages the runs' log likelihoods (a geometric mean, biased) not the likelihoods."""

    def _runs(self, point, uniforms_list):
        log_densities, states = super()._runs(point, uniforms_list)
        return np.full(len(log_densities), log_densities.mean()), states

    def _rerun_current(self, point):
        log_densities = super()._rerun_current(point)
        return np.full(len(log_densities), log_densities.mean())


@pytest.fixture(scope="module")
def edges():
    return exact_posterior_bins()


def _compare(idata, edges):
    x = idata.posterior["alpha"].values.ravel()
    ess = float(az.ess(idata, var_names=["alpha"])["alpha"])
    probs = np.full(N_BINS, 1.0 / N_BINS)
    return compare_to_exact(np.digitize(x, edges), probs, tv_tol=0.07, ess=ess)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2])
def test_pmmh_matches_exact_posterior(edges, seed):
    # 16,000 draws (ESS ~6,400): the default step's independence proposal mixes well, so
    # its ESS at 4,000 draws (~1,700) made the chi-square test sharp enough that seed 2 fell
    # just under alpha 0.001 by chance (TV 0.047); at 16,000 draws TV 0.011, p 0.43.
    result = _compare(run_step(ParticleMarginalMH, seed, draws=16000), edges)
    assert result.passed, result


@pytest.mark.slow
@pytest.mark.parametrize("broken", [NoJacobian, FrozenNoise])
def test_broken_samplers_fail_the_same_check(edges, broken):
    result = _compare(run_step(broken, 1), edges)
    assert not result.passed, result


def test_enumerated_paths_match_the_one_particle_filter():
    """E_u V_t and E_u V_t^2 of the filter equal the enumeration's (4 standard errors)."""
    log_p, V = single_particle_paths(DESIGN, alpha=2.0, a=1.0, stickiness=1.5)
    assert np.exp(log_p).sum() == pytest.approx(1.0, abs=1e-12)
    lik = SubjectLikelihood(Y, DESIGN, n_particles=1, rng=0)
    rng = np.random.default_rng(3)
    runs = []
    for _ in range(4000):
        lik.uniforms = (rng.random((6, 1)), rng.random((6, 1)))
        runs.append(lik.V({"alpha": 2.0, "stickiness": 1.5}))
    runs = np.array(runs)
    for power in (1, 2):
        exact = np.exp(log_p) @ V**power
        se = runs.std(axis=0) / np.sqrt(len(runs)) + 1e-12
        assert np.all(np.abs((runs**power).mean(axis=0) - exact) <= 4 * se + 1e-12)


def test_step_reuses_the_current_estimate_and_restores_it_on_rejection():
    """One filter run per step (the proposal's); a rejection restores the stored state."""
    lik = SubjectLikelihood(Y, DESIGN, n_particles=3, rng=0)
    op = FilterV(lik)
    with pm.Model():
        alpha = pm.Uniform("alpha", 0.0, ALPHA_MAX)
        pm.Normal("cr", op(alpha, 1.0, 1.0, 0.0, 1.0), 0.01, observed=Y)
        step = ParticleMarginalMH([alpha], op, rng=4, scaling=3.0)
    point = {"alpha_interval__": np.array(0.0)}
    point, _ = step.step(point)
    rejected = 0
    for _ in range(30):
        state = op.get_state()
        before = lik.n_evals
        new, stats = step.step(point)
        assert lik.n_evals - before == 1
        if not stats[0]["accepted"]:
            rejected += 1
            assert op.get_state()[0] is state[0]
            assert new["alpha_interval__"] == point["alpha_interval__"]
        point = new
        assert stats[0]["tune"] and np.isfinite(stats[0]["loglik"])
    assert rejected > 0


def test_step_validates_target_accept():
    lik = SubjectLikelihood(Y, DESIGN, n_particles=2, rng=0)
    op = FilterV(lik)
    with pm.Model():
        alpha = pm.Uniform("alpha", 0.0, ALPHA_MAX)
        pm.Normal("cr", op(alpha, 1.0, 1.0, 0.0, 1.0), SD, observed=Y)
        with pytest.raises(ValueError, match="target_accept"):
            ParticleMarginalMH([alpha], op, target_accept=1.5)


@pytest.fixture(scope="module")
def noisy_edges():
    return exact_posterior_bins(sd=NOISY_SD)


@pytest.mark.slow
def test_pmmh_with_averaged_runs_matches_exact_posterior(noisy_edges):
    """R = 4 runs per estimate where one run's log-likelihood sd is 2.3-3.3 (response sd 0.1)."""
    idata = run_step(ParticleMarginalMH, 1, sd=NOISY_SD, n_filter_runs=4)
    assert np.all(idata.sample_stats["n_filter_runs"].values == 4)
    result = _compare(idata, noisy_edges)
    assert result.passed, result


@pytest.mark.slow
def test_averaging_log_likelihoods_fails_the_same_check(noisy_edges):
    result = _compare(run_step(MeanOfLogs, 1, sd=NOISY_SD, n_filter_runs=4), noisy_edges)
    assert not result.passed, result


def _noisy_step(**options):
    lik = SubjectLikelihood(Y, DESIGN, n_particles=1, rng=0)
    op = FilterV(lik)
    with pm.Model():
        alpha = pm.Uniform("alpha", 0.0, ALPHA_MAX)
        pm.Normal("cr", op(alpha, 1.0, 1.0, 0.0, 1.0), 0.05, observed=Y)
        step = ParticleMarginalMH([alpha], op, rng=5, **options)
    return step, op, lik


def test_automatic_runs_follow_the_measured_noise():
    """A very noisy one-particle estimate gets R > 1 at the choice; R stays fixed after it."""
    step, op, lik = _noisy_step(choose_runs_at=3, max_filter_runs=8)
    point = {"alpha_interval__": np.array(0.0)}
    for _ in range(3):
        point, stats = step.step(point)
    assert stats[0]["n_filter_runs"] == step.n_runs > 1
    R = step.n_runs
    before = lik.n_evals
    point, stats = step.step(point)  # R proposal runs per step, the current ones cached
    assert lik.n_evals - before == R
    # The recorded V is one of the current runs (the selected one).
    assert any(op.get_state()[0] is state[0] for state in step._states)
    step.tune = False  # tuning ends: R chosen again and its sd measured
    point, stats = step.step(point)
    assert np.isfinite(stats[0]["loglik_sd"])
    assert stats[0]["loglik_sd"] <= 1.2 or stats[0]["n_filter_runs"] == 8


def test_fixed_runs_and_bad_values():
    step, _, lik = _noisy_step(n_filter_runs=3)
    point = {"alpha_interval__": np.array(0.0)}
    point, _ = step.step(point)
    before = lik.n_evals
    _, stats = step.step(point)
    assert lik.n_evals - before == 3 and stats[0]["n_filter_runs"] == 3
    with pytest.raises(ValueError, match="n_filter_runs"):
        _noisy_step(n_filter_runs="many")
    with pytest.raises(ValueError, match="n_filter_runs"):
        _noisy_step(n_filter_runs=0)
    with pytest.raises(ValueError, match="target_loglik_sd"):
        _noisy_step(target_loglik_sd=-1.0)


def test_each_chain_in_one_process_starts_from_a_fresh_step():
    # pm.sample sets a step's sampling_state back before each chain it runs in one process;
    # the state holds everything a chain changes, so a reused step (compiled once) starts
    # the next chain as a newly built one would.
    lik = SubjectLikelihood(Y, DESIGN, n_particles=1, rng=0)
    op = FilterV(lik)
    with pm.Model():
        alpha = pm.Uniform("alpha", 0.0, ALPHA_MAX)
        pm.Normal("cr", op(alpha, 1.0, 1.0, 0.0, 1.0), SD, observed=Y)
        step = ParticleMarginalMH([alpha], op, n_filter_runs="auto", choose_runs_at=5, rng=1)
        fresh = ParticleMarginalMH([alpha], op, n_filter_runs="auto", choose_runs_at=5, rng=1)
    initial = step.sampling_state
    point = {"alpha_interval__": np.array(0.0)}
    for _ in range(30):
        point, _ = step.step(point)
    step.stop_tuning()
    point, _ = step.step(point)
    assert step._n_tuned == 30 and step._states is not None and np.isfinite(step._loglik_sd)
    step.sampling_state = initial
    names = [f.name for f in dataclasses.fields(type(initial))]
    assert {"_states", "_n_tuned", "n_runs", "_loglik_sd"} <= set(names)
    for name in set(names) - {"rng", "var_names"}:
        np.testing.assert_equal(getattr(step, name), getattr(fresh, name), err_msg=name)
