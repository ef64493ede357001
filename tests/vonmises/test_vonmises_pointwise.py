"""Point-wise full conditionals against quadrature, and their draws against exact bins."""

import numpy as np
import pytest
from scipy.special import logsumexp

from pmctx.testing import compare_to_exact
from pmctx.vonmises.pointwise import (
    _draw_nodes,
    log_node_conditional,
    node_conditional_terms,
    pointwise_sweep,
)
from pmctx.vonmises.potentials import (
    log_circle_normaliser,
    log_edge_potential,
    log_sphere_normaliser,
    mode_vectors,
    natural_field,
)

QUAD = -np.pi + (np.arange(4096) + 0.5) * 2 * np.pi / 4096
KAPPA, RANK = 2.0, 3


@pytest.fixture(scope="module")
def grid():
    rng = np.random.default_rng(4)
    o = rng.uniform(-np.pi, np.pi, size=(3, 4))
    z = rng.uniform(-np.pi, np.pi, size=(3, 4))
    field = natural_field(z, np.ones((3, 4)), 1.5)
    return o, field


def direct_log_conditional(angles, o, row, col, field):
    """Brute force: observation term plus the log edge potential to every neighbour."""
    out = angles * 0.0 + np.cos(angles) * field[row, col, 0] + np.sin(angles) * field[row, col, 1]
    for dr, dc in ((-1, 0), (1, 0), (0, -1), (0, 1)):
        r, c = row + dr, col + dc
        if 0 <= r < o.shape[0] and 0 <= c < o.shape[1]:
            out = out + log_edge_potential(angles, o[r, c], KAPPA, RANK)
    return out - (logsumexp(out) + np.log(2 * np.pi / angles.size))


def implied_sampling_density(o, row, col, field, log_normaliser):
    """Density the kernel draws from: components chosen by weight x normaliser, then exact vM."""
    log_w, vecs = node_conditional_terms(
        o, np.array([row]), np.array([col]), field, KAPPA, mode_vectors(RANK)
    )
    r = np.hypot(vecs[0, :, 0], vecs[0, :, 1])
    choose = log_w[0] + log_normaliser(r)
    choose = np.exp(choose - logsumexp(choose))
    unit = np.stack([np.cos(QUAD), np.sin(QUAD)], axis=-1)
    comp = np.exp(unit @ vecs[0].T - log_circle_normaliser(r))
    return comp @ choose


@pytest.mark.parametrize(("row", "col"), [(0, 0), (1, 1), (2, 3), (0, 2)])
def test_conditional_matches_quadrature(grid, row, col):
    o, field = grid
    exact = direct_log_conditional(QUAD, o, row, col, field)
    got = log_node_conditional(QUAD, o, row, col, field, KAPPA, RANK)
    np.testing.assert_allclose(got, exact, atol=1e-9)
    # The density the sampler draws from is the same function.
    implied = implied_sampling_density(o, row, col, field, log_circle_normaliser)
    np.testing.assert_allclose(implied, np.exp(exact), rtol=1e-8, atol=1e-12)


def test_seed_sphere_normaliser_gives_a_different_conditional(grid):
    o, field = grid
    exact = np.exp(direct_log_conditional(QUAD, o, 1, 1, field))
    wrong = implied_sampling_density(o, 1, 1, field, log_sphere_normaliser)
    assert np.max(np.abs(wrong - exact)) > 0.02


def _binned(draws, n_bins):
    return np.clip(np.floor((draws + np.pi) / (2 * np.pi) * n_bins).astype(int), 0, n_bins - 1)


def test_node_draws_match_exact_bins(grid):
    o, field = grid
    n_bins, n = 16, 40000
    exact = np.exp(direct_log_conditional(QUAD, o, 1, 1, field)).reshape(n_bins, -1).sum(axis=1)
    exact = exact / exact.sum()
    rows, cols = np.full(n, 1), np.full(n, 1)
    modes = mode_vectors(RANK)
    rng = np.random.default_rng(5)
    draws = _draw_nodes(o, rows, cols, field, KAPPA, modes, rng, log_circle_normaliser)
    result = compare_to_exact(_binned(draws, n_bins), exact, tv_tol=0.015)
    assert result.passed, str(result)
    wrong = _draw_nodes(o, rows, cols, field, KAPPA, modes, rng, log_sphere_normaliser)
    assert not compare_to_exact(_binned(wrong, n_bins), exact, tv_tol=0.015).passed


def test_sweep_updates_every_node_and_keeps_range():
    rng = np.random.default_rng(6)
    o = np.zeros((4, 5))
    new = pointwise_sweep(o, np.zeros((4, 5, 2)), 1.0, 2, rng)
    assert np.all(new != 0.0)
    assert np.all((new >= -np.pi) & (new < np.pi))
    np.testing.assert_array_equal(o, 0.0)  # input untouched
