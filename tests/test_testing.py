"""The enumeration and Geweke tools must pass a correct sampler and fail a wrong one."""

import numpy as np
import pytest

from pmctx.testing import (
    assert_chains_match_exact,
    assert_geweke,
    assert_matches_exact,
    categorical_ess,
    compare_to_exact,
    enumerate_binary_states,
    exact_probabilities,
    geweke_test,
    state_indices,
    tv_tolerance,
)

# A 3-spin Ising chain: a small discrete joint with strong dependence.
COUPLING, FIELD = 0.8, np.array([0.3, -0.2, 0.5])


def ising_log_joint(s):
    spins = 2 * np.asarray(s) - 1
    return COUPLING * (spins[:-1] * spins[1:]).sum() + FIELD @ spins


def gibbs_chain(n_sweeps, rng, wrong=False):
    s = np.zeros(3, dtype=int)
    out = np.empty((n_sweeps, 3), dtype=int)
    for t in range(n_sweeps):
        for i in range(3):
            logp = []
            for value in (0, 1):
                s[i] = value
                logp.append(ising_log_joint(s))
            # The wrong sampler forgets the coupling to the left neighbour of spin 2.
            if wrong and i == 2:
                logp = [FIELD[2] * -1, FIELD[2]]
            p1 = 1 / (1 + np.exp(logp[0] - logp[1]))
            s[i] = rng.random() < p1
        out[t] = s
    return out


def test_enumeration_and_indices():
    states = enumerate_binary_states((3,))
    assert states.shape == (8, 3)
    probs = exact_probabilities(ising_log_joint, states)
    assert probs.sum() == pytest.approx(1.0)
    assert state_indices(states[[3, 0]], states).tolist() == [3, 0]
    with pytest.raises(ValueError, match="not among the enumerated states"):
        state_indices(np.array([[2, 0, 0]]), states)
    with pytest.raises(ValueError, match="Refusing to enumerate"):
        enumerate_binary_states((5, 5))


def test_exact_comparison_passes_correct_and_fails_wrong_gibbs():
    states = enumerate_binary_states((3,))
    probs = exact_probabilities(ising_log_joint, states)
    rng = np.random.default_rng(1)
    good = state_indices(gibbs_chain(6000, rng), states)
    result = assert_matches_exact(good, probs, tv_tol=0.03, ess=3000)
    assert result.passed
    bad = state_indices(gibbs_chain(6000, rng, wrong=True), states)
    comparison = compare_to_exact(bad, probs, tv_tol=0.03, ess=3000)
    assert not comparison.passed
    with pytest.raises(AssertionError, match="does not match the exact distribution"):
        assert_matches_exact(bad, probs, tv_tol=0.03, ess=3000)


def test_visits_to_impossible_states_fail():
    probs = np.array([0.5, 0.5, 0.0])
    result = compare_to_exact(np.array([0, 1] * 500 + [2]), probs, tv_tol=0.1)
    assert result.impossible_visits == 1 and not result.passed


# Conjugate normal model: theta ~ N(0, 1), y | theta ~ N(theta, 1) => theta | y ~ N(y/2, 1/2).
def prior(rng):
    return rng.normal()


def data(theta, rng):
    return theta + rng.normal()


def exact_transition(theta, y, rng):
    return rng.normal(y / 2, np.sqrt(0.5))


def metropolis_transition(theta, y, rng):
    proposal = theta + rng.normal(0, 1.0)
    log_ratio = -0.5 * (proposal**2 + (y - proposal) ** 2) + 0.5 * (theta**2 + (y - theta) ** 2)
    return proposal if np.log(rng.random()) < log_ratio else theta


def wrong_variance_transition(theta, y, rng):
    return rng.normal(y / 2, 1.0)


FUNCTIONS = {"theta": lambda t, y: t, "theta^2": lambda t, y: t**2, "theta*y": lambda t, y: t * y}


@pytest.mark.parametrize("transition", [exact_transition, metropolis_transition])
def test_geweke_passes_correct_transitions(transition):
    result = geweke_test(
        prior, data, transition, FUNCTIONS, n_marginal=4000, n_successive=4000, thin=2, rng=3
    )
    assert_geweke(result, z_threshold=4.0)


def test_geweke_fails_wrong_transition():
    result = geweke_test(
        prior,
        data,
        wrong_variance_transition,
        FUNCTIONS,
        n_marginal=4000,
        n_successive=4000,
        rng=3,
    )
    assert not result.passed(4.0)
    with pytest.raises(AssertionError, match="Geweke test failed"):
        assert_geweke(result, z_threshold=4.0)
    assert "theta^2" in str(result)


def test_tv_tolerance_follows_the_monte_carlo_error():
    p = np.full(8, 1 / 8)
    rng = np.random.default_rng(11)
    tvs = [0.5 * np.abs(np.bincount(rng.choice(8, 500, p=p), minlength=8) / 500 - p).sum()]
    tvs += [0.5 * np.abs(rng.multinomial(500, p) / 500 - p).sum() for _ in range(999)]
    tol = tv_tolerance(p, 500)
    assert np.mean(np.array(tvs) > tol) < 0.01
    assert tv_tolerance(p, 2000) == pytest.approx(tol / 2, rel=0.15)  # 1 / sqrt(n)


def test_chains_are_judged_at_their_measured_ess():
    rng = np.random.default_rng(3)
    p = np.array([0.2, 0.3, 0.5])
    # a sticky chain: each state repeated 20 times, so ~1/20 of the draws are effective
    sticky = np.repeat(rng.choice(3, size=(2, 300), p=p), 20, axis=1)
    assert categorical_ess(sticky, p) < 0.1 * sticky.size
    assert assert_chains_match_exact(sticky, p).n_eff < 0.1 * sticky.size
    with pytest.raises(AssertionError, match="effective draws.*Draw more"):
        assert_chains_match_exact(sticky, p, max_tv_tol=0.02)
    wrong = np.repeat(rng.choice(3, size=(2, 300), p=[0.5, 0.3, 0.2]), 20, axis=1)
    with pytest.raises(AssertionError, match="does not match"):
        assert_chains_match_exact(wrong, p)
    with pytest.raises(ValueError, match=r"shape \(chain, draw\)"):
        categorical_ess(sticky.ravel(), p)
