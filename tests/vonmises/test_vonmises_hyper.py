"""Learning the observation noise kappa_obs: conditional, stationary law, coverage.

* The slice update's draws match the exact conditional, integrated by quadrature on a fine
  kappa grid (10 equal-probability bins), with per-node signal strengths; a slice sampler on
  log kappa_obs without the Jacobian fails the same check.
* The model's logp (build_model(kappa_obs="prior")) differs from the kernel's conditional by
  a constant and the log-transform Jacobian.
* Geweke: exact prior draws of (kappa_obs, map) on a 2x3 grid against the map sweep plus the
  kappa_obs update; the broken (no-Jacobian) update fails.
* Coverage (slow): 90% intervals of kappa_obs cover the generating value near nominal.
"""

import math

import arviz as az
import numpy as np
import pymc as pm
import pytest
from pmctx.models.vonmises_map import build_model, default_steps, sample_prior

from pmctx.steps.vonmises import KappaObsSlice
from pmctx.testing import assert_geweke, assert_matches_exact, compare_to_exact, geweke_test
from pmctx.vonmises.augmented import augmented_sweep
from pmctx.vonmises.hyper import (
    KAPPA_OBS_PRIOR,
    kappa_obs_log_conditional,
    kappa_obs_statistics,
    sample_kappa_obs,
    slice_sample,
)
from pmctx.vonmises.potentials import natural_field, wrap_angle
from tests.oracles.vonmises_exact import rejection_prior

RNG = np.random.default_rng(5)
O = RNG.uniform(-np.pi, np.pi, size=(3, 3))
SIGNAL = np.array([[1.0, 0.5, 2.0], [1.0, 2.0, 0.5], [2.0, 1.0, 1.0]])
MASK = np.array([[1, 1, 0], [1, 1, 1], [0, 1, 1]])
Z = wrap_angle(RNG.vonmises(O, 3.0 * SIGNAL))


def broken_sample_kappa_obs(stats, kappa_obs, rng):
    """Slice sampling on log kappa_obs that forgets the Jacobian: targets p(kappa) / kappa."""

    def log_density(u):
        return float(kappa_obs_log_conditional(math.exp(u), stats))

    return math.exp(slice_sample(log_density, math.log(kappa_obs), rng))


def exact_bins(stats, n_bins=10):
    grid = np.linspace(1e-6, 80.0, 400_001)
    log_p = kappa_obs_log_conditional(grid, stats)
    cdf = np.cumsum(np.exp(log_p - log_p.max()))
    cdf /= cdf[-1]
    edges = np.interp((np.arange(1, n_bins)) / n_bins, cdf, grid)
    return edges, np.full(n_bins, 1.0 / n_bins)


def run_kernel(sample, stats, n, seed):
    rng = np.random.default_rng(seed)
    draws = np.empty(n)
    k = 5.0
    for t in range(n):
        k = sample(stats, k, rng)
        draws[t] = k
    return draws


@pytest.fixture(scope="module")
def stats():
    return kappa_obs_statistics(O, Z, MASK, SIGNAL)


def test_statistics_ignore_unobserved_nodes_and_group_signals(stats):
    assert stats.counts.sum() == MASK.sum()
    np.testing.assert_allclose(stats.signal_values, [0.5, 1.0, 2.0])
    obs = MASK == 1
    np.testing.assert_allclose(stats.fit, np.sum(SIGNAL[obs] * np.cos(Z[obs] - O[obs])))


def test_slice_update_matches_quadrature(stats):
    edges, probs = exact_bins(stats)
    n = 6000
    draws = run_kernel(sample_kappa_obs, stats, n, seed=1)
    ess = float(az.ess(draws[None]))
    assert_matches_exact(np.searchsorted(edges, draws), probs, tv_tol=0.04, ess=min(ess, n))


def test_slice_without_jacobian_fails_the_same_check(stats):
    edges, probs = exact_bins(stats)
    n = 6000
    draws = run_kernel(broken_sample_kappa_obs, stats, n, seed=1)
    ess = float(az.ess(draws[None]))
    result = compare_to_exact(np.searchsorted(edges, draws), probs, tv_tol=0.04, ess=min(ess, n))
    assert not result.passed, str(result)


def test_model_logp_is_the_kernels_conditional(stats):
    model = build_model(
        np.where(MASK == 1, Z, np.nan), kappa=2.0, kappa_obs="prior", rank=2, signal=SIGNAL
    )
    logp = model.compile_logp()
    gaps = []
    for kappa_obs in (0.3, 2.0, 7.5, 30.0):
        point = {"o_circular__": O, "kappa_obs_log__": np.log(kappa_obs)}
        gaps.append(logp(point) - kappa_obs_log_conditional(kappa_obs, stats) - np.log(kappa_obs))
    np.testing.assert_allclose(gaps, gaps[0], atol=1e-8)


def test_step_in_pm_sample_learns_kappa_obs():
    truth = sample_prior((12, 12), kappa=4.0, rank=4, n_sweeps=20, random_seed=3)
    rng = np.random.default_rng(4)
    z = wrap_angle(rng.vonmises(truth, 6.0))
    z[rng.random(z.shape) < 0.2] = np.nan
    model = build_model(z, kappa=4.0, kappa_obs="prior", rank=4)
    with model:
        idata = pm.sample(
            draws=150,
            tune=50,
            chains=1,
            step=default_steps(model),
            random_seed=2,
            progressbar=False,
            compute_convergence_checks=False,
        )
    kappa_obs = idata.posterior["kappa_obs"].values.ravel()
    assert 3.0 < kappa_obs.mean() < 12.0
    np.testing.assert_allclose(idata.sample_stats["kappa_obs"].values.ravel(), kappa_obs)


def test_step_needs_a_kappa_obs_prior():
    model = build_model(np.zeros((2, 2)), kappa=2.0, kappa_obs=1.0, rank=2)
    with model, pytest.raises(ValueError, match="kappa_obs='prior'"):
        KappaObsSlice()
    with pytest.raises(ValueError, match="'prior'"):
        build_model(np.zeros((2, 2)), kappa_obs="learn")
    with pytest.raises(ValueError, match="signal"):
        build_model(np.zeros((2, 2)), signal=-np.ones((2, 2)))


GEWEKE_SHAPE, GEWEKE_KAPPA, GEWEKE_RANK = (2, 3), 1.0, 2
GEWEKE_SIGNAL = np.array([[1.0, 0.5, 1.5], [1.0, 2.0, 0.7]])


def _geweke(update, n, seed):
    rng = np.random.default_rng(seed)
    maps = iter(rejection_prior(GEWEKE_SHAPE, GEWEKE_KAPPA, GEWEKE_RANK, n + 1, rng))

    def prior(rng):
        return next(maps), rng.gamma(KAPPA_OBS_PRIOR[0], 1.0 / KAPPA_OBS_PRIOR[1])

    def data(params, rng):
        o, kappa_obs = params
        return rng.vonmises(o, kappa_obs * GEWEKE_SIGNAL)

    def transition(params, z, rng):
        o, kappa_obs = params
        field = natural_field(z, np.ones(GEWEKE_SHAPE), kappa_obs, signal=GEWEKE_SIGNAL)
        o = augmented_sweep(o, field, GEWEKE_KAPPA, GEWEKE_RANK, rng)
        stats = kappa_obs_statistics(o, z, signal=GEWEKE_SIGNAL)
        return o, update(stats, kappa_obs, rng)

    tests = {
        "kappa_obs": lambda p, z: p[1],
        "log_kappa_obs": lambda p, z: np.log(p[1]),
        "fit": lambda p, z: np.mean(GEWEKE_SIGNAL * np.cos(z - p[0])),
        "cos_o00": lambda p, z: np.cos(p[0][0, 0]),
        "cos_edge": lambda p, z: np.cos(p[0][0, 1] - p[0][1, 1]),
    }
    return geweke_test(prior, data, transition, tests, n_marginal=n, n_successive=n, rng=seed)


def test_geweke_map_and_kappa_obs():
    assert_geweke(_geweke(sample_kappa_obs, 3000, 21), z_threshold=4.0)


def test_geweke_fails_without_jacobian():
    result = _geweke(broken_sample_kappa_obs, 3000, 21)
    assert not result.passed(4.0), str(result)


@pytest.mark.slow
def test_kappa_obs_interval_coverage():
    """60 maps (12x12, kappa_obs drawn from its prior, 25% missing): 90% central intervals
    must cover the generating kappa_obs in 48..58 of them (binomial(60, 0.9): 54 +- 2.3)."""
    n_reps, covered = 60, 0
    rng = np.random.default_rng(100)
    for rep in range(n_reps):
        kappa_obs = rng.gamma(KAPPA_OBS_PRIOR[0], 1.0 / KAPPA_OBS_PRIOR[1])
        truth = sample_prior((12, 12), kappa=3.0, rank=4, n_sweeps=40, random_seed=rep)
        z = wrap_angle(rng.vonmises(truth, kappa_obs))
        mask = rng.random(z.shape) > 0.25
        o = np.where(mask, z, rng.uniform(-np.pi, np.pi, size=z.shape))
        k, draws = 5.0, []
        for t in range(400):
            field = natural_field(z, mask, k)
            o = augmented_sweep(o, field, 3.0, 4, rng)
            k = sample_kappa_obs(kappa_obs_statistics(o, z, mask), k, rng)
            if t >= 100:
                draws.append(k)
        low, high = np.percentile(draws, [5, 95])
        covered += low <= kappa_obs <= high
    assert 48 <= covered <= 58, covered
