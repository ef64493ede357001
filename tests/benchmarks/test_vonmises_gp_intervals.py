"""The GP comparison's 90% circular interval covers at the nominal rate on exact posteriors.

Known answer: a von Mises prior on a doubled angle times a von Mises observation is a von
Mises posterior (natural parameters add), so truths drawn from the prior are covered by the
interval built from exact posterior draws 90% of the time, whatever the concentrations
(including nearly flat posteriors, where the interval wraps most of the circle). With 2000
truths per case the binomial sd of the coverage is 0.0067 (plus the quantile error of 200
draws); the tolerance 0.03 is 4.5 sd. Prior means near the wrap point of ``o`` (2.8) and of
``theta`` (0.1) catch wrap-around bugs; doubled-angle draws scored against the
undoubled truth (orientation ``o / 2``) fail the check. (The coverage averaged over a prior is
forgiving: the same interval on undoubled angles with period 2 pi, or without wrapping
differences, still covered 0.88-0.91 here, so this check guards the scale and wrap of the
scoring, not every possible interval bug.)
"""

import numpy as np
import pytest

from benchmarks.bench_vonmises_gp import _interval_stats


def _half_angle_truth_interval_stats(draws, truth):
    """The doubling mixed up: doubled-angle draws scored against the orientation o / 2."""
    return _interval_stats(draws, np.mod(truth, 2 * np.pi) / 2)


def _coverage(interval, prior_kappa, kappa_obs, seed, n=2000, prior_mean=2.8):
    rng = np.random.default_rng(seed)
    truth = rng.vonmises(prior_mean, prior_kappa, size=n)
    z = rng.vonmises(truth, kappa_obs)
    natural = prior_kappa * np.exp(1j * prior_mean) + kappa_obs * np.exp(1j * z)
    draws = rng.vonmises(np.angle(natural), np.abs(natural), size=(200, n))
    return interval(draws, truth)[1].mean()


@pytest.mark.parametrize(
    ("prior_kappa", "kappa_obs", "prior_mean"),
    [(1e-9, 0.3, 2.8), (0.5, 0.5, 0.1), (2.0, 1.0, 2.8), (5.0, 4.0, 0.1)],
)
def test_interval_covers_exact_von_mises_posteriors(prior_kappa, kappa_obs, prior_mean):
    coverage = _coverage(_interval_stats, prior_kappa, kappa_obs, 1, prior_mean=prior_mean)
    assert abs(coverage - 0.9) < 0.03, coverage


def test_half_angle_truth_fails_the_same_check():
    coverage = _coverage(_half_angle_truth_interval_stats, 5.0, 4.0, 1, prior_mean=0.1)
    assert abs(coverage - 0.9) > 0.03, coverage
