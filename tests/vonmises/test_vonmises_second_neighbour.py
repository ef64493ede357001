"""Second-neighbour couplings: exact mode conditionals, exact stationary law on tiny grids,
and the Rao-Blackwellised held-out density against quadrature.

Reference: the joint of a 2 x 3 (or 3 x 2) grid with its second-neighbour edges, integrated
over 2 angle bins per node by a 12-point periodic midpoint rule per angle (bin probabilities
within about 1% of their own value, far below what the chi-square test can see), as in
``tests/vonmises/test_vonmises_stationary.py``.
"""

import itertools

import numpy as np
import pytest
from scipy.special import logsumexp

from pmctx.testing import assert_matches_exact, compare_to_exact
from pmctx.vonmises import second_neighbour as sn
from pmctx.vonmises.potentials import log_edge_potential, mode_vectors, natural_field
from pmctx.vonmises.select import heldout_log_predictive_rb
from tests.oracles.vonmises_exact import bin_index

KAPPA, RANK, N_BINS, POINTS = 1.2, 2, 2, 12


def _grid_log_density(field, kappa, rank, kappa2, points):
    """Unnormalised log joint on a midpoint grid, one axis per node (row-major)."""
    n_rows, n_cols = field.shape[:2]
    n = n_rows * n_cols
    angles = -np.pi + (np.arange(points) + 0.5) * 2 * np.pi / points
    unit = np.stack([np.cos(angles), np.sin(angles)], axis=-1)
    pair = log_edge_potential(angles[:, None], angles[None, :], kappa, rank)
    pair2 = sn.log_second_potential(angles[:, None], angles[None, :], kappa2, rank)
    total = np.zeros((points,) * n)  # added to in place: 12**6 floats, no temporaries

    def expand(values, axes):
        shape = [1] * n
        for ax in axes:
            shape[ax] = points
        return values.reshape(shape)

    for r, c in itertools.product(range(n_rows), range(n_cols)):
        node = r * n_cols + c
        total += expand(unit @ field[r, c], [node])
        for dr, dc, values in ((0, 1, pair), (1, 0, pair), (0, 2, pair2), (2, 0, pair2)):
            if r + dr < n_rows and c + dc < n_cols:
                total += expand(values, [node, (r + dr) * n_cols + c + dc])
    return total, angles


def _binned(field, kappa2):
    log_density, _ = _grid_log_density(field, KAPPA, RANK, kappa2, POINTS)
    joint = np.exp(log_density - logsumexp(log_density))
    per = POINTS // N_BINS
    split = joint.reshape(sum(((N_BINS, per) for _ in range(joint.ndim)), ()))
    return split.sum(axis=tuple(range(1, 2 * joint.ndim, 2))).ravel()


def _field(shape, seed):
    rng = np.random.default_rng(seed)
    z = rng.uniform(-np.pi, np.pi, size=shape)
    return natural_field(z, rng.random(shape) < 0.6, 1.0)


def _chain(sweep, field, n, seed, **kwargs):
    rng = np.random.default_rng(seed)
    o = rng.uniform(-np.pi, np.pi, size=field.shape[:2])
    draws = np.empty((n, *field.shape[:2]))
    for t in range(n):
        o = sweep(o, field, KAPPA, RANK, rng, **kwargs)
        draws[t] = o
    return draws


def test_mode_conditionals_match_enumeration():
    """Each edge's mode: P(k) proportional to exp(|kappa2| r_k . (u_a + sign u_c))."""
    o = np.array([[0.4, -1.0, 2.5]])
    modes = mode_vectors(RANK)
    rng = np.random.default_rng(3)
    n = 1500
    for kappa2 in (1.5, -1.5):
        sign = np.sign(kappa2)
        unit = np.stack([np.cos(o[0]), np.sin(o[0])], axis=-1)
        logits = abs(kappa2) * modes @ (unit[0] + sign * unit[2])
        exact = np.exp(logits - logsumexp(logits))
        picks = np.empty(n, dtype=int)
        for t in range(n):
            field = sn.second_field(o, kappa2, RANK, rng)
            picks[t] = int(np.argmax(field[0, 0] @ modes.T))
            # The second end gets the signed vector; the middle node nothing.
            np.testing.assert_allclose(field[0, 2], sign * field[0, 0])
            np.testing.assert_allclose(field[0, 1], 0.0)
        assert_matches_exact(picks, exact, tv_tol=_tv_tolerance(exact, n))


def test_zero_strength_is_the_nearest_neighbour_sweep():
    from pmctx.vonmises.augmented import augmented_sweep

    field = _field((4, 5), 1)
    o = np.zeros((4, 5))
    a = sn.second_neighbour_sweep(o, field, 2.0, 3, np.random.default_rng(5), kappa2=0.0)
    b = augmented_sweep(o, field, 2.0, 3, np.random.default_rng(5))
    np.testing.assert_array_equal(a, b)


def _tv_tolerance(probs, ess):
    # Three times the expected total variation of ess independent draws (half the sum of
    # the cells' mean absolute deviations, sqrt(2 p (1 - p) / (pi ess)) each).
    return 3.0 * 0.5 * float(np.sum(np.sqrt(2.0 * probs * (1.0 - probs) / (np.pi * ess))))


N_DRAWS = 2000
SLOW = pytest.mark.slow


@pytest.mark.parametrize(
    ("shape", "kappa2"),
    [((3, 2), -1.0), pytest.param((2, 3), 1.0, marks=SLOW), pytest.param((2, 3), -1.0, marks=SLOW)],
)
def test_stationary_law_matches_exact_enumeration(shape, kappa2):
    """Vertical (3 x 2) and horizontal (2 x 3) second-neighbour edges, either sign."""
    field = _field(shape, 2)
    probs = _binned(field, kappa2)
    draws = _chain(sn.second_neighbour_sweep, field, N_DRAWS, seed=4, kappa2=kappa2)
    ess = N_DRAWS / 2  # block sweeps of a tiny grid: nearly independent; halved to be safe
    tol = _tv_tolerance(probs, ess)
    assert_matches_exact(bin_index(draws, N_BINS), probs, tv_tol=tol, ess=ess)


@SLOW
def test_the_check_has_power_against_a_wrong_sign():
    """Drawing the repulsive edges as attractive ones fails the same check."""
    field = _field((3, 2), 2)
    probs = _binned(field, -1.0)
    draws = _chain(sn.second_neighbour_sweep, field, N_DRAWS, seed=4, kappa2=1.0)
    ess = N_DRAWS / 2
    result = compare_to_exact(
        bin_index(draws, N_BINS), probs, tv_tol=_tv_tolerance(probs, ess), ess=ess
    )
    assert not result.passed, str(result)


@pytest.mark.parametrize(("pixel", "kappa2"), [((2, 2), -0.9), ((0, 1), 0.7)])
def test_rao_blackwell_heldout_density_matches_quadrature(pixel, kappa2):
    """Given the rest of a 5 x 5 map, the held-out density averaged over draws of the pixel
    and of the second-neighbour modes (the modes' field passed as ``fields``) equals the
    exact predictive by quadrature, within its Monte Carlo error."""
    rng = np.random.default_rng(8)
    kappa, rank, k_obs, z = 1.5, 3, 2.0, 0.8
    base = rng.uniform(-np.pi, np.pi, size=(5, 5))
    grid = -np.pi + (np.arange(4096) + 0.5) * 2 * np.pi / 4096
    maps = np.repeat(base[None], 4096, axis=0)
    maps[:, pixel[0], pixel[1]] = grid
    log_cond = (
        log_edge_potential(maps[:, :, :-1], maps[:, :, 1:], kappa, rank).sum(axis=(1, 2))
        + log_edge_potential(maps[:, :-1], maps[:, 1:], kappa, rank).sum(axis=(1, 2))
        + sn.log_second_potential(maps[:, :, :-2], maps[:, :, 2:], kappa2, rank).sum(axis=(1, 2))
        + sn.log_second_potential(maps[:, :-2], maps[:, 2:], kappa2, rank).sum(axis=(1, 2))
    )
    no_field = np.zeros((5, 5, 2))
    assert np.isclose(log_cond[7], sn.log_joint_second(maps[7], no_field, kappa, rank, kappa2))
    cond = np.exp(log_cond - logsumexp(log_cond))
    vm = np.exp(k_obs * np.cos(z - grid)) / (2 * np.pi * np.i0(k_obs))
    exact = float(np.sum(cond * vm))
    n_batches, per = 8, 100
    draws = rng.choice(grid, size=n_batches * per, p=cond)
    draws += rng.uniform(-np.pi / 4096, np.pi / 4096, size=draws.size)
    values = []
    for batch in draws.reshape(n_batches, per):
        o = np.repeat(base[None], per, axis=0)
        o[:, pixel[0], pixel[1]] = batch
        fields = np.array(
            [sn.second_field(m, kappa2, rank, rng)[[pixel[0]], [pixel[1]]] for m in o]
        )
        log_p = heldout_log_predictive_rb(
            np.array([z]), [pixel[0]], [pixel[1]], o, kappa, rank, np.full(per, k_obs),
            fields=fields,
        )  # fmt: skip
        values.append(float(np.exp(log_p[0])))
    se = np.std(values, ddof=1) / np.sqrt(n_batches)
    assert abs(np.mean(values) - exact) < 4 * se + 1e-4, (np.mean(values), exact, se)
