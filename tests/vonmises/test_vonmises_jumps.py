"""Pinwheel-pair jumps: the ratio against the joint, the stationary law, the learnt field.

* The Metropolis ratio the kernel computes from the touched nodes and edges equals the
  difference of the whole map's log joint (brute force), for both signs.
* A chain of augmented sweeps, each followed by jumps of a fixed move, keeps the exact law
  of a 2x2 grid (quadrature bins, as ``test_vonmises_stationary.py``), with jumps accepted
  often; the same jumps with the ratio computed at the wrong ``kappa`` fail the check.
* ``learn_jumps`` recovers the turn between two synthetic layouts, one with a pinwheel pair.
"""

import numpy as np
import pytest

from pmctx.testing import assert_matches_exact, compare_to_exact
from pmctx.vonmises import jumps as jumps_module
from pmctx.vonmises.augmented import augmented_sweep
from pmctx.vonmises.jumps import (
    JumpMove,
    TuningStates,
    jump_log_ratio,
    learn_jumps,
    propose_jumps,
)
from pmctx.vonmises.maps import count_pinwheels, o_to_theta, pinwheel_charges
from pmctx.vonmises.potentials import log_joint, natural_field
from tests.oracles.vonmises_exact import bin_index, binned_joint

KAPPA, RANK, N_BINS = 1.5, 2, 3
FIELD = natural_field(np.array([[0.3, -2.0], [2.5, 0.0]]), np.array([[1, 0], [0, 1]]), 1.2)
SHIFT = np.array([[1.9, 0.0], [-2.4, 0.7]])


def test_move_lists_every_edge_that_touches_a_shifted_node():
    move = JumpMove.from_field(np.pad([[0.0, 0.5], [0.0, 0.0]], 1))  # node (1, 2) of 4 x 4
    assert move.nodes.tolist() == [6]
    np.testing.assert_array_equal(move.shift, [0.5])
    assert sorted(map(tuple, move.edges.tolist())) == [(2, 6), (5, 6), (6, 7), (6, 10)]
    np.testing.assert_array_equal(move.edge_shift[move.edges == 6], 0.5)
    np.testing.assert_array_equal(move.edge_shift[move.edges != 6], 0.0)


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_log_ratio_equals_the_difference_of_the_whole_log_joint(sign):
    rng = np.random.default_rng(3)
    o = rng.uniform(-np.pi, np.pi, (5, 6))
    field = rng.normal(size=(5, 6, 2))
    delta = np.where(rng.random((5, 6)) < 0.4, rng.uniform(-np.pi, np.pi, (5, 6)), 0.0)
    delta[0, 0] = delta[4, 5] = 1.1  # corners: edges leave the map
    move = JumpMove.from_field(delta)
    expected = log_joint(o + sign * delta, field, 2.3, 3) - log_joint(o, field, 2.3, 3)
    assert jump_log_ratio(o, field, 2.3, 3, move, sign) == pytest.approx(expected, rel=1e-10)


@pytest.fixture(scope="module")
def exact_bins():
    probs, _ = binned_joint(FIELD, KAPPA, RANK, n_bins=N_BINS, points_per_bin=12)
    return probs.ravel()


def _chain(kappa_of_ratio, n_draws=12000, seed=5):
    rng = np.random.default_rng(seed)
    moves = [JumpMove.from_field(SHIFT)]
    o = rng.uniform(-np.pi, np.pi, (2, 2))
    draws, accepted = np.empty((n_draws, 2, 2)), 0
    for t in range(n_draws):
        o = augmented_sweep(o, FIELD, KAPPA, RANK, rng)
        o, n = propose_jumps(o, FIELD, kappa_of_ratio, RANK, moves, 3, rng)
        draws[t], accepted = o, accepted + n
    return draws, accepted / (3 * n_draws)


def test_jumps_keep_the_exact_law_of_a_two_by_two_grid(exact_bins):
    draws, rate = _chain(KAPPA)
    assert rate > 0.1  # the jumps move the chain, so a wrong ratio would show
    assert np.all(np.abs(draws) <= np.pi)
    # Each draw ends with jumps after a nearly independent sweep: half the draws as ESS.
    assert_matches_exact(bin_index(draws, N_BINS), exact_bins, tv_tol=0.04, ess=len(draws) / 2)


def test_jumps_with_a_wrong_ratio_fail_the_same_check(exact_bins):
    draws, _ = _chain(0.2 * KAPPA)
    result = compare_to_exact(bin_index(draws, N_BINS), exact_bins, tv_tol=0.04, ess=6000)
    assert not result.passed, str(result)


def _pair_field(shape, plus, minus, radius):
    """A turn field winding +1 and -1 (doubled angle) around two plaquette centres."""
    rows, cols = np.mgrid[0 : shape[0], 0 : shape[1]].astype(float)
    turn = np.arctan2(rows - plus[0], cols - plus[1]) - np.arctan2(rows - minus[0], cols - minus[1])
    near = np.minimum(
        np.hypot(rows - plus[0], cols - plus[1]), np.hypot(rows - minus[0], cols - minus[1])
    )
    return np.angle(np.exp(1j * turn)) * np.clip(radius + 1.0 - near, 0.0, 1.0)


def test_learnt_move_is_the_turn_between_two_layouts():
    rng = np.random.default_rng(0)
    shape = (20, 20)
    base = 0.04 * np.add.outer(np.arange(20), np.arange(20)) - 1.0
    turn = _pair_field(shape, (8.5, 8.5), (8.5, 11.5), radius=3.0)
    assert count_pinwheels(o_to_theta(base + turn)) == (1, 1)
    assert count_pinwheels(o_to_theta(base)) == (0, 0)
    layouts = np.r_[np.zeros(300, int), np.ones(60, int)]
    states = base + layouts[:, None, None] * turn + rng.normal(0.0, 0.15, (360, *shape))
    assert np.all(np.abs(pinwheel_charges(o_to_theta(states))).sum(axis=(1, 2)) == layouts)

    (move,) = learn_jumps(states)
    learnt = np.zeros(shape).ravel()
    learnt[move.nodes] = move.shift
    learnt = learnt.reshape(shape)
    big = np.abs(turn) > np.radians(30)
    error = np.angle(np.exp(1j * (learnt - turn)))
    assert np.degrees(np.abs(error[big])).max() < 6.0
    rows, cols = np.nonzero(learnt)
    assert rows.min() >= 8 - 5 and rows.max() <= 9 + 5 and cols.min() >= 8 - 5
    assert cols.max() <= 12 + 5  # within the margin (4) of the pair's plaquettes
    # The learnt jump, applied to a draw of the common layout, creates the pair.
    jumped = states[0] + learnt
    assert count_pinwheels(o_to_theta(jumped)) == (1, 1)


def test_one_layout_or_too_few_draws_learn_nothing():
    rng = np.random.default_rng(1)
    base = 0.04 * np.add.outer(np.arange(12), np.arange(12))
    states = base + rng.normal(0.0, 0.15, (200, 12, 12))
    assert learn_jumps(states) == []
    assert learn_jumps(states[:3]) == []
    assert learn_jumps(np.zeros((12, 12))) == []
    assert learn_jumps(states[:, :1, :]) == []  # one row: no plaquettes


def test_tuning_states_keep_an_even_subsample_within_the_budget():
    store = TuningStates((3, 4), budget_bytes=4 * 12 * 8)  # room for 8 maps
    for t in range(40):
        store.add(np.full((3, 4), float(t)))
    assert store.stride == 8 and store.draws == [0, 8, 16, 24, 32]
    kept = store.after_burn_in()  # the first eighth (draws 0-4) left out
    assert kept.dtype == np.float64 and kept[:, 0, 0].tolist() == [8, 16, 24, 32]
    store.reset()
    assert store.maps == [] and store.seen == 0 and store.stride == 1


def test_no_moves_or_no_proposals_leave_the_map_unchanged():
    o = np.random.default_rng(2).uniform(-np.pi, np.pi, (3, 3))
    rng = np.random.default_rng(0)
    for moves, n in (([], 10), ([JumpMove.from_field(np.ones((3, 3)))], 0)):
        new, accepted = propose_jumps(o, np.zeros((3, 3, 2)), 1.0, 2, moves, n, rng)
        np.testing.assert_array_equal(new, o)
        assert accepted == 0


def test_default_proposals_per_sweep_is_documented():
    assert jumps_module.DEFAULT_JUMPS_PER_SWEEP == 10
