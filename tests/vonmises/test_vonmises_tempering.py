"""Replica exchange across a kappa ladder: swap ratios and stationary laws against exact answers.

* The swap's log Metropolis ratio equals the brute-force ratio of the product target
  ``p_i(O_j) p_j(O_i) / (p_i(O_i) p_j(O_j))``, with each rung's full unnormalised log density
  (data term included) from the pure-Python :func:`pmctx.vonmises.potentials.log_joint`.
* Every rung's binned draws on a 2x2 grid (observed and missing nodes) match the exact bin
  probabilities at that rung's ``kappa`` (quadrature of the joint), by a chi-square test at the
  measured effective sample size and a total-variation tolerance derived from it
  (:func:`pmctx.testing.assert_chains_match_exact`); a sampler that accepts every swap
  fails the same test, so it has the power to see a wrong acceptance.
* Repeated swap passes over fixed states (energies cached between passes) leave the law of
  the states' order over the rungs exact: on three fixed maps the frequency of each of the 6
  orders matches ``prod_r p_r(O_sigma(r))`` normalised over the orders, by the same test.
"""

import numpy as np
import pytest

import pmctx.vonmises.tempering as tempering
from pmctx.testing import assert_chains_match_exact, categorical_ess, compare_to_exact, tv_tolerance
from pmctx.vonmises.potentials import log_edge_potential, log_joint, natural_field
from pmctx.vonmises.tempering import (
    edge_energy,
    kappa_ladder,
    swap_pass,
    swap_passes,
    tempered_sweep,
)
from tests.oracles.vonmises_exact import bin_index, binned_joint

RANK, N_BINS = 2, 3
LADDER = np.array([0.4, 1.0, 2.2])
Z = np.array([[0.3, -2.0], [2.5, 0.0]])
MASK = np.array([[1, 0], [0, 1]])
FIELD = natural_field(Z, MASK, 1.2)


def test_edge_energy_is_the_sum_of_log_edge_potentials():
    rng = np.random.default_rng(0)
    o = rng.uniform(-np.pi, np.pi, (3, 4))
    expected = log_edge_potential(o[:, :-1], o[:, 1:], 1.7, 3).sum()
    expected += log_edge_potential(o[:-1, :], o[1:, :], 1.7, 3).sum()
    assert abs(edge_energy(o, 1.7, 3) - expected) < 1e-10


def test_energies_at_several_kappas_in_one_pass_equal_one_at_a_time():
    from pmctx.vonmises._numba_vector import edge_energies

    rng = np.random.default_rng(1)
    o = rng.uniform(-np.pi, np.pi, (5, 7))
    kappas = np.array([0.0, 0.4, 1.7, 5.0, 12.0])
    for rank in (1, 3, 6):
        one_at_a_time = [
            log_edge_potential(o[:, :-1], o[:, 1:], k, rank).sum()
            + log_edge_potential(o[:-1, :], o[1:, :], k, rank).sum()
            for k in kappas
        ]
        np.testing.assert_allclose(edge_energies(o, kappas, rank), one_at_a_time, rtol=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_swap_ratio_is_the_brute_force_ratio_of_the_product_target(seed):
    rng = np.random.default_rng(seed)
    field = natural_field(rng.uniform(-np.pi, np.pi, (2, 3)), rng.random((2, 3)) < 0.6, 1.3)
    o_i, o_j = rng.uniform(-np.pi, np.pi, (2, 2, 3))
    k_i, k_j = 0.7, 2.9
    brute = (
        log_joint(o_j, field, k_i, RANK)
        + log_joint(o_i, field, k_j, RANK)
        - log_joint(o_i, field, k_i, RANK)
        - log_joint(o_j, field, k_j, RANK)
    )
    kernel = tempering.swap_log_acceptance(
        (edge_energy(o_i, k_i, RANK), edge_energy(o_j, k_i, RANK)),
        (edge_energy(o_j, k_j, RANK), edge_energy(o_i, k_j, RANK)),
    )
    assert abs(kernel - brute) < 1e-9


def test_swap_pass_accepts_with_the_metropolis_probability():
    # Two rungs, two fixed states: over many offers the swap frequency is min(1, exp(ratio)).
    rng = np.random.default_rng(3)
    states = rng.uniform(-np.pi, np.pi, (2, 2, 3))
    kappas = np.array([0.5, 1.1])
    ratio = tempering.swap_log_acceptance(
        (edge_energy(states[0], 0.5, RANK), edge_energy(states[1], 0.5, RANK)),
        (edge_energy(states[1], 1.1, RANK), edge_energy(states[0], 1.1, RANK)),
    )
    if ratio > 0:  # offer the pair in the direction whose ratio is below 1
        states = states[::-1].copy()
        ratio = -ratio
    p = np.exp(ratio)
    n = 4000
    accepted = [swap_pass(states.copy(), kappas, RANK, rng, parity=0)[0] for _ in range(n)]
    se = np.sqrt(p * (1 - p) / n)
    assert 0.05 < p < 0.95
    assert abs(np.mean(accepted) - p) < 4 * se


def test_two_cached_passes_are_an_even_then_an_odd_swap_pass():
    rng = np.random.default_rng(4)
    kappas = np.array([0.5, 0.9, 1.4, 2.0, 2.9])
    for seed in range(20):
        states = rng.uniform(-np.pi, np.pi, (5, 2, 3))
        expected = states.copy()
        rng_a, rng_b = np.random.default_rng(seed), np.random.default_rng(seed)
        even = swap_pass(expected, kappas, RANK, rng_a, parity=0)
        odd = swap_pass(expected, kappas, RANK, rng_a, parity=1)
        rates = swap_passes(states, kappas, RANK, rng_b, n_passes=2)
        np.testing.assert_array_equal(states, expected)
        np.testing.assert_array_equal(rates, np.where(np.isnan(even), odd, even))


def test_repeated_swap_passes_keep_the_exact_law_of_the_order(monkeypatch):
    import itertools

    rng = np.random.default_rng(8)
    kappas = np.array([0.3, 0.5, 0.8])
    maps = rng.uniform(-np.pi, np.pi, (3, 2, 3)) * np.array([1.0, 0.6, 0.3])[:, None, None]
    orders = list(itertools.permutations(range(3)))
    log_p = np.array([sum(edge_energy(maps[s], k, RANK) for s, k in zip(order, kappas))
                      for order in orders])  # fmt: skip
    probs = np.exp(log_p - log_p.max())
    probs /= probs.sum()
    assert probs.min() > 0.05  # every order likely: a sharp test of each
    table = {(o.tobytes(), k): edge_energy(o, k, RANK) for o in maps for k in kappas}
    monkeypatch.setattr(tempering, "edge_energy", lambda o, k, rank: table[o.tobytes(), k])
    codes = np.empty((2, 3000), dtype=np.int64)
    for chain in range(2):
        states, walk = maps.copy(), np.random.default_rng([8, chain])
        for t in range(codes.shape[1]):
            swap_passes(states, kappas, RANK, walk, n_passes=3, parity=t % 2)
            order = tuple(int(np.flatnonzero((maps == s).all(axis=(1, 2)))[0]) for s in states)
            codes[chain, t] = orders.index(order)
    assert_chains_match_exact(codes, probs, max_tv_tol=0.06)


def run_tempered(n_steps, seed, n_chains=2):
    """Binned draws ``(rung, chain, draw)`` and the swap rate of each pair of rungs."""
    codes = np.empty((LADDER.size, n_chains, n_steps), dtype=np.int64)
    swaps = []
    for chain in range(n_chains):
        rng = np.random.default_rng([seed, chain])
        states = rng.uniform(-np.pi, np.pi, (LADDER.size, 2, 2))
        draws = np.empty((n_steps, LADDER.size, 2, 2))
        for t in range(n_steps):
            states, accepted = tempered_sweep(states, FIELD, LADDER, RANK, rng)
            draws[t] = states
            swaps.append(accepted)
        for j in range(LADDER.size):
            codes[j, chain] = bin_index(draws[:, j], N_BINS)
    return codes, np.nanmean(swaps, axis=0)


@pytest.fixture(scope="module")
def exact_bins():
    return [binned_joint(FIELD, k, RANK, n_bins=N_BINS)[0].ravel() for k in LADDER]


def test_every_rung_matches_its_exact_posterior(exact_bins):
    # 2 chains x 2000 steps: about 1,000-3,700 effective draws per rung, a derived
    # total-variation tolerance of 0.07-0.085 (chi-square at alpha 1e-3 besides).
    codes, swap_rate = run_tempered(2000, seed=21)
    assert np.all((swap_rate > 0.15) & (swap_rate < 0.95)), swap_rate  # swaps do happen
    for j, probs in enumerate(exact_bins):
        assert_chains_match_exact(codes[j], probs, max_tv_tol=0.09)


def test_accepting_every_swap_fails_the_same_check(exact_bins, monkeypatch):
    monkeypatch.setattr(tempering, "swap_log_acceptance", lambda e_i, e_j: 0.0)
    codes, _ = run_tempered(300, seed=21)  # off by a total variation of about 0.66
    probs = exact_bins[-1]
    n_eff = categorical_ess(codes[-1], probs)
    result = compare_to_exact(
        codes[-1].ravel(), probs, tv_tol=tv_tolerance(probs, n_eff), ess=n_eff
    )
    assert not result.passed, str(result)


def test_ladder_and_shape_errors():
    assert kappa_ladder(3.0, 1, kappa_min=1.0).tolist() == [3.0]
    ladder = kappa_ladder(5.0, 6, kappa_min=2.0)
    assert ladder[-1] == 5.0 and np.all(np.diff(ladder) > 0)
    for bad in (0, 2.5, True):
        with pytest.raises(ValueError, match="n_replicas must be an integer"):
            kappa_ladder(5.0, bad, kappa_min=2.0)
    for bad in (0.0, 6.0):
        with pytest.raises(ValueError, match="kappa_min must lie in"):
            kappa_ladder(5.0, 3, kappa_min=bad)
    with pytest.raises(ValueError, match="one map per rung"):
        tempered_sweep(np.zeros((2, 2, 2)), FIELD, LADDER, RANK, np.random.default_rng(0))
