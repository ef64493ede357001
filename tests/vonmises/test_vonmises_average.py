"""Weights over the (kappa, rank) grid, pick rules, pooling, and the Rao-Blackwellised
held-out density."""

import itertools

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.special import logsumexp

from pmctx.vonmises.average import (
    PICK_RULES,
    cv_average,
    pick_index,
    pseudo_bma_weights,
    stacking_objective,
    stacking_weights,
)
from pmctx.vonmises.potentials import log_edge_potential
from pmctx.vonmises.select import heldout_log_predictive, heldout_log_predictive_rb


def _log_dens(n_points, n_pixels, seed):
    return np.random.default_rng(seed).normal(-1.5, 0.6, size=(n_points, n_pixels))


@pytest.mark.parametrize("seed", range(4))
def test_weights_sum_to_one_and_are_non_negative(seed):
    log_dens = _log_dens(5, 40, seed)
    for weights in (stacking_weights(log_dens), pseudo_bma_weights(log_dens, random_seed=seed)):
        assert weights.shape == (5,)
        assert np.all(weights >= 0)
        assert abs(weights.sum() - 1.0) < 1e-12


@pytest.mark.parametrize(("n_points", "seed"), [(2, 0), (2, 1), (3, 2), (3, 3)])
def test_stacking_equals_brute_force_on_the_simplex(n_points, seed):
    log_dens = _log_dens(n_points, 7, seed)
    step = 1.0 / 300
    heads = np.array(
        list(itertools.product(np.arange(0.0, 1.0 + step / 2, step), repeat=n_points - 1))
    )
    heads = heads[heads.sum(axis=1) <= 1.0 + 1e-12]
    simplex = np.column_stack([heads, np.clip(1.0 - heads.sum(axis=1), 0.0, None)])
    with np.errstate(divide="ignore"):
        values = logsumexp(np.log(simplex)[:, :, None] + log_dens[None], axis=1).sum(axis=1)
    best = values.max()
    assert abs(stacking_objective(simplex[values.argmax()], log_dens) - best) < 1e-9
    found = stacking_objective(stacking_weights(log_dens), log_dens)
    # The grid's best is within its resolution of the optimum; EM must not be worse.
    assert found >= best - 1e-9, (found, best)
    assert found - best < 1e-3


def test_stacking_known_answer_and_a_broken_update_fails():
    # 2 log(0.1 + 0.4 w) + log(0.5 - 0.4 w) is maximised at w = 0.75.
    log_dens = np.log([[0.5, 0.1, 0.5], [0.1, 0.5, 0.1]])
    np.testing.assert_allclose(stacking_weights(log_dens), [0.75, 0.25], atol=1e-6)
    # A "stacking" that weights by mean density (not the mixture optimum) gives 2/3 here.
    broken = np.exp(log_dens).mean(axis=1) / np.exp(log_dens).mean(axis=1).sum()
    assert abs(broken[0] - 0.75) > 0.05


def test_pseudo_bma_concentrates_on_a_clearly_better_point():
    log_dens = np.vstack([np.full(200, -1.0), np.full(200, -1.2)])
    np.testing.assert_allclose(pseudo_bma_weights(log_dens, random_seed=0), [1.0, 0.0], atol=1e-12)


def test_pick_rules():
    kappas, ranks = [1.0, 2.0, 4.0], [5, 5, 5]
    ld = np.log([[0.30, 0.40], [0.35, 0.36], [0.36, 0.36]])
    assert [pick_index(ld, kappas, ranks, rule) for rule in PICK_RULES] == [2, 0, 1]
    # The smallest kappa is far below the best (every pixel worse): one_se skips it.
    ld = np.log([[0.10, 0.10], [0.34, 0.38], [0.36, 0.37]])
    assert pick_index(ld, kappas, ranks, "one_se") == 1
    with pytest.raises(ValueError, match="rule"):
        pick_index(ld, kappas, ranks, "median")
    with pytest.raises(ValueError, match="one entry per row"):
        pick_index(ld, kappas[:2], ranks, "best")


@pytest.mark.parametrize(("weights", "n_draws"), [([0.3, 0.7], 10), ([0.2, 0.0, 0.8], 33)])
def test_pooled_draws_count(weights, n_draws):
    draws = [np.full((10, 2), k, dtype=float) for k in range(len(weights))]
    pooled, source = cv_average(draws, weights, n_draws, random_seed=0)
    assert pooled.shape == (n_draws, 2)
    counts = np.bincount(source, minlength=len(weights))
    assert counts.sum() == n_draws
    assert np.all(np.abs(counts - n_draws * np.asarray(weights)) < 1.0)
    np.testing.assert_array_equal(pooled[:, 0], source)


def test_pooling_skips_unfitted_zero_weight_points_and_validates():
    pooled, source = cv_average([None, np.ones((4, 3))], [0.0, 1.0], random_seed=0)
    assert pooled.shape == (4, 3) and set(source) == {1}
    with pytest.raises(ValueError, match="at least one draw"):
        cv_average([None, np.ones((4, 3))], [0.5, 0.5])
    with pytest.raises(ValueError, match="non-negative"):
        cv_average([np.ones((4, 3))], [-1.0])


def _quadrature_predictive(z, o, row, col, kappa, rank, kappa_obs):
    """p(z) = int VonMises(z; a, kappa_obs) p(a | neighbours) da by quadrature, with the
    conditional written directly as the product of the edge potentials to the neighbours."""
    nbrs = [
        o[r, c]
        for r, c in ((row - 1, col), (row + 1, col), (row, col - 1), (row, col + 1))
        if 0 <= r < o.shape[0] and 0 <= c < o.shape[1]
    ]

    def cond(a):
        return np.exp(sum(float(log_edge_potential(a, b, kappa, rank)) for b in nbrs))

    def joint(a):
        return np.exp(kappa_obs * np.cos(z - a)) / (2 * np.pi * np.i0(kappa_obs)) * cond(a)

    return quad(joint, -np.pi, np.pi, limit=200)[0] / quad(cond, -np.pi, np.pi, limit=200)[0]


@pytest.mark.parametrize(("row", "col"), [(1, 1), (0, 2), (2, 0)])
def test_rao_blackwell_density_equals_quadrature(row, col):
    rng = np.random.default_rng(row + 3 * col)
    o = rng.uniform(-np.pi, np.pi, size=(3, 3))
    z, kappa, rank, kappa_obs = 0.7, 2.5, 3, 1.7
    got = heldout_log_predictive_rb(
        np.array([z]), np.array([row]), np.array([col]), o[None], kappa, rank, np.array([kappa_obs])
    )
    want = _quadrature_predictive(z, o, row, col, kappa, rank, kappa_obs)
    np.testing.assert_allclose(np.exp(got[0]), want, rtol=1e-8)
    # Broken: scoring the neighbours' circular mean as a point estimate is not the same density.
    point = heldout_log_predictive(
        np.array([z]), np.array([[np.angle(np.exp(1j * o).sum())]]), np.array([kappa_obs])
    )
    assert abs(np.exp(point[0]) - want) > 1e-3


def test_rao_blackwell_density_integrates_to_one():
    rng = np.random.default_rng(5)
    maps = rng.uniform(-np.pi, np.pi, size=(3, 4, 4))
    rows, cols = np.array([0, 1, 3]), np.array([0, 2, 3])
    grid = np.linspace(-np.pi, np.pi, 601)[:-1]
    dens = [
        np.exp(heldout_log_predictive_rb(np.full(3, g), rows, cols, maps, 2.0, 2, [1.0, 2.0, 3.0]))
        for g in grid
    ]
    np.testing.assert_allclose(np.mean(dens, axis=0) * 2 * np.pi, 1.0, atol=1e-10)
