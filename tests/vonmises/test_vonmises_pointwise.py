"""One node's full conditional (``node_conditional_terms``, which the held-out densities of
``pmctx.vonmises.select`` use) against quadrature."""

import numpy as np
import pytest
from scipy.special import logsumexp

from pmctx.vonmises.pointwise import node_conditional_terms
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


def log_node_conditional(angles, o, row, col, field, kappa, rank):
    """Normalised log density of node ``(row, col)``'s full conditional from its mixture terms."""
    log_w, vecs = node_conditional_terms(
        np.asarray(o, dtype=np.float64),
        np.array([row]),
        np.array([col]),
        field,
        kappa,
        mode_vectors(rank),
    )
    log_w, vecs = log_w[0], vecs[0]
    log_mass = logsumexp(log_w + log_circle_normaliser(np.hypot(vecs[:, 0], vecs[:, 1])))
    unit = np.stack([np.cos(angles), np.sin(angles)], axis=-1)
    return logsumexp(log_w + unit @ vecs.T, axis=-1) - log_mass


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
