"""Reflection cluster move: its kernel against brute-force enumeration, and its stationarity.

On a 2 x 2 grid (4 edges) every bond configuration, its clusters and every choice of reflected
clusters can be enumerated, giving the exact transition probabilities ``K(o -> o_S)`` of the
move to each map ``o_S`` (the nodes ``S`` reflected). The compiled kernel's empirical
transitions must match them, and they must satisfy detailed balance with respect to the map
posterior, ``p(o) K(o -> o_S) = p(o_S) K(o_S -> o)``. A rule that ignores the observations
when reflecting clusters fails both checks.
"""

import itertools

import numpy as np
import pytest

from pmctx.testing import assert_matches_exact, compare_to_exact
from pmctx.vonmises.augmented import augmented_sweep
from pmctx.vonmises.cluster import cluster_sweep, reflection_cluster_move, reflection_kernel
from pmctx.vonmises.potentials import log_edge_potential, log_joint, natural_field, wrap_angle
from tests.oracles.vonmises_exact import bin_index, binned_joint

KAPPA, RANK = 1.5, 2
PHASES = 2.0 * np.pi * np.arange(RANK + 1) / (RANK + 1)
EDGES = [(0, 1), (2, 3), (0, 2), (1, 3)]  # 2x2 grid, row-major nodes: right, right, down, down
RNG = np.random.default_rng(5)
O = RNG.uniform(-np.pi, np.pi, size=(2, 2))
FIELD = natural_field(RNG.uniform(-np.pi, np.pi, (2, 2)), np.array([[1, 0], [1, 1]]), 1.3)


def _reflect(o, nodes, c):
    out = o.copy().ravel()
    out[list(nodes)] = wrap_angle(c - out[list(nodes)])
    return out.reshape(o.shape)


def _components(bonds):
    parent = list(range(4))

    def find(i):
        while parent[i] != i:
            i = parent[i]
        return i

    for (a, b), on in zip(EDGES, bonds):
        if on:
            parent[find(a)] = find(b)
    groups = {}
    for i in range(4):
        groups.setdefault(find(i), []).append(i)
    return list(groups.values())


def exact_transitions(o, field, c, *, use_field=True):
    """``{frozenset of reflected nodes: probability}`` of one move with reflection ``c``."""
    flat = o.ravel()
    out = {}
    p_bond = []
    for a, b in EDGES:
        log_ratio = log_edge_potential(c - flat[a], flat[b], KAPPA, RANK) - log_edge_potential(
            flat[a], flat[b], KAPPA, RANK
        )
        p_bond.append(1.0 - np.exp(min(0.0, float(log_ratio))))
    unit = np.stack([np.cos(flat), np.sin(flat)], -1)
    unit_reflected = np.stack([np.cos(c - flat), np.sin(c - flat)], -1)
    gain = ((unit_reflected - unit) * field.reshape(4, 2)).sum(-1)
    if not use_field:  # the broken rule: reflect every cluster with probability 1/2
        gain = np.zeros(4)
    for bonds in itertools.product([0, 1], repeat=4):
        p = np.prod([pb if on else 1.0 - pb for pb, on in zip(p_bond, bonds)])
        if p == 0.0:
            continue
        clusters = _components(bonds)
        for flips in itertools.product([0, 1], repeat=len(clusters)):
            q = p
            nodes = set()
            for cluster, flip in zip(clusters, flips):
                p_flip = 1.0 / (1.0 + np.exp(-gain[cluster].sum()))
                q *= p_flip if flip else 1.0 - p_flip
                if flip:
                    nodes.update(cluster)
            key = frozenset(nodes)
            out[key] = out.get(key, 0.0) + q
    return out


def _detailed_balance_gap(o, field, c, **kwargs):
    forward = exact_transitions(o, field, c, **kwargs)
    worst = 0.0
    for nodes, p_fwd in forward.items():
        target = _reflect(o, nodes, c)
        p_back = exact_transitions(target, field, c, **kwargs).get(nodes, 0.0)
        lhs = log_joint(o, field, KAPPA, RANK) + np.log(p_fwd)
        rhs = log_joint(target, field, KAPPA, RANK) + np.log(p_back)
        worst = max(worst, abs(lhs - rhs))
    return worst


@pytest.mark.parametrize("k", range(RANK + 1))
def test_enumerated_kernel_satisfies_detailed_balance(k):
    c = 2.0 * np.pi * k / (RANK + 1)
    assert sum(exact_transitions(O, FIELD, c).values()) == pytest.approx(1.0)
    assert _detailed_balance_gap(O, FIELD, c) < 1e-9


def test_reflections_off_the_allowed_axes_or_ignoring_the_field_break_detailed_balance():
    assert _detailed_balance_gap(O, FIELD, 0.7) > 1e-3  # not a symmetry of psi
    assert _detailed_balance_gap(O, FIELD, 0.0, use_field=False) > 1e-3


def _empirical(field, c, n, seed):
    rng = np.random.default_rng(seed)
    keys = []
    for _ in range(n):
        u = rng.random((3, 2, 2))
        new, _ = reflection_kernel(O, field, c, KAPPA, PHASES, u[0], u[1], u[2])
        changed = ~np.isclose(wrap_angle(new - O), 0.0, atol=1e-12).ravel()
        keys.append(frozenset(np.flatnonzero(changed).tolist()))
    return keys


def test_compiled_kernel_matches_enumeration():
    c = 2.0 * np.pi / (RANK + 1)
    exact = exact_transitions(O, FIELD, c)
    states = sorted(exact, key=sorted)
    probs = np.array([exact[s] for s in states])
    index = {s: i for i, s in enumerate(states)}
    draws = _empirical(FIELD, c, 20000, seed=6)
    assert all(key in index for key in draws)
    assert_matches_exact([index[k] for k in draws], probs, tv_tol=0.02)
    # The same comparison catches a kernel that ignores the observations.
    broken = [index.get(k, 0) for k in _empirical(np.zeros_like(FIELD), c, 20000, seed=6)]
    assert not compare_to_exact(broken, probs, tv_tol=0.02).passed


def test_move_keeps_shape_and_reports_reflected_nodes():
    rng = np.random.default_rng(0)
    o = rng.uniform(-np.pi, np.pi, (5, 4))
    new, n_flipped = reflection_cluster_move(o, np.zeros((5, 4, 2)), 5.0, 5, rng)
    assert new.shape == (5, 4) and np.all((new >= -np.pi) & (new < np.pi))
    assert n_flipped == int((~np.isclose(wrap_angle(new - o), 0.0, atol=1e-12)).sum())


# Stationarity: binned draws of the composite sampler against exact quadrature (2x2 grid).
Z = np.array([[0.3, -2.0], [2.5, 0.0]])
MASK = np.array([[1, 0], [0, 1]])
STAT_FIELD = natural_field(Z, MASK, 1.2)
N_BINS = 3


@pytest.fixture(scope="module")
def exact_bins():
    probs, _ = binned_joint(STAT_FIELD, KAPPA, RANK, n_bins=N_BINS, points_per_bin=12)
    return probs.ravel()


def _broken_move(o, field, kappa, rank, rng):
    # Reflection clusters chosen as if there were no observations: not p-invariant.
    o = augmented_sweep(o, field, kappa, rank, rng)
    o, _ = reflection_cluster_move(o, np.zeros_like(field), kappa, rank, rng)
    return o


def _run(sweep, n, seed):
    rng = np.random.default_rng(seed)
    o = rng.uniform(-np.pi, np.pi, size=(2, 2))
    draws = np.empty((n, 2, 2))
    for t in range(n):
        o = sweep(o, STAT_FIELD, KAPPA, RANK, rng)
        draws[t] = o
    return draws


@pytest.mark.slow  # ~65 s: 12,000 sweeps of the cluster sampler, twice
def test_cluster_sweep_matches_exact_bins(exact_bins):
    n = 12000

    def many_moves(o, field, kappa, rank, rng):
        return cluster_sweep(o, field, kappa, rank, rng, n_moves=3)

    draws = _run(many_moves, n, seed=21)
    assert_matches_exact(bin_index(draws, N_BINS), exact_bins, tv_tol=0.04, ess=n / 2)
    broken = _run(_broken_move, n, seed=21)
    assert not compare_to_exact(
        bin_index(broken, N_BINS), exact_bins, tv_tol=0.04, ess=n / 2
    ).passed
