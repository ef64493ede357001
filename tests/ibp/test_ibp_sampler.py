"""Stationary distribution of the full specialised sweep: exact enumeration and Geweke."""

import numpy as np
import pytest

from pmctx.ibp.conditionals import noisy_or_loglik
from pmctx.ibp.sampler import IBPHyper, IBPState, gibbs_sweep
from pmctx.testing import assert_geweke, assert_matches_exact, geweke_test, state_indices
from tests.oracles.ibp_reference import enumerate_posterior

HYPER = IBPHyper(alpha=1.5, sigma_n=0.5, sigma_a=1.0, phi=0.4, lam=0.85, eps=0.1)


@pytest.fixture(scope="module")
def tiny_data():
    F = np.array([[1.2], [1.0], [-0.1]])
    X = np.array([[1, 0], [1, 1], [0, 0]])
    return F, X


def run_sweeps(F, X, k_max, hyper, n_sweeps, seed, *, new_features=True):
    rng = np.random.default_rng(seed)
    n, t = X.shape
    state = IBPState.from_arrays(
        np.zeros((n, k_max)), np.zeros((k_max, F.shape[1])), np.zeros((k_max, t))
    )
    out = np.empty((n_sweeps, n * k_max + k_max * t), dtype=np.int64)
    for s in range(n_sweeps):
        moves = "joint" if new_features else "legacy"
        gibbs_sweep(state, F, X, hyper, rng, new_features=new_features, moves=moves)
        out[s] = np.concatenate([state.Z.ravel(), state.Y.ravel()])
    return out


def test_sweep_matches_exact_joint_over_z_and_y(tiny_data):
    F, X = tiny_data
    states, probs = enumerate_posterior(F, X, 2, HYPER)
    draws = run_sweeps(F, X, 2, HYPER, 30000, seed=0)[1000:]
    # Label switching is part of the target: compare the full (Z, Y) joint, 1024 states.
    assert_matches_exact(state_indices(draws, states), probs, tv_tol=0.06, ess=len(draws) / 4)


def test_sweep_without_new_features_is_not_the_target(tiny_data):
    """The enumeration test above is discriminating: freezing the free columns fails it."""
    F, X = tiny_data
    states, probs = enumerate_posterior(F, X, 2, HYPER)
    draws = run_sweeps(F, X, 2, HYPER, 6000, seed=1, new_features=False)
    with pytest.raises(AssertionError):
        assert_matches_exact(state_indices(draws, states), probs, tv_tol=0.06)


def geweke_pieces(n, k_max, d, t, hyper):
    def sample_prior(rng):
        pi = rng.beta(hyper.alpha / k_max, 1.0, size=k_max)
        Z = (rng.random((n, k_max)) < pi).astype(np.int64)
        A = hyper.sigma_a * rng.normal(size=(k_max, d))
        Y = (rng.random((k_max, t)) < hyper.phi).astype(np.int64)
        return IBPState.from_arrays(Z, A, Y, np.log(pi) - np.log1p(-pi))

    def sample_data(state, rng):
        F = state.Z @ state.A + hyper.sigma_n * rng.normal(size=(n, d))
        p1 = -np.expm1(noisy_or_loglik(np.zeros((n, t)), state.Z, state.Y, hyper.lam, hyper.eps))
        return F, (rng.random((n, t)) < p1).astype(np.int64)

    def transition(state, data, rng):
        gibbs_sweep(state, data[0], data[1], hyper, rng)
        return state

    def pi_mean(s, data):
        return float(np.mean(1 / (1 + np.exp(-s.pi_logit))))

    tests = {
        "n_active": lambda s, data: s.n_active,
        "z_sum": lambda s, data: s.Z.sum(),
        "a_sq": lambda s, data: float((s.A**2).sum()),
        "za_first": lambda s, data: float((s.Z @ s.A)[0, 0]),
        "y_sum": lambda s, data: s.Y.sum(),
        "zy_sum": lambda s, data: float((s.Z @ s.Y).sum()),
        "pi_mean": pi_mean,
        "fit": lambda s, data: float(((data[0] - s.Z @ s.A) ** 2).sum()),
    }
    return sample_prior, sample_data, transition, tests


def test_geweke_joint_distribution_with_new_features():
    pieces = geweke_pieces(n=4, k_max=3, d=1, t=2, hyper=HYPER)
    result = geweke_test(*pieces, n_marginal=6000, n_successive=6000, rng=2)
    assert_geweke(result, z_threshold=4.0)


@pytest.mark.slow
def test_geweke_long_run():
    pieces = geweke_pieces(n=6, k_max=4, d=2, t=3, hyper=HYPER)
    result = geweke_test(*pieces, n_marginal=40000, n_successive=40000, rng=5)
    assert_geweke(result, z_threshold=4.0)
