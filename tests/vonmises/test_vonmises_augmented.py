"""Augmented sampler pieces: edge-mode conditionals and the compiled single-term FFBS."""

import numpy as np
import pytest
from scipy.special import i0e

from pmctx.testing import compare_to_exact
from pmctx.vonmises._numba_chains import LOG_I0E_TABLE, log_i0e
from pmctx.vonmises.augmented import augmented_sweep, sample_edge_modes, sample_single_term_chains
from pmctx.vonmises.exact import bin_index
from pmctx.vonmises.ffbs import sample_chains
from pmctx.vonmises.potentials import mode_vectors


def test_log_i0e_table_is_exact_to_1e10():
    r = np.concatenate([np.linspace(0.0, 70.0, 20001), [1e-12, 63.99, 64.0, 500.0, 1e5]])
    got = np.array([log_i0e(x, LOG_I0E_TABLE) for x in r])
    np.testing.assert_allclose(got, np.log(i0e(r)), rtol=0, atol=1e-10)


def test_edge_modes_follow_their_conditional():
    kappa, rank, n = 1.3, 3, 40000
    modes = mode_vectors(rank)
    o_a, o_b = 0.4, 1.9
    draws = sample_edge_modes(
        np.full(n, o_a), np.full(n, o_b), kappa, modes, np.random.default_rng(0)
    )
    phases = 2 * np.pi * np.arange(rank + 1) / (rank + 1)
    logits = kappa * (np.cos(o_a - phases) + np.cos(o_b - phases))
    probs = np.exp(logits - logits.max())
    result = compare_to_exact(draws, probs / probs.sum(), tv_tol=0.01)
    assert result.passed, str(result)


@pytest.mark.parametrize("length", [1, 2, 5])
def test_compiled_chain_agrees_with_the_reference_kernel(length):
    rng = np.random.default_rng(length)
    kappa, modes = 2.5, mode_vectors(4)
    node_vec = rng.normal(scale=3.0, size=(6, length, 2))
    _, fast = sample_single_term_chains(node_vec, kappa, modes, rng)
    _, reference = sample_chains(
        np.zeros((6, length, 1)), node_vec[:, :, None, :], kappa, modes, rng
    )
    np.testing.assert_allclose(fast, reference, rtol=1e-10)


def test_compiled_chain_draws_match_the_reference_law():
    rng = np.random.default_rng(3)
    kappa, modes, n = 1.7, mode_vectors(2), 30000
    node_vec = np.broadcast_to(np.array([[1.0, 0.0], [0.0, 0.0], [-0.5, 0.8]]), (n, 3, 2))
    fast, _ = sample_single_term_chains(np.ascontiguousarray(node_vec), kappa, modes, rng)
    ref, _ = sample_chains(np.zeros((n, 3, 1)), node_vec[:, :, None, :], kappa, modes, rng)
    ref_freq = np.bincount(bin_index(ref[:, :, None], 3), minlength=27) / n
    # Two-sample comparison: both frequency vectors estimate the same cell probabilities.
    result = compare_to_exact(bin_index(fast[:, :, None], 3), ref_freq, tv_tol=0.03, ess=n / 2)
    assert result.passed, str(result)


def test_direction_is_checked():
    with pytest.raises(ValueError, match="direction"):
        augmented_sweep(
            np.zeros((2, 2)),
            np.zeros((2, 2, 2)),
            1.0,
            2,
            np.random.default_rng(0),
            direction="diagonal",
        )
