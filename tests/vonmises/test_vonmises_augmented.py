"""Augmented sampler pieces: edge-mode conditionals and the compiled single-term FFBS.

The default (series) kernels are checked against the reference kernels of
:mod:`tests.oracles.vonmises_kernels`: same uniforms, same draws.
"""

import functools
import os
import subprocess
import sys

import numpy as np
import pytest
from scipy.special import i0e

from pmctx.testing import compare_to_exact
from pmctx.vonmises._numba_chains import LOG_I0E_TABLE, log_i0e
from pmctx.vonmises.augmented import augmented_sweep, sample_edge_modes, sample_single_term_chains
from pmctx.vonmises.potentials import mode_vectors
from tests.oracles import vonmises_kernels as reference
from tests.oracles.vonmises_exact import bin_index
from tests.oracles.vonmises_ffbs import sample_chains


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


def test_vector_i0e_and_exp_match_scipy_and_numpy():
    import numba

    from pmctx.vonmises import _numba_vector as nv

    @numba.njit
    def both(r, d):
        a, b = np.empty_like(r), np.empty_like(d)
        for i in range(r.size):
            a[i] = nv.i0e_cheb(r[i])
        for i in range(d.size):
            b[i] = nv.exp_nonpositive(d[i])
        return a, b

    r = np.concatenate([np.linspace(0.0, 100.0, 100001), np.geomspace(1e-12, 1e7, 2001), [8.0]])
    d = -np.concatenate([np.linspace(0.0, 760.0, 100001), np.geomspace(1e-14, 700.0, 1001)])
    got_i0e, got_exp = both(r, d)
    np.testing.assert_allclose(got_i0e, i0e(r), rtol=1e-15, atol=0)
    normal = np.exp(d) > 1e-300
    np.testing.assert_allclose(got_exp[normal], np.exp(d[normal]), rtol=5e-16, atol=0)
    np.testing.assert_allclose(got_exp[~normal], np.exp(d[~normal]), rtol=0, atol=1e-300)


@pytest.mark.parametrize(("kappa", "length"), [(2.5, 1), (2.5, 2), (5.0, 9), (60.0, 17)])
def test_vector_chain_kernel_equals_the_table_kernel(kappa, length):
    from pmctx.vonmises import _numba_chains, _numba_series

    rng = np.random.default_rng(length)
    ext = np.concatenate([kappa * mode_vectors(10), np.zeros((1, 2))])
    node_vec = rng.normal(scale=6.0, size=(40, length, 2))
    uniforms = rng.random((40, length))
    aux, log_ev = reference.table_chain_modes(node_vec, ext, uniforms, _numba_chains.LOG_I0E_TABLE)
    for parallel in (False, True):
        for chain_modes in (reference.vector_chain_modes, _numba_series.chain_modes):
            got_aux, got_log_ev = chain_modes(node_vec, ext, uniforms, parallel=parallel)
            np.testing.assert_array_equal(got_aux, aux)
            # the table kernel's log i0e is exact to 1e-11 (test above); vector and series
            # to about 1e-15
            np.testing.assert_allclose(got_log_ev, log_ev, rtol=1e-11)


@pytest.mark.parametrize(
    ("shape", "kappa", "rank", "n_sweeps"),
    [((23, 17), 5.0, 10, 10), ((1, 5), 2.0, 3, 4), ((5, 1), 2.0, 3, 4), ((1, 1), 1.0, 2, 3),
     ((6, 9), 40.0, 4, 4), ((200, 170), 5.0, 10, 2)],
)  # fmt: skip
def test_series_vector_and_table_sweeps_give_the_same_draws(shape, kappa, rank, n_sweeps):
    # (200, 170) runs the threaded kernels; kappa = 40 reaches the i0e fallback beyond r = 64
    rng = np.random.default_rng(5)
    z = rng.uniform(-np.pi, np.pi, shape)
    field = np.stack([2.0 * np.cos(z), 2.0 * np.sin(z)], axis=-1) * (rng.random((*shape, 1)) > 0.3)
    maps = {}
    sweeps = {
        "series": augmented_sweep,  # the default pass
        "vector": functools.partial(reference.augmented_sweep, kernel="vector"),
        "table": functools.partial(reference.augmented_sweep, kernel="table"),
    }
    for kernel, sweep in sweeps.items():
        o, sweep_rng = z.copy(), np.random.default_rng(6)
        for _ in range(n_sweeps):
            o = sweep(o, field, kappa, rank, sweep_rng)
        maps[kernel] = o
    np.testing.assert_allclose(maps["vector"], maps["table"], rtol=0, atol=1e-12)
    np.testing.assert_allclose(maps["series"], maps["vector"], rtol=0, atol=1e-12)


def _i0_exact(t):
    """``I0(2 sqrt(t))`` of a double ``t`` by its series in 40-digit decimals."""
    from decimal import Decimal, localcontext

    with localcontext() as ctx:
        ctx.prec = 40
        t, term, total, k = Decimal(float(t)), Decimal(1), Decimal(1), 0
        while term >= total * Decimal("1e-36"):
            k += 1
            term = term * t / (k * k)
            total += term
        return total


def test_series_pair_terms_are_exact_to_1e15_in_every_band():
    from scipy.special import i0e

    from pmctx.vonmises import _numba_series as ns

    limits = [r for r, _ in ns.BANDS]
    # one node per radius: pairs at (r, 0) and (r / 2, 0) from v = 0, so r sets the band
    radii = np.concatenate([np.linspace(0.0, 70.0, 701), limits, np.nextafter(limits, np.inf)])
    for r in np.concatenate([radii, [1e-9, 300.0, 1e4]]):
        out, pairs = np.empty(2), np.array([r, 0.5 * r])
        log_factor = ns._node_terms(0.0, 0.0, pairs, np.zeros(2), r, out)
        if r <= limits[-1]:
            assert log_factor == 0.0
            # measured on a grid of 6401 radii: below 9e-16 up to r = 32, 1.9e-15 up to 64
            want = [float(_i0_exact(x * x / 4.0)) for x in pairs]
            rtol = 1e-15 if r <= 32.0 else 2.5e-15
        else:  # beyond the bands: the vector kernel's i0e(r) e^(r - r_max), with r rounded
            assert log_factor == r  # from t = r^2 / 4 (relative error of e^(r - r_max) ~ ulp(r))
            want, rtol = i0e([r, 0.5 * r]) * np.exp([0.0, -0.5 * r]), 1e-14
        np.testing.assert_allclose(out, want, rtol=rtol, atol=0, err_msg=str(r))
    assert [n for _, n in ns.BANDS] == [ns.i0_series_terms(r) for r in limits]
    assert ns.i0_series_terms(8.0) == 21 and ns.i0_series_terms(64.0) == 71
    # a node with v != 0 lands in the band of its bound |v| + reach, so all its pairs are inside
    out = np.empty(3)
    px, py = np.array([3.0, -2.0, 0.5]), np.array([0.0, 1.0, -4.0])
    ns._node_terms(5.0, 1.0, px, py, np.hypot(px, py).max(), out)
    want = [float(_i0_exact(((5.0 + x) ** 2 + (1.0 + y) ** 2) / 4.0)) for x, y in zip(px, py)]
    np.testing.assert_allclose(out, want, rtol=1e-15, atol=0)


def test_series_column_pass_equals_the_numpy_assembly():
    """The compiled pass gives the vector kernel's edge modes, node vectors and conditionals."""
    from pmctx.vonmises import _numba_series_pass, _numba_vector

    rng = np.random.default_rng(8)
    kappa, modes, (m, n) = 3.0, mode_vectors(6), (7, 5)
    o, field = rng.uniform(-np.pi, np.pi, (m, n)), rng.normal(size=(m, n, 2))
    ext = np.concatenate([kappa * modes, np.zeros((1, 2))])
    u_edge, u_chain = rng.random((m, n - 1)), rng.random((n, m))
    for parallel in (False, True):
        mean, conc = _numba_series_pass.column_pass(
            o, field, ext, u_edge, u_chain, parallel=parallel
        )
        edge = _numba_vector.edge_modes(
            np.cos(o[:, :-1]), np.sin(o[:, :-1]), np.cos(o[:, 1:]), np.sin(o[:, 1:]),
            kappa * modes, u_edge,
        )  # fmt: skip
        node_vec = field.copy()
        node_vec[:, 1:] += kappa * modes[edge]
        node_vec[:, :-1] += kappa * modes[edge]
        chains = np.ascontiguousarray(node_vec.transpose(1, 0, 2))
        aux, _ = reference.vector_chain_modes(chains, ext, u_chain)
        natural = chains + ext[aux[:, :-1]] + ext[aux[:, 1:]]
        np.testing.assert_allclose(conc, np.hypot(natural[..., 0], natural[..., 1]), rtol=1e-14)
        np.testing.assert_allclose(mean, np.arctan2(natural[..., 1], natural[..., 0]), atol=1e-14)


def test_vector_log_joint_matches_the_reference():
    from pmctx.vonmises._numba_vector import log_joint_compiled
    from pmctx.vonmises.potentials import log_joint

    rng = np.random.default_rng(7)
    for shape, kappa, rank in (((1, 1), 2.0, 2), ((3, 5), 5.0, 10), ((30, 40), 40.0, 5)):
        o = rng.uniform(-np.pi, np.pi, shape)
        field = rng.normal(scale=2.0, size=(*shape, 2))
        reference = log_joint(o, field, kappa, rank)
        assert abs(log_joint_compiled(o, field, kappa, rank) - reference) <= 1e-12 * max(
            1.0, abs(reference)
        )


def test_reference_kernel_is_checked():
    with pytest.raises(ValueError, match="kernel"):
        reference.augmented_sweep(
            np.zeros((2, 2)), np.zeros((2, 2, 2)), 1.0, 2, np.random.default_rng(0), kernel="x"
        )


ONE_SIGNATURE_CHECK = """
import numpy as np
from pmctx.vonmises import _numba_series, _numba_series_pass
from pmctx.vonmises.augmented import augmented_sweep

rng = np.random.default_rng(3)
augmented_sweep(rng.uniform(-np.pi, np.pi, (6, 4)), rng.normal(size=(6, 4, 2)), 2.0, 3, rng)
ext = np.array([[2.0, 0.0], [-2.0, 0.0], [0.0, 0.0]])
_numba_series.chain_modes(rng.normal(size=(4, 6, 2)), ext, rng.random((4, 6)), parallel=False)
for kernel in (_numba_series_pass._pass_serial, _numba_series_pass._pass_block,
               _numba_series_pass._edge_block, _numba_series._chain_block):
    assert len(kernel.signatures) == 1, (kernel, kernel.signatures)
    (signature,) = kernel.signatures
    assert all(t.layout == "C" for t in signature if hasattr(t, "layout")), signature
    assert not any("Literal" in str(t) for t in signature), signature
"""


def test_row_and_column_passes_share_one_compiled_signature(tmp_path):
    """The row pass hands transposed views to the compiled column pass, which copies them to
    C order, and the serial pass starts its blocks at an int64 zero: from an empty Numba cache
    (a fresh process, so every kernel compiles here) one sweep in both directions compiles each
    kernel once (a second layout or a ``Literal[int](0)`` start compiled them again: first
    sweep of a 200 x 200 map 9.8 s before, 6.4 s after)."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    subprocess.run([sys.executable, "-c", ONE_SIGNATURE_CHECK], check=True, env=env)


def test_cached_pair_tables_equal_fresh_ones_for_every_kappa_and_rank():
    """The column pass reads its pair tables from a small cache keyed by ``kappa r_k``: each
    entry equals a fresh build, a new kappa or rank gets its own, and a repeat is a hit."""
    from pmctx.vonmises import _numba_series

    for rank, kappa in [(1, 0.5), (3, 2.0), (3, 2.0 + 1e-12), (5, 2.0), (10, 7.5)]:
        ext = np.concatenate([kappa * mode_vectors(rank), np.zeros((1, 2))])
        cached = _numba_series._pairs(ext)
        for got, want in zip(cached, _numba_series._build_pairs(ext), strict=True):
            np.testing.assert_array_equal(got, want)
            assert got.flags.c_contiguous and got.flags.writeable  # one Numba signature
    before = _numba_series._cached_pairs.cache_info().hits
    again = _numba_series._pairs(ext)
    assert _numba_series._cached_pairs.cache_info().hits == before + 1
    assert all(a is b for a, b in zip(again, cached, strict=True))
