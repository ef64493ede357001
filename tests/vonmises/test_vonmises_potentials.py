"""Edge potential and circle normaliser against direct sums and quadrature on the circle."""

import numpy as np
import pytest
from scipy.special import logsumexp

from pmctx.vonmises.potentials import (
    log_circle_normaliser,
    log_edge_potential,
    log_joint,
    log_sphere_normaliser,
    mode_vectors,
    natural_field,
    sample_categorical,
    sample_von_mises,
    wrap_angle,
)

# Periodic midpoint rule: spectrally accurate for smooth periodic integrands.
QUAD = -np.pi + (np.arange(8192) + 0.5) * 2 * np.pi / 8192
STEP = 2 * np.pi / 8192


def log_quadrature(log_values):
    return logsumexp(log_values) + np.log(STEP)


@pytest.mark.parametrize("r", [0.0, 1e-3, 0.7, 3.0, 25.0, 400.0])
def test_circle_normaliser_matches_quadrature(r):
    # The integral of exp(v . o) depends only on |v| = r; use v = (r, 0).
    assert log_circle_normaliser(r) == pytest.approx(log_quadrature(r * np.cos(QUAD)), abs=1e-10)


def test_sphere_normaliser_of_the_seed_is_wrong_and_not_a_constant_factor():
    r = np.array([0.5, 2.0, 15.0, 40.0])
    exact = np.array([log_quadrature(x * np.cos(QUAD)) for x in r])
    seed = log_sphere_normaliser(r)
    gap = seed - exact
    assert np.all(np.abs(gap) > 0.2)
    # A constant offset would cancel in the samplers' weights; this one grows with |v|.
    assert np.ptp(gap) > 1.0


def test_edge_potential_is_the_sum_over_modes():
    rng = np.random.default_rng(1)
    a, b = rng.uniform(-np.pi, np.pi, size=(2, 7))
    kappa, rank = 2.5, 4
    phases = 2 * np.pi * np.arange(rank + 1) / (rank + 1)
    direct = np.log(
        sum(np.exp(kappa * np.cos(a - p)) * np.exp(kappa * np.cos(b - p)) for p in phases)
    )
    np.testing.assert_allclose(log_edge_potential(a, b, kappa, rank), direct, rtol=1e-12)
    np.testing.assert_allclose(mode_vectors(rank)[:, 0], np.cos(phases))


def test_log_joint_sums_edges_and_observations():
    o = np.array([[0.1, 0.5], [1.0, -2.0]])
    z = np.array([[0.0, 1.0], [2.0, 3.0]])
    mask = np.array([[1, 0], [1, 1]])
    field = natural_field(z, mask, 3.0)
    expected = 3.0 * (np.cos(0.1) + np.cos(1.0 - 2.0) + np.cos(-2.0 - 3.0))
    expected += sum(
        float(log_edge_potential(x, y, 1.5, 3))
        for x, y in [(0.1, 0.5), (1.0, -2.0), (0.1, 1.0), (0.5, -2.0)]
    )
    assert log_joint(o, field, 1.5, 3) == pytest.approx(expected, rel=1e-12)


def test_node_prior_adds_to_the_field():
    field = natural_field(
        np.zeros((1, 1)), np.zeros((1, 1)), 3.0, prior_mean=np.pi / 2, prior_kappa=2.0
    )
    np.testing.assert_allclose(field[0, 0], [0.0, 2.0], atol=1e-12)


def test_sample_von_mises_matches_mean_resultant():
    rng = np.random.default_rng(2)
    natural = np.broadcast_to(np.array([0.0, 4.0]), (40000, 2))
    draws = sample_von_mises(natural, rng)
    assert np.all((draws >= -np.pi) & (draws < np.pi))
    # E[cos(o - mu)] = I1(k)/I0(k) for a von Mises with concentration k = 4.
    from scipy.special import i0e, i1e

    assert np.mean(np.cos(draws - np.pi / 2)) == pytest.approx(i1e(4) / i0e(4), abs=0.01)


def test_sample_categorical_frequencies():
    rng = np.random.default_rng(3)
    p = np.array([0.1, 0.6, 0.3])
    draws = sample_categorical(np.broadcast_to(np.log(p), (30000, 3)), rng)
    np.testing.assert_allclose(np.bincount(draws, minlength=3) / 30000, p, atol=0.01)
    # -inf weights are never drawn.
    never = sample_categorical(np.array([[0.0, -np.inf], [-np.inf, 5.0]]), rng)
    np.testing.assert_array_equal(never, [0, 1])


def test_wrap_angle_range():
    wrapped = wrap_angle(np.array([np.pi, -np.pi, 3 * np.pi + 0.1, -0.2]))
    np.testing.assert_allclose(wrapped, [-np.pi, -np.pi, -np.pi + 0.1, -0.2], atol=1e-12)
