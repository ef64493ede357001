"""Forward-backward column marginals against brute-force quadrature."""

import numpy as np
import pytest
from scipy.special import logsumexp

from pmctx.vonmises.marginals import column_marginals
from pmctx.vonmises.potentials import log_edge_potential, natural_field

KAPPA, RANK, POINTS = 2.2, 3, 40


def brute_force_marginals(o, field, column):
    """Marginals of the column's nodes from its full joint density on the angle grid."""
    angles = -np.pi + (np.arange(POINTS) + 0.5) * 2 * np.pi / POINTS
    n_rows, n_cols = o.shape
    unit = np.stack([np.cos(angles), np.sin(angles)], axis=-1)
    log_psi = log_edge_potential(angles[:, None], angles[None, :], KAPPA, RANK)
    total = np.zeros((POINTS,) * n_rows)
    for i in range(n_rows):
        node = unit @ field[i, column]
        for c in (column - 1, column + 1):
            if 0 <= c < n_cols:
                node = node + log_edge_potential(angles, o[i, c], KAPPA, RANK)
        shape = [1] * n_rows
        shape[i] = POINTS
        total = total + node.reshape(shape)
        if i + 1 < n_rows:
            shape = [1] * n_rows
            shape[i] = shape[i + 1] = POINTS
            total = total + log_psi.reshape(shape)
    joint = np.exp(total - logsumexp(total))
    out = [joint.sum(axis=tuple(k for k in range(n_rows) if k != i)) for i in range(n_rows)]
    return np.array(out) / (2 * np.pi / POINTS)


@pytest.mark.parametrize(("n_rows", "column"), [(1, 0), (2, 1), (4, 0), (4, 2)])
def test_marginals_match_brute_force(n_rows, column):
    rng = np.random.default_rng(20 + n_rows)
    o = rng.uniform(-np.pi, np.pi, size=(n_rows, 3))
    z = rng.uniform(-np.pi, np.pi, size=(n_rows, 3))
    field = natural_field(z, rng.integers(0, 2, size=(n_rows, 3)), 1.5)
    _, density = column_marginals(o, field, KAPPA, RANK, columns=[column], n_angles=POINTS)
    np.testing.assert_allclose(density[0], brute_force_marginals(o, field, column), rtol=1e-7)
    np.testing.assert_allclose(density[0].sum(axis=1) * 2 * np.pi / POINTS, 1.0, rtol=1e-9)


def test_strong_observation_concentrates_the_marginal():
    o = np.zeros((3, 3))
    z = np.full((3, 3), 1.0)
    field = natural_field(z, np.ones((3, 3)), 200.0)
    angles, density = column_marginals(o, field, 1.0, 2, columns=[1], n_angles=720)
    assert np.all(np.abs(angles[density[0].argmax(axis=1)] - 1.0) < 0.01)
