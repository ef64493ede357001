"""Column potentials (``pmctx.vonmises.ffbs``) and the FFBS oracle built on them, against
quadrature of the column conditional."""

import numpy as np
import pytest
from scipy.special import logsumexp

from pmctx.testing import compare_to_exact
from pmctx.vonmises.ffbs import horizontal_neighbour_terms
from pmctx.vonmises.potentials import (
    log_edge_potential,
    log_sphere_normaliser,
    mode_vectors,
    natural_field,
)
from tests.oracles.vonmises_exact import bin_index
from tests.oracles.vonmises_ffbs import ffbs_sweep, sample_chains

KAPPA, RANK = 1.8, 3
POINTS = 48
ANGLES = -np.pi + (np.arange(POINTS) + 0.5) * 2 * np.pi / POINTS


def make_grid(n_rows, seed=7):
    rng = np.random.default_rng(seed)
    o = rng.uniform(-np.pi, np.pi, size=(n_rows, 3))
    z = rng.uniform(-np.pi, np.pi, size=(n_rows, 3))
    mask = rng.integers(0, 2, size=(n_rows, 3))
    return o, natural_field(z, mask, 2.0)


def column_terms(o, field, column, batch=1):
    modes = mode_vectors(RANK)
    log_w, vecs = horizontal_neighbour_terms(o, np.array([column]), KAPPA, modes)
    vecs = vecs + field[:, column][None, :, None, :]
    rep = (batch, 1, 1)
    return np.tile(log_w, rep), np.tile(vecs, (*rep, 1)), modes


def exact_column_log_density(o, field, column):
    """Unnormalised log density of the column on the angle grid, one axis per row."""
    n_rows, n_cols = o.shape
    total = np.zeros((POINTS,) * n_rows)
    unit = np.stack([np.cos(ANGLES), np.sin(ANGLES)], axis=-1)
    log_psi = log_edge_potential(ANGLES[:, None], ANGLES[None, :], KAPPA, RANK)
    for i in range(n_rows):
        node = unit @ field[i, column]
        for c in (column - 1, column + 1):
            if 0 <= c < n_cols:
                node = node + log_edge_potential(ANGLES, o[i, c], KAPPA, RANK)
        shape = [1] * n_rows
        shape[i] = POINTS
        total = total + node.reshape(shape)
        if i + 1 < n_rows:
            shape = [1] * n_rows
            shape[i] = shape[i + 1] = POINTS
            total = total + log_psi.reshape(shape)
    return total


@pytest.mark.parametrize(("n_rows", "column"), [(1, 1), (2, 0), (3, 1), (4, 2)])
def test_log_evidence_matches_quadrature(n_rows, column):
    o, field = make_grid(n_rows)
    log_w, vecs, modes = column_terms(o, field, column)
    _, log_evidence = sample_chains(log_w, vecs, KAPPA, modes, np.random.default_rng(0))
    exact = exact_column_log_density(o, field, column)
    expected = logsumexp(exact) + n_rows * np.log(2 * np.pi / POINTS)
    assert log_evidence[0] == pytest.approx(expected, abs=1e-8)
    _, wrong = sample_chains(
        log_w, vecs, KAPPA, modes, np.random.default_rng(0), log_normaliser=log_sphere_normaliser
    )
    assert abs(wrong[0] - expected) > 0.1


def test_column_draws_match_exact_bins():
    n_rows, n_bins, n = 3, 4, 30000
    o, field = make_grid(n_rows, seed=8)
    exact = exact_column_log_density(o, field, 1)
    probs = np.exp(exact - logsumexp(exact))
    sub = POINTS // n_bins
    probs = probs.reshape(n_bins, sub, n_bins, sub, n_bins, sub).sum(axis=(1, 3, 5)).ravel()
    log_w, vecs, modes = column_terms(o, field, 1, batch=n)
    # The n chains are independent exact draws of the same column.
    draws, _ = sample_chains(log_w, vecs, KAPPA, modes, np.random.default_rng(9))
    result = compare_to_exact(bin_index(draws[:, :, None], n_bins), probs, tv_tol=0.02)
    assert result.passed, str(result)
    wrong, _ = sample_chains(
        log_w, vecs, KAPPA, modes, np.random.default_rng(9), log_normaliser=log_sphere_normaliser
    )
    assert not compare_to_exact(bin_index(wrong[:, :, None], n_bins), probs, tv_tol=0.02).passed


def test_sweep_keeps_shape_and_range():
    o, field = make_grid(5)
    new = ffbs_sweep(o, field, KAPPA, RANK, np.random.default_rng(1))
    assert new.shape == o.shape
    assert np.all((new >= -np.pi) & (new < np.pi))
    assert not np.any(new == o)
