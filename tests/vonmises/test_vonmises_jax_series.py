"""The JAX sweep of the augmented orientation-map sampler (optional extra ``pmctx[jax]``).

Exactness is checked twice: given the same uniforms its column pass returns the compiled CPU
pass's von Mises means and concentrations (which the CPU tests tie to two reference kernels and
to exact enumeration), and its own chain's binned draws on a 2 x 3 grid match the exact joint
integrated by quadrature, while a kernel with the node factors at half strength fails the same
check.
"""

import numpy as np
import pytest

pytest.importorskip("jax")
pytest.importorskip("numpyro")

import jax.numpy as jnp

from pmctx.testing import assert_matches_exact, compare_to_exact
from pmctx.vonmises import _numba_series_pass, jax_series
from pmctx.vonmises.potentials import mode_vectors, natural_field
from tests.oracles.vonmises_exact import bin_index, binned_joint

# (shape, kappa, rank): chains of one node, one column, one row, a strong coupling at rank 10.
CASES = [
    ((7, 5), 3.0, 6),
    ((2, 3), 1.5, 2),
    ((1, 4), 2.0, 3),
    ((5, 1), 2.0, 3),
    ((2, 2), 8.0, 10),
    ((30, 20), 20.0, 10),
]


@pytest.mark.parametrize(("shape", "kappa", "rank"), CASES)
def test_column_pass_equals_the_compiled_cpu_pass_given_the_same_uniforms(shape, kappa, rank):
    rng = np.random.default_rng(8)
    m, n = shape
    o, field = rng.uniform(-np.pi, np.pi, shape), 3.0 * rng.normal(size=(*shape, 2))
    modes = kappa * mode_vectors(rank)
    u_edge, u_chain = rng.random((m, max(n - 1, 0))), rng.random((n, m))
    ext = np.concatenate([modes, np.zeros((1, 2))])
    mean, conc = _numba_series_pass.column_pass(o, field, ext, u_edge if n > 1 else None, u_chain)
    args = (o, field, modes, u_edge, u_chain)
    jax_mean, jax_conc = jax_series.column_pass(*(jnp.asarray(a) for a in args))
    np.testing.assert_allclose(np.asarray(jax_conc), conc, rtol=1e-12, atol=1e-12)
    gap = np.angle(np.exp(1j * (np.asarray(jax_mean) - mean)))
    np.testing.assert_allclose(gap, 0.0, atol=1e-10)


# A 2 x 3 grid (non-square, so a transposed row pass would show) with two observed nodes.
KAPPA, RANK, N_BINS = 1.5, 2, 2
Z = np.array([[0.3, -2.0, 1.0], [2.5, 0.0, -1.0]])
FIELD = natural_field(Z, np.array([[1, 0, 0], [0, 0, 1]]), 1.2)
N_DRAWS = 40_000


@pytest.fixture(scope="module")
def exact_probs():
    probs, _ = binned_joint(FIELD, KAPPA, RANK, n_bins=N_BINS, points_per_bin=8)
    return probs.ravel()


def _binned_draws(field):
    draws = jax_series.augmented_sweeps(
        np.zeros(FIELD.shape[:2]), field, KAPPA, RANK, n_sweeps=N_DRAWS, trace=True, random_seed=3
    )
    assert draws.shape == (N_DRAWS, 2, 3)
    assert np.all((draws >= -np.pi) & (draws < np.pi))
    return bin_index(draws, N_BINS)


# Block sweeps of a 2 x 3 grid are nearly independent, so ess = n / 2 is conservative.
ESS = N_DRAWS / 2


def _tv_tolerance(probs):
    """3 x the expected Monte Carlo total variation over the 64 cells at ``ESS``."""
    return 3 * 0.5 * np.sum(np.sqrt(2 * probs * (1 - probs) / (np.pi * ESS)))


def test_sweeps_sample_the_exact_joint(exact_probs):
    tv_tol = _tv_tolerance(exact_probs)  # about 0.062; the chi-square test is the sharper one
    assert_matches_exact(_binned_draws(FIELD), exact_probs, tv_tol=tv_tol, ess=ESS)


def test_a_kernel_with_half_the_field_fails_the_same_check(exact_probs, monkeypatch):
    real = jax_series.column_pass

    def broken(o, field, *args):
        return real(o, 0.5 * field, *args)

    monkeypatch.setattr(jax_series, "column_pass", broken)
    jax_series._sweeps.clear_cache()
    try:
        tv_tol = _tv_tolerance(exact_probs)
        result = compare_to_exact(_binned_draws(FIELD), exact_probs, tv_tol=tv_tol, ess=ESS)
    finally:
        monkeypatch.undo()
        jax_series._sweeps.clear_cache()
    assert not result.passed, str(result)


def test_bad_input_gets_a_clear_error():
    o, field = np.zeros((3, 4)), np.zeros((3, 4, 2))
    with pytest.raises(ValueError, match="field"):
        jax_series.augmented_sweeps(o, np.zeros((4, 3, 2)), 1.0, 2)
    with pytest.raises(ValueError, match="kappa"):
        jax_series.augmented_sweeps(o, field, 0.0, 2)
    with pytest.raises(ValueError, match="rank"):
        jax_series.augmented_sweeps(o, field, 1.0, 0)
    with pytest.raises(ValueError, match="o"):
        jax_series.augmented_sweeps(np.full((3, 4), np.nan), field, 1.0, 2)
