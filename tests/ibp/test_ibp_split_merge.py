"""Split-merge move: exact invariance on a tiny problem, and a broken ratio must fail."""

import numpy as np
import pytest
from scipy import stats

from pmctx.ibp.conditionals import sample_a
from pmctx.ibp.sampler import IBPHyper
from pmctx.ibp.split_merge import force_log_marginal, split_merge_move
from pmctx.testing import assert_matches_exact, compare_to_exact, state_indices
from tests.oracles.ibp_reference import enumerate_posterior

HYPER = IBPHyper(alpha=1.5, sigma_n=0.5, sigma_a=1.0, phi=0.4, lam=0.85, eps=0.1)
F_TINY = np.array([[1.2], [1.0], [-0.1]])
X_TINY = np.array([[1], [1], [0]])
K_MAX = 3


def test_force_marginal_matches_the_dense_gaussian():
    rng = np.random.default_rng(0)
    Z, F = rng.integers(0, 2, size=(5, 3)), rng.normal(size=(5, 2))
    cov = 0.6**2 * np.eye(5) + 1.3**2 * Z @ Z.T
    want = sum(stats.multivariate_normal(np.zeros(5), cov).logpdf(F[:, d]) for d in range(2))
    assert force_log_marginal(Z, F, 0.6, 1.3) == pytest.approx(want, rel=1e-10)


@pytest.fixture(scope="module")
def exact():
    return enumerate_posterior(F_TINY, X_TINY, K_MAX, HYPER)


def moved_draws(exact, n_draws, seed, broken=None):
    """Exact posterior draws of (Z, Y) (A from its conditional), each moved once."""
    states, probs = exact
    rng = np.random.default_rng(seed)
    picks = rng.choice(len(states), size=n_draws, p=probs)
    out = np.empty((n_draws, states.shape[1]), dtype=np.int64)
    accepted = {"split": 0, "merge": 0}
    for j, s in enumerate(picks):
        Z = states[s, : 3 * K_MAX].reshape(3, K_MAX).copy()
        Y = states[s, 3 * K_MAX :].reshape(K_MAX, 1).copy()
        A = sample_a(Z, F_TINY, HYPER.sigma_n, HYPER.sigma_a, rng)
        kind, ok = split_merge_move(Z, A, Y, F_TINY, X_TINY, HYPER, rng, broken=broken)
        accepted[kind] = accepted.get(kind, 0) + ok
        out[j] = np.concatenate([Z.ravel(), Y.ravel()])
    return out, accepted


def z_marginal(exact):
    """Exact law of Z (512 states): sharper than the 4096 (Z, Y) states at this many draws."""
    states, probs = exact
    z_states, inverse = np.unique(states[:, : 3 * K_MAX], axis=0, return_inverse=True)
    return z_states, np.bincount(inverse.ravel(), weights=probs)


@pytest.mark.slow
def test_split_merge_leaves_the_exact_posterior_invariant(exact):
    """Exact draws stay exact after one move (Z marginal; the full joint by chi-square)."""
    states, probs = exact
    draws, accepted = moved_draws(exact, 6000, seed=1)
    assert accepted["split"] > 800 and accepted["merge"] > 800, accepted  # the test bites
    z_states, z_probs = z_marginal(exact)
    assert_matches_exact(state_indices(draws[:, : 3 * K_MAX], z_states), z_probs, tv_tol=0.1)
    full = compare_to_exact(state_indices(draws, states), probs, tv_tol=1.0)
    assert full.p_value > 1e-3, full


@pytest.mark.slow
def test_invariance_test_rejects_a_broken_acceptance_ratio(exact):
    draws, _ = moved_draws(exact, 6000, seed=1, broken="no_allocation")
    z_states, z_probs = z_marginal(exact)
    result = compare_to_exact(state_indices(draws[:, : 3 * K_MAX], z_states), z_probs, tv_tol=0.1)
    assert not result.passed, result
