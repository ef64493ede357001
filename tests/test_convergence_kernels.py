"""The blocked, compiled diagnostics against the whole-array reference and brute force.

:mod:`tests.oracles.convergence_reference` is the previous numpy implementation; R-hat and
ESS must equal it to 1e-10 relative (they differ only by the rounding of the summed
autocovariances), on every kind of input the report sees.
"""

import tracemalloc

import numpy as np
import pytest
from scipy.special import ndtri
from scipy.stats import rankdata

from pmctx import convergence
from pmctx._numba_ranks import ess_direct, rank_transforms
from pmctx.convergence import element_diagnostics, ess_bulk, ess_tail, rhat
from tests.oracles import convergence_reference as reference

RTOL = 1e-10


def _random_walk(rng, shape):
    return rng.normal(size=shape).cumsum(axis=1)


def _ar1(rng, shape, phi=0.7):
    x = rng.normal(size=shape)
    for t in range(1, shape[1]):
        x[:, t] += phi * x[:, t - 1]
    return x


def _cases():
    rng = np.random.default_rng(20261127)
    stuck = np.zeros((2, 60, 3))
    stuck[1] = 1.0  # chains stuck at different values
    constant = np.ones((4, 80, 5))
    constant[:, :, 2] = rng.normal(size=(4, 80))
    one_chain_moves = np.zeros((3, 40, 2))
    one_chain_moves[1, :, 0] = rng.normal(size=40)
    return {
        "normal": rng.normal(size=(4, 200, 40)),
        "ar1 odd draws": _ar1(rng, (3, 301, 40)),
        "random walk": _random_walk(rng, (4, 300, 40)),
        "integers (ties)": rng.poisson(2.0, size=(3, 100, 40)).astype(float),
        "rare binary": (rng.random((2, 150, 40)) < 0.04).astype(float),
        "short (5 draws)": rng.normal(size=(2, 5, 7)),
        "short tied (4 draws)": rng.integers(0, 3, size=(2, 4, 7)).astype(float),
        "one chain": _ar1(rng, (1, 200, 10)),
        "constant and moving": constant,
        "stuck chains": stuck,
        "one chain moves": one_chain_moves,
        "more than one block": _ar1(rng, (2, 60, 3 * convergence.BLOCK + 5), phi=0.95),
    }


CASES = _cases()


@pytest.mark.parametrize("name", list(CASES))
def test_element_diagnostics_equal_the_reference(name):
    x = CASES[name]
    expected, got = reference.element_diagnostics(x), element_diagnostics(x)
    np.testing.assert_array_equal(got["constant"], expected["constant"])
    for key in ("r_hat", "ess_bulk", "ess_tail"):
        np.testing.assert_allclose(got[key], expected[key], rtol=RTOL, atol=0, err_msg=key)


@pytest.mark.parametrize("period", [2 * np.pi, np.pi])
def test_circular_diagnostics_equal_the_reference(period):
    rng = np.random.default_rng(3)
    centres = rng.uniform(0, period, 30)
    x = np.mod(centres + _ar1(rng, (4, 150, 30), phi=0.5), period)  # wraps around
    x[:, :, 0] = 0.0  # cos and sin constant
    expected, got = reference.element_diagnostics(x, period), element_diagnostics(x, period)
    np.testing.assert_array_equal(got["constant"], expected["constant"])
    for key in ("r_hat", "ess_bulk", "ess_tail"):
        np.testing.assert_allclose(got[key], expected[key], rtol=RTOL, atol=0, err_msg=key)


def test_public_functions_equal_the_reference():
    x = CASES["integers (ties)"].reshape(3, 100, 8, 5)  # trailing dims are flattened
    r, bulk, tail = reference.diagnose(x.reshape(3, 100, -1))
    np.testing.assert_allclose(rhat(x), r, rtol=RTOL, atol=0)
    np.testing.assert_allclose(ess_bulk(x), bulk, rtol=RTOL, atol=0)
    np.testing.assert_allclose(ess_tail(x), tail, rtol=RTOL, atol=0)
    assert np.isnan(rhat(x[:, :3])).all() and np.isnan(ess_bulk(x[:, :3])).all()


def _transforms(rows):
    table, quantiles = convergence._tables(rows.shape[1])
    series = np.empty((1 + len(quantiles), rows.shape[0], rows.shape[1]))
    folded = np.empty(rows.shape)
    rank_transforms(rows, np.argsort(rows, axis=1), table, quantiles, series, folded)
    return series, folded


def test_rank_transforms_equal_brute_force_ranks_and_quantiles():
    rng = np.random.default_rng(5)
    size = 4 * 25
    rows = np.stack(
        [
            rng.normal(size=size),
            rng.integers(0, 4, size=size).astype(float),  # many ties, ties across the fold
            np.full(size, 2.0) + np.where(rng.random(size) < 0.5, 0.0, np.spacing(2.0)),
            np.nextafter(1.0, np.arange(size) % 3 - 1.0),  # neighbouring floats
            np.r_[np.zeros(size - 3), [1.0, 2.0, 3.0]],
        ]
    )
    series, folded = _transforms(rows)
    for row, scores, low, high, fold in zip(rows, series[0], series[1], series[2], folded):
        np.testing.assert_array_equal(scores, ndtri((rankdata(row) - 0.375) / (size + 0.25)))
        np.testing.assert_array_equal(low, row <= np.quantile(row, 0.05))
        np.testing.assert_array_equal(high, row <= np.quantile(row, 0.95))
        distance = np.abs(row - np.median(row))
        np.testing.assert_array_equal(fold, ndtri((rankdata(distance) - 0.375) / (size + 0.25)))


def test_direct_lags_and_fft_give_the_same_ess(monkeypatch):
    rng = np.random.default_rng(11)
    ar = [_ar1(rng, (20, 90, 6), phi).transpose(0, 2, 1) for phi in (0.0, 0.6, 0.95, 1.0)]
    y = np.ascontiguousarray(np.concatenate(ar))  # (element, chain, draw)
    both = []
    for lags in (90, 0):  # all lags summed directly; every element through the FFT
        monkeypatch.setattr(convergence, "FIRST_LAGS", lags)
        monkeypatch.setattr(convergence, "MAX_DIRECT_LAGS", lags)
        both.append(convergence._ess(y))
    np.testing.assert_allclose(both[0], both[1], rtol=1e-12, atol=0)
    centred = y - y.mean(axis=2, keepdims=True)
    spread = np.var(y.mean(axis=2), axis=1, ddof=1)
    _, decided = ess_direct(centred, 90, spread, 0.3, 16, 64, 1.0, 100)
    assert decided[:20].all() and decided[-20:].sum() < 5  # i.i.d. direct, random walks FFT


def test_memory_grows_with_the_block_not_with_the_elements():
    x = np.random.default_rng(0).normal(size=(4, 200, 2000))  # 12.8 MB of draws
    element_diagnostics(x[:, :, :3])  # compile outside the measurement
    tracemalloc.start()
    try:
        element_diagnostics(x)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # The whole-array reference peaks at 176 MB here (an element x chain x 256 spectrum).
    assert peak < 0.5 * x.nbytes


@pytest.mark.parametrize("bad", [np.zeros(5), 3.0])
def test_too_few_dims_is_a_clear_error(bad):
    with pytest.raises(ValueError, match=r"expected draws with dims \(chain, draw, \.\.\.\)"):
        element_diagnostics(bad)


def test_summary_intervals_equal_separate_quantiles():
    import xarray as xr

    from pmctx.summarize import summary

    rng = np.random.default_rng(2)
    x = _ar1(rng, (3, 200, 6), phi=0.5)
    dims = ("chain", "draw", "e")
    table = summary(xr.Dataset({"q": (dims, x)}), prob=0.9)
    pooled, tail = x.reshape(-1, 6), (1 - 0.9) / 2
    np.testing.assert_array_equal(table["lower"], np.quantile(pooled, tail, axis=0))
    np.testing.assert_array_equal(table["upper"], np.quantile(pooled, 1 - tail, axis=0))
    expected = reference.element_diagnostics(x)
    for key in ("r_hat", "ess_bulk", "ess_tail"):
        np.testing.assert_allclose(table[key], expected[key], rtol=RTOL, atol=0)
