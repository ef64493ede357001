"""Window symmetry moves: log ratio, kernel against enumeration, detailed balance, stationarity.

On a 2 x 2 grid with windows of side 1 or 2 every proposal ``(window, group element)`` and its
probability can be enumerated, giving the exact transition probabilities ``K(o -> o')`` of
one move. The compiled kernel's empirical transitions must match them, and they must satisfy
detailed balance with respect to the map posterior. Moves that ignore the observations, or
the edges across the window's border, fail the same checks.
"""

import itertools

import numpy as np
import pytest

from pmctx.testing import assert_matches_exact, compare_to_exact
from pmctx.vonmises.augmented import augmented_sweep
from pmctx.vonmises.potentials import log_joint, natural_field, wrap_angle
from pmctx.vonmises.window import window_kernel, window_log_ratio, window_moves, window_sweep
from tests.oracles.vonmises_exact import bin_index, binned_joint

KAPPA, RANK, MAX_SIZE = 1.5, 2, 2
N_MODES = RANK + 1
PHASES = 2.0 * np.pi * np.arange(N_MODES) / N_MODES
RNG = np.random.default_rng(5)
O = RNG.uniform(-np.pi, np.pi, size=(2, 2))
FIELD = natural_field(RNG.uniform(-np.pi, np.pi, (2, 2)), np.array([[1, 0], [1, 1]]), 1.3)


def _element(g):
    """``(sign, offset)`` of group element ``g`` (the kernel's numbering)."""
    step = 2.0 * np.pi / N_MODES
    return (-1.0, g * step) if g < N_MODES else (1.0, (g - N_MODES + 1) * step)


def _apply(o, top, left, height, width, g):
    sign, offset = _element(g)
    out = o.copy()
    block = out[top : top + height, left : left + width]
    out[top : top + height, left : left + width] = wrap_angle(sign * block + offset)
    return out


def _proposals(shape):
    """Every ``(top, left, height, width, g)`` with its probability under the move's draw."""
    n_rows, n_cols = shape
    sizes_r, sizes_c = range(1, min(MAX_SIZE, n_rows) + 1), range(1, min(MAX_SIZE, n_cols) + 1)
    for height, width in itertools.product(sizes_r, sizes_c):
        p_size = 1.0 / (len(sizes_r) * len(sizes_c))
        n_pos = (n_rows - height + 1) * (n_cols - width + 1)
        for top, left in itertools.product(range(n_rows - height + 1), range(n_cols - width + 1)):
            for g in range(2 * RANK + 1):
                yield (top, left, height, width, g), p_size / n_pos / (2 * RANK + 1)


def _key(o):
    return tuple(np.round(wrap_angle(o).ravel(), 9))


def exact_transitions(o, field, *, broken=None):
    """``{target map key: probability}`` of one move, by enumeration (``"field"``/``"edges"``:
    acceptance that ignores the observations / the border edges)."""
    out = {}
    base = log_joint(o, field, KAPPA, RANK)
    for (top, left, height, width, g), q in _proposals(o.shape):
        target = _apply(o, top, left, height, width, g)
        if broken == "field":
            log_ratio = log_joint(target, 0 * field, KAPPA, RANK) - log_joint(
                o, 0 * field, KAPPA, RANK
            )
        elif broken == "edges":
            log_ratio = log_joint(target, field, 0.0, RANK) - log_joint(o, field, 0.0, RANK)
        else:
            log_ratio = log_joint(target, field, KAPPA, RANK) - base
        accept = min(1.0, float(np.exp(log_ratio)))
        out[_key(target)] = out.get(_key(target), 0.0) + q * accept
        out[_key(o)] = out.get(_key(o), 0.0) + q * (1.0 - accept)
    return out


def _targets(o):
    """The full-precision maps that one move can propose from ``o`` (and ``o`` itself)."""
    return [o] + [_apply(o, *proposal) for proposal, _ in _proposals(o.shape)]


def _lookup(transitions, o):
    """Probability of the map ``o`` (circular distance below 1e-8) in ``transitions``."""
    return sum(
        p
        for key, p in transitions.items()
        if np.abs(wrap_angle(np.array(key) - o.ravel())).max() < 1e-8
    )


def _detailed_balance_gap(o, field, **kwargs):
    forward = exact_transitions(o, field, **kwargs)
    worst = 0.0
    targets = {_key(t): t for t in _targets(o)}
    for key, p_fwd in forward.items():
        target = targets[key]
        p_back = _lookup(exact_transitions(target, field, **kwargs), o)
        lhs = log_joint(o, field, KAPPA, RANK) + np.log(p_fwd)
        rhs = log_joint(target, field, KAPPA, RANK) + np.log(p_back)
        worst = max(worst, abs(lhs - rhs))
    return worst


def test_log_ratio_is_the_reference_log_joint_difference():
    rng = np.random.default_rng(1)
    o = rng.uniform(-np.pi, np.pi, (5, 6))
    field = rng.normal(size=(5, 6, 2))
    for _ in range(100):
        height, width = rng.integers(1, 5, 2)
        top, left = rng.integers(0, 5 - height + 1), rng.integers(0, 6 - width + 1)
        g = int(rng.integers(0, 2 * RANK + 1))
        target = _apply(o, top, left, height, width, g)
        sign, offset = _element(g)
        got = window_log_ratio(o, field, top, left, height, width, sign, offset, KAPPA, PHASES)
        expected = log_joint(target, field, KAPPA, RANK) - log_joint(o, field, KAPPA, RANK)
        assert got == pytest.approx(expected, abs=1e-10)


def test_enumerated_kernel_satisfies_detailed_balance():
    assert sum(exact_transitions(O, FIELD).values()) == pytest.approx(1.0)
    assert _detailed_balance_gap(O, FIELD) < 1e-9


def test_acceptance_ignoring_observations_or_border_edges_breaks_detailed_balance():
    assert _detailed_balance_gap(O, FIELD, broken="field") > 1e-3
    assert _detailed_balance_gap(O, FIELD, broken="edges") > 1e-3


def _empirical(field, n, seed):
    rng = np.random.default_rng(seed)
    keys = []
    for _ in range(n):
        new, _ = window_moves(O, field, KAPPA, RANK, rng, n_moves=1, max_size=MAX_SIZE)
        keys.append(_key(new))
    return keys


def test_compiled_kernel_matches_enumeration():
    exact = exact_transitions(O, FIELD)
    states = sorted(exact)
    probs = np.array([exact[s] for s in states])
    index = {s: i for i, s in enumerate(states)}
    draws = _empirical(FIELD, 20000, seed=6)
    assert all(key in index for key in draws)
    assert_matches_exact([index[k] for k in draws], probs, tv_tol=0.02)
    # The same comparison catches a kernel that ignores the observations.
    broken = [index.get(k, 0) for k in _empirical(np.zeros_like(FIELD), 20000, seed=6)]
    assert not compare_to_exact(broken, probs, tv_tol=0.02).passed


def test_kernel_reports_accepted_moves_and_wraps():
    rng = np.random.default_rng(0)
    o = rng.uniform(-np.pi, np.pi, (6, 5))
    new, n_accepted = window_moves(o, np.zeros((6, 5, 2)), 0.0, 3, rng, n_moves=7)
    assert n_accepted == 7  # flat target: every proposal is accepted
    assert new.shape == (6, 5) and np.all((new >= -np.pi) & (new < np.pi))
    none = np.zeros(0, dtype=np.int64)
    same, n_none = window_kernel(o, np.zeros((6, 5, 2)), 1.0, PHASES, none, none, none, none,
                                 none, np.zeros(0))  # fmt: skip
    assert n_none == 0 and np.array_equal(same, o)
    with pytest.raises(ValueError, match="max_size"):
        window_moves(o, np.zeros((6, 5, 2)), 1.0, 3, rng, max_size=0)


# Stationarity: binned draws of the composite sampler against exact quadrature (2x2 grid).
Z = np.array([[0.3, -2.0], [2.5, 0.0]])
MASK = np.array([[1, 0], [0, 1]])
STAT_FIELD = natural_field(Z, MASK, 1.2)
N_BINS = 3


@pytest.fixture(scope="module")
def exact_bins():
    probs, _ = binned_joint(STAT_FIELD, KAPPA, RANK, n_bins=N_BINS, points_per_bin=12)
    return probs.ravel()


def _windows_only(o, field, kappa, rank, rng):
    o, _ = window_moves(o, field, kappa, rank, rng, n_moves=4, max_size=MAX_SIZE)
    return o


def _good(o, field, kappa, rank, rng):
    # A half sweep (columns only) leaves most of the mixing to the window moves.
    o = augmented_sweep(o, field, kappa, rank, rng, direction="columns")
    return _windows_only(o, field, kappa, rank, rng)


def _broken(o, field, kappa, rank, rng):
    # Window moves accepted as if there were no observations: not p-invariant.
    o = augmented_sweep(o, field, kappa, rank, rng, direction="columns")
    return _windows_only(o, np.zeros_like(field), kappa, rank, rng)


def _run(sweep, n, seed):
    rng = np.random.default_rng(seed)
    o = rng.uniform(-np.pi, np.pi, size=(2, 2))
    draws = np.empty((n, 2, 2))
    for t in range(n):
        o = sweep(o, STAT_FIELD, KAPPA, RANK, rng)
        draws[t] = o
    return draws


def test_window_sweep_matches_exact_bins(exact_bins):
    n = 12000
    draws = _run(_good, n, seed=21)
    assert_matches_exact(bin_index(draws, N_BINS), exact_bins, tv_tol=0.04, ess=n / 2)
    broken = _run(_broken, n, seed=21)
    assert not compare_to_exact(
        bin_index(broken, N_BINS), exact_bins, tv_tol=0.04, ess=n / 2
    ).passed


def test_window_sweep_is_an_augmented_sweep_then_window_moves():
    o = np.random.default_rng(2).uniform(-np.pi, np.pi, (4, 5))
    field = natural_field(np.zeros((4, 5)), np.ones((4, 5)), 1.0)
    got = window_sweep(o, field, 2.0, 3, np.random.default_rng(3), n_moves=9)
    rng = np.random.default_rng(3)
    expected, _ = window_moves(
        augmented_sweep(o, field, 2.0, 3, rng), field, 2.0, 3, rng, n_moves=9
    )
    np.testing.assert_array_equal(got, expected)
