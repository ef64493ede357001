"""Tempered transitions on a window: energies, heated kernels and the whole move, exactly.

* :func:`window_energy` equals the brute-force sum of ``log psi`` over the edges that touch
  the window, for windows in the corners, on the borders and inside a 4x5 map.
* The heated kernel ``T_j`` (:func:`window_pass`) leaves invariant the window's exact
  conditional law (one coupling inside the window, another on the edges that leave it) with
  the rest of the map fixed: binned draws of the four
  free nodes of a 2x2 window inside a 3x3 map against the bins' probabilities by quadrature
  (24 points per angle), by a chi-square test at the measured effective sample size and a
  total-variation tolerance derived from it (:func:`pmctx.testing.assert_chains_match_exact`).
* The whole tempered transition (random 2x2 window on a 2x3 map, ladder 1.2 -> 0.2 in 4
  rungs, Neal's acceptance; heating every edge that touches the window or only those that
  leave it) leaves the posterior at ``kappa = 1.2`` invariant (exact bins by
  :func:`tests.oracles.vonmises_exact.binned_joint`); the same move accepting every proposal
  fails the same comparison, so the test can see a wrong acceptance.
"""

import itertools

import numpy as np
import pytest
from scipy.special import logsumexp

import pmctx.vonmises.transitions as transitions
from pmctx.testing import assert_chains_match_exact, categorical_ess, compare_to_exact, tv_tolerance
from pmctx.vonmises.potentials import log_edge_potential, natural_field
from pmctx.vonmises.transitions import (
    transition_ladder,
    window_energy,
    window_pass,
    window_transition,
)
from tests.oracles.vonmises_exact import bin_index, binned_joint

RANK = 2


def _edges(shape):
    n_rows, n_cols = shape
    for r, c in itertools.product(range(n_rows), range(n_cols)):
        if c + 1 < n_cols:
            yield (r, c), (r, c + 1)
        if r + 1 < n_rows:
            yield (r, c), (r + 1, c)


def _in(node, row, col, width):
    return row <= node[0] < row + width and col <= node[1] < col + width


@pytest.mark.parametrize("corner, width", [((0, 0), 2), ((1, 2), 2), ((2, 3), 2), ((1, 1), 3),
                                           ((0, 0), 4), ((3, 0), 1)])  # fmt: skip
def test_window_energy_is_the_brute_force_sum_over_edges_touching_the_window(corner, width):
    rng = np.random.default_rng(0)
    o = rng.uniform(-np.pi, np.pi, (4, 5))
    for k_out in (1.7, 0.4):  # edges leaving the window at the same or another coupling
        expected = sum(
            float(log_edge_potential(o[a], o[b], 1.7 if inside else k_out, RANK))
            for a, b in _edges(o.shape)
            for inside in [_in(a, *corner, width) and _in(b, *corner, width)]
            if _in(a, *corner, width) or _in(b, *corner, width)
        )
        energy = window_energy(o, *corner, width, 1.7, RANK, kappa_boundary=k_out)
        assert abs(energy - expected) < 1e-10


def window_conditional_bins(o, field, corner, width, kappa, k_out, n_bins=3, points_per_bin=8):
    """Exact bin probabilities of the window's nodes given the rest of ``o`` (quadrature):
    ``kappa`` on the window's inner edges, ``k_out`` on those that leave it."""
    free = [n for n in itertools.product(range(o.shape[0]), range(o.shape[1]))
            if _in(n, *corner, width)]  # fmt: skip
    points = n_bins * points_per_bin
    grid = -np.pi + (np.arange(points) + 0.5) * 2.0 * np.pi / points
    total = np.zeros((points,) * len(free))

    def term(values, nodes):
        shape = [1] * len(free)
        for node in nodes:
            shape[free.index(node)] = points
        return values.reshape(shape)

    for node in free:
        total = total + term(field[node][0] * np.cos(grid) + field[node][1] * np.sin(grid),
                             [node])  # fmt: skip
    for a, b in _edges(o.shape):
        if a in free and b in free:
            total = total + term(log_edge_potential(grid[:, None], grid[None, :], kappa, RANK),
                                 [a, b])  # fmt: skip
        elif a in free or b in free:
            node, other = (a, b) if a in free else (b, a)
            total = total + term(log_edge_potential(grid, o[other], k_out, RANK), [node])
    joint = np.exp(total - logsumexp(total))
    split = joint.reshape(sum(((n_bins, points_per_bin) for _ in free), ()))
    return split.sum(axis=tuple(range(1, 2 * len(free), 2))).ravel(), free


def test_heated_kernel_leaves_the_window_conditional_invariant():
    # 2 chains x 4000 scans (both colour orders): the derived total-variation tolerance is
    # about 0.09 over the 81 bins.
    rng = np.random.default_rng(5)
    o = rng.uniform(-np.pi, np.pi, (3, 3))
    field = natural_field(rng.uniform(-np.pi, np.pi, (3, 3)), rng.random((3, 3)) < 0.5, 1.0)
    corner, width, kappa, k_out = (1, 0), 2, 1.3, 0.6
    probs, free = window_conditional_bins(o, field, corner, width, kappa, k_out)
    codes = np.empty((2, 4000), dtype=np.int64)
    for chain in range(2):
        walk, x = np.random.default_rng([5, chain]), o.copy()
        draws = np.empty((codes.shape[1], len(free)))
        for t in range(codes.shape[1]):
            x = window_pass(
                x, field, *corner, width, kappa, RANK, walk, first_colour=t % 2,
                kappa_boundary=k_out,
            )  # fmt: skip
            draws[t] = [x[n] for n in free]
        outside = [n for n in np.ndindex(3, 3) if n not in free]
        assert all(x[n] == o[n] for n in outside)  # only window nodes change
        codes[chain] = bin_index(draws[:, None, :], 3)
    assert_chains_match_exact(codes, probs, max_tv_tol=0.12)


SHAPE, KAPPA, LADDER = (2, 3), 1.2, dict(n_rungs=4, kappa_min=0.2, width=2, n_sweeps=1)
Z = np.array([[0.3, -2.0, 1.1], [2.5, 0.0, -0.7]])
FIELD = natural_field(Z, np.array([[1, 0, 1], [0, 1, 0]]), 0.5)


def run_transitions(n_steps, seed, n_chains=2, heat="all"):
    codes = np.empty((n_chains, n_steps), dtype=np.int64)
    accepted = 0
    for chain in range(n_chains):
        rng = np.random.default_rng([seed, chain])
        o = rng.uniform(-np.pi, np.pi, SHAPE)
        draws = np.empty((n_steps, *SHAPE))
        for t in range(n_steps):
            o, a = window_transition(o, FIELD, KAPPA, RANK, rng, heat=heat, **LADDER)
            draws[t], accepted = o, accepted + a
        codes[chain] = bin_index(draws, 2)
    return codes, accepted / (n_chains * n_steps)


@pytest.fixture(scope="module")
def exact_bins():
    return binned_joint(FIELD, KAPPA, RANK, n_bins=2, points_per_bin=6)[0].ravel()


@pytest.mark.parametrize("heat", ["all", "boundary"])
def test_tempered_transition_leaves_the_posterior_invariant(exact_bins, heat):
    # 2 chains x 4000 moves, acceptance about 0.6: about 1,300 effective draws, a derived
    # total-variation tolerance of about 0.11 over the 64 bins (chi-square at alpha 1e-3
    # besides); accepting every proposal is off by a total variation of about 0.15.
    codes, rate = run_transitions(4000, seed=11, heat=heat)
    assert 0.1 < rate < 0.9, rate  # proposals are both accepted and refused
    assert_chains_match_exact(codes, exact_bins, max_tv_tol=0.13)


def test_accepting_every_proposal_fails_the_same_check(exact_bins, monkeypatch):
    monkeypatch.setattr(transitions, "_accept", lambda log_ratio, rng: True)
    codes, rate = run_transitions(1000, seed=11)
    assert rate == 1.0
    n_eff = categorical_ess(codes, exact_bins)
    result = compare_to_exact(
        codes.ravel(), exact_bins, tv_tol=tv_tolerance(exact_bins, n_eff), ess=n_eff
    )
    assert not result.passed, str(result)


def test_ladder_and_window_errors():
    np.testing.assert_allclose(transition_ladder(5.0, 4, kappa_min=5.0), [5.0] * 5)
    ladder = transition_ladder(5.0, 3, kappa_min=2.0)
    assert ladder[0] == 5.0 and np.all(np.diff(ladder) < 0) and np.isclose(ladder[-1], 2.0)
    rng = np.random.default_rng(0)
    o, field = np.zeros((4, 4)), np.zeros((4, 4, 2))
    for bad in (0, 1.5, True):
        with pytest.raises(ValueError, match="n_rungs must be an integer"):
            transition_ladder(5.0, bad, kappa_min=2.0)
    for bad in (0.0, 6.0):
        with pytest.raises(ValueError, match="kappa_min must lie in"):
            transition_ladder(5.0, 3, kappa_min=bad)
    for bad in (0, 1.5, True):
        with pytest.raises(ValueError, match="n_sweeps must be an integer"):
            window_transition(o, field, 3.0, RANK, rng, n_sweeps=bad, width=2)
    with pytest.raises(ValueError, match="heat must be 'all' or 'boundary'"):
        window_transition(o, field, 3.0, RANK, rng, width=2, heat="inside")
    with pytest.raises(ValueError, match="first_colour must be 0 or 1"):
        window_pass(o, field, 0, 0, 2, 3.0, RANK, rng, first_colour=2)
    for bad in (0, 2.5, True):
        with pytest.raises(ValueError, match="width must be an integer"):
            window_transition(o, field, 3.0, RANK, rng, width=bad)
    with pytest.raises(ValueError, match="does not fit"):
        window_pass(o, field, 3, 0, 2, 3.0, RANK, rng)
    with pytest.raises(ValueError, match="does not fit"):
        window_energy(o, 0, -1, 2, 3.0, RANK)
