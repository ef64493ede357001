"""Pinwheel charges, smoothness, orientation error and circular moments."""

import numpy as np
import pytest

from pmctx.vonmises.maps import (
    circular_moments,
    count_pinwheels,
    orientation_error,
    pinwheel_charges,
    smoothness,
)


def vortex(n, charge, center=(0.5, 0.5)):
    """Orientation map theta = charge * polar angle around a point inside a cell."""
    rows, cols = np.mgrid[0:n, 0:n].astype(float)
    phi = np.arctan2(rows - (n // 2 - 1 + center[0]), cols - (n // 2 - 1 + center[1]))
    return np.mod(charge * phi, np.pi)


@pytest.mark.parametrize("charge", [0.5, -0.5])
def test_single_pinwheel_is_found_with_its_sign(charge):
    charges = pinwheel_charges(vortex(8, charge))
    assert np.count_nonzero(charges) == 1
    assert charges[3, 3] == charge
    n_pos, n_neg = count_pinwheels(vortex(8, charge))
    assert (n_pos, n_neg) == ((1, 0) if charge > 0 else (0, 1))


def test_smooth_map_has_no_pinwheels_and_high_smoothness():
    rows, cols = np.mgrid[0:10, 0:10]
    theta = np.mod(0.05 * cols + 0.02 * rows, np.pi)
    assert count_pinwheels(theta) == (0, 0)
    assert smoothness(2 * theta) > 0.99
    rough = np.random.default_rng(0).uniform(-np.pi, np.pi, size=(30, 30))
    assert abs(smoothness(rough)) < 0.05


def test_orientation_error_is_pi_periodic():
    err = orientation_error(
        np.array([0.05, np.pi - 0.05, 1.0]), np.array([np.pi - 0.05, 0.05, 1.0])
    )
    np.testing.assert_allclose(err, [0.1, 0.1, 0.0], atol=1e-12)
    assert orientation_error(0.0, np.pi / 2) == pytest.approx(np.pi / 2)


def test_circular_moments_of_orientations_across_zero():
    draws = np.array([0.05, np.pi - 0.05, 0.05, np.pi - 0.05])
    mean, sd = circular_moments(draws)
    assert orientation_error(mean, 0.0) < 1e-12
    # R = cos(0.1) for doubled angles +-0.1, so sd = sqrt(-2 log cos 0.1) / 2.
    assert sd == pytest.approx(np.sqrt(-2 * np.log(np.cos(0.1))) / 2)
