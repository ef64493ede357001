"""Window reflections: the MH ratio against the brute-force joint, and exact stationarity."""

import numpy as np
import pytest

from pmctx.testing import assert_matches_exact
from pmctx.vonmises.pointwise import pointwise_sweep
from pmctx.vonmises.potentials import log_joint
from pmctx.vonmises.window_reflection import _axis, _window_delta, reflection_moves
from tests.oracles.vonmises_exact import bin_index
from tests.vonmises.test_vonmises_stationary import FIELD, KAPPA, N_BINS, RANK


@pytest.mark.parametrize("shape", [(2, 3), (5, 7), (8, 8)])
def test_window_delta_and_axis_equal_the_brute_force_joint(shape):
    rng = np.random.default_rng(shape[0] * 10 + shape[1])
    o = rng.uniform(-np.pi, np.pi, shape)
    field = rng.normal(size=(*shape, 2))
    phases = 2 * np.pi * np.arange(5) / 5
    kx, ky = 3.0 * np.cos(phases), 3.0 * np.sin(phases)
    cos_o, sin_o = np.cos(o), np.sin(o)
    for _ in range(25):
        h, w = rng.integers(1, shape[0] + 1), rng.integers(1, shape[1] + 1)
        r0, c0 = rng.integers(0, shape[0] - h + 1), rng.integers(0, shape[1] - w + 1)
        c = rng.uniform(-4, 4)
        reflected = o.copy()
        reflected[r0 : r0 + h, c0 : c0 + w] = c - reflected[r0 : r0 + h, c0 : c0 + w]
        expected = log_joint(reflected, field, 3.0, 4) - log_joint(o, field, 3.0, 4)
        window = (r0, r0 + h, c0, c0 + w)
        got = _window_delta(cos_o, sin_o, field, *window, np.cos(c), np.sin(c), kx, ky)
        assert got == pytest.approx(expected, abs=1e-9)
        after = _axis(np.cos(reflected), np.sin(reflected), *window, False, 1.0, 0.0)
        predicted = _axis(cos_o, sin_o, *window, True, np.cos(c), np.sin(c))
        assert abs(np.angle(np.exp(1j * (after - predicted)))) < 1e-9


def test_pointwise_sweeps_with_many_reflections_keep_the_exact_joint():
    """12,000 draws on the 2 x 2 grid of the stationary tests, each a point-wise sweep then
    20 reflections of 1 x 1 to 2 x 2 windows (about a third accepted): binned joint within
    the samplers' tolerance (TV 0.04 on half the draws as effective sample size)."""
    from tests.vonmises.test_vonmises_stationary import exact as exact_fixture

    probs, _ = exact_fixture.__wrapped__()
    rng = np.random.default_rng(21)
    o = rng.uniform(-np.pi, np.pi, (2, 2))
    n, accepted = 12000, 0
    draws = np.empty((n, 2, 2))
    for t in range(n):
        o = pointwise_sweep(o, FIELD, KAPPA, RANK, rng)
        o, k = reflection_moves(o, FIELD, KAPPA, RANK, rng, n_proposals=20, sizes=(1, 2))
        accepted += k
        draws[t] = o
    assert accepted / (20 * n) > 0.1
    assert_matches_exact(bin_index(draws, N_BINS), probs, tv_tol=0.04, ess=n / 2)
