"""Compiled FFBS over the vertical modes of the augmented sampler, pair terms by power series.

The uniforms are drawn by the caller, so the draws are a function of them alone (the tests
compare them with two independent reference kernels given the same uniforms). Per node:

* **no** ``i0e``, ``exp`` or square root per mode pair: a node's pair terms are
  ``I0(r) = sum_k t^k / (k!)^2`` with ``t = r^2 / 4 = |v + kappa r_a + kappa r_b|^2 / 4``,
  a polynomial in ``t`` with positive coefficients (no cancellation: relative rounding
  error below ``2 n`` ulp for ``n`` terms). The number of terms is a compile-time constant
  of a band of radii that holds all of the node's pairs (:data:`BANDS`, truncation below
  ``2^-56`` of the sum at the band's edge), so the recurrences unroll and the loop over pairs
  vectorises.
  Forward filtering normalises per node, so the terms need no common factor ``e^{-r_max}``;
  nodes beyond the last band (``r > 64``) use ``i0e(r) e^{r - r_max}`` (Cephes' Chebyshev
  ``i0e`` and a polynomial ``exp``, :mod:`pmctx.vonmises._numba_vector`);
* the ``(R + 1)(R + 2) / 2`` terms are kept packed; the forward step is one independent dot
  product per mode (read through an index table, no symmetric ``(R + 1)^2`` matrix to
  fill), so its dependency chains are short;
* one compiled call per pass (:mod:`pmctx.vonmises._numba_series_pass`); chains run in
  blocks with scratch allocated once per block.

The result does not depend on the number of threads.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction

import numba
import numpy as np

from pmctx.vonmises._numba_chains import inverse_cdf_pick
from pmctx.vonmises._numba_vector import PARALLEL_MIN_NODES, exp_nonpositive, i0e_cheb

__all__ = ["BANDS", "chain_modes", "i0_series_terms"]

_LOG_2PI = math.log(2.0 * math.pi)
_BLOCK = 8  # chains per block (scratch is allocated once per block)


def i0_series_terms(r_limit: float) -> int:
    """Terms ``n`` of ``sum_{k <= n} t^k / (k!)^2`` whose tail is below ``2^-56`` at ``r_limit``.

    The relative tail grows with ``t``, so ``n`` suffices for every ``r <= r_limit``.

    Parameters
    ----------
    r_limit : float
        Largest radius ``r`` (``t = r^2 / 4``).

    Returns
    -------
    int
        The highest power ``n``.

    Examples
    --------
    >>> i0_series_terms(8.0)
    21
    """
    t = Fraction(r_limit) ** 2 / 4
    terms = [Fraction(1)]
    while len(terms) < 400:
        k = len(terms)
        terms.append(terms[-1] * t / (k * k))
        if k > t**0.5 and terms[-1] * 2**57 < terms[0]:
            break
    total = sum(terms)
    tail = Fraction(0)
    for n in range(len(terms) - 1, -1, -1):
        if tail + terms[n] >= total / 2**56:
            return n
        tail += terms[n]
    return 0  # pragma: no cover


def _coefficients(n_terms):
    """``1 / (k!)^2``, ``k = 0..n``, correctly rounded, split by ``k mod 4`` (rows, highest
    power first, zero-padded): ``sum_k c_k t^k = Q_0(t^4) + t Q_1(t^4) + t^2 (Q_2 + t Q_3)``."""
    width = n_terms // 4 + 1
    table = np.zeros((4, width))
    for k in range(n_terms + 1):
        table[k % 4, width - 1 - k // 4] = float(Fraction(1, math.factorial(k) ** 2))
    return table


#: Radius bands ``(r_limit, terms)``: a node whose pair radii are all below ``r_limit`` (by
#: the bound ``|v| + max_p |s_p|``) evaluates every pair term with ``terms + 1`` coefficients.
BANDS = tuple((r, i0_series_terms(r)) for r in (8.0, 12.0, 16.0, 20.0, 24.0, 32.0, 48.0, 64.0))
_R0, _R1, _R2, _R3, _R4, _R5, _R6, _R7 = (r for r, _ in BANDS)
_C0, _C1, _C2, _C3, _C4, _C5, _C6, _C7 = (_coefficients(n) for _, n in BANDS)
_N0, _N1, _N2, _N3, _N4, _N5, _N6, _N7 = (n // 4 + 1 for _, n in BANDS)


@numba.njit(cache=True, inline="always", fastmath=True)
def _fill(vx, vy, px, py, out, coef, width):
    """``out[p] = I0(|v + s_p|)``: four interleaved Horner recurrences in ``u = t^4`` (a
    quarter of the dependency chain of one recurrence in ``t``; every coefficient is positive,
    so there is no cancellation either way). ``coef`` and ``width`` are frozen globals, so the
    recurrences unroll and the loop over pairs vectorises."""
    for p in range(px.shape[0]):
        x = vx + px[p]
        y = vy + py[p]
        t = 0.25 * (x * x + y * y)
        t2 = t * t
        u = t2 * t2
        a, b, c, d = coef[0, 0], coef[1, 0], coef[2, 0], coef[3, 0]
        for j in range(1, width):
            a = a * u + coef[0, j]
            b = b * u + coef[1, j]
            c = c * u + coef[2, j]
            d = d * u + coef[3, j]
        out[p] = (a + t * b) + t2 * (c + t * d)


@numba.njit(cache=True, fastmath=True)
def _node_terms(vx, vy, px, py, reach, out):
    """``out[p] = I0(|v + s_p|) e^{-c}``; returns the log factor ``c`` (0 inside the bands).

    ``reach`` is ``max_p |s_p|``, so ``|v| + reach`` bounds every pair radius.
    """
    bound = math.sqrt(vx * vx + vy * vy) + reach
    if bound <= _R0:
        _fill(vx, vy, px, py, out, _C0, _N0)
    elif bound <= _R1:
        _fill(vx, vy, px, py, out, _C1, _N1)
    elif bound <= _R2:
        _fill(vx, vy, px, py, out, _C2, _N2)
    elif bound <= _R3:
        _fill(vx, vy, px, py, out, _C3, _N3)
    elif bound <= _R4:
        _fill(vx, vy, px, py, out, _C4, _N4)
    elif bound <= _R5:
        _fill(vx, vy, px, py, out, _C5, _N5)
    elif bound <= _R6:
        _fill(vx, vy, px, py, out, _C6, _N6)
    elif bound <= _R7:
        _fill(vx, vy, px, py, out, _C7, _N7)
    else:
        r_max = 0.0
        for p in range(px.shape[0]):
            x = vx + px[p]
            y = vy + py[p]
            out[p] = math.sqrt(x * x + y * y)
            r_max = max(r_max, out[p])
        for p in range(px.shape[0]):
            out[p] = i0e_cheb(out[p]) * exp_nonpositive(out[p] - r_max)
        return r_max
    return 0.0


@numba.njit(cache=True, fastmath=True)
def _one_chain(node, pairs, uniforms, aux, vals, forward, weights):
    """FFBS over the modes of one chain from packed pair terms; returns the log evidence.

    ``pairs``: ``(pair_x, pair_y, ext_x, ext_y, index, reach)``: the distinct pairs ``{a, b}``
    packed; ``index[a * K + b]`` is the packed position of the pair ``{a, b}``; ``reach``: the
    longest pair and mode vector.
    """
    pair_x, pair_y, ext_x, ext_y, index, reach = pairs
    length = node.shape[0]
    n_modes = ext_x.shape[0]
    null = n_modes
    if length == 1:
        r = math.sqrt(node[0, 0] ** 2 + node[0, 1] ** 2)
        return _LOG_2PI + math.log(i0e_cheb(r)) + r
    val = vals[0]
    log_scale = _node_terms(node[0, 0], node[0, 1], ext_x, ext_y, reach[1], val)
    total = 0.0
    for b in range(n_modes):
        total += val[b]
    for b in range(n_modes):
        forward[0, b] = val[b] / total
    log_scale += math.log(total) + _LOG_2PI
    for i in range(1, length - 1):
        val = vals[i]
        log_scale += _node_terms(node[i, 0], node[i, 1], pair_x, pair_y, reach[0], val)
        f = forward[i - 1]
        for b in range(n_modes):  # independent dot products: short dependency chains
            base = b * n_modes
            acc = 0.0
            for a in range(n_modes):
                acc += f[a] * val[index[base + a]]
            weights[b] = acc
        total = 0.0
        for b in range(n_modes):
            total += weights[b]
        for b in range(n_modes):
            forward[i, b] = weights[b] / total
        log_scale += math.log(total) + _LOG_2PI
    last = length - 1
    val = vals[last]
    log_scale += _node_terms(node[last, 0], node[last, 1], ext_x, ext_y, reach[1], val)
    total = 0.0
    for a in range(n_modes):
        weights[a] = forward[last - 1, a] * val[a]
        total += weights[a]
    log_evidence = log_scale + math.log(total) + _LOG_2PI
    aux[last + 1] = null
    aux[0] = null
    below = null
    for i in range(last, 0, -1):  # draw u_{i-1}, the mode above node i
        if i < last:
            total = 0.0
            for a in range(n_modes):
                weights[a] = forward[i - 1, a] * vals[i, index[a * n_modes + below]]
                total += weights[a]
        pick = inverse_cdf_pick(weights, n_modes, uniforms[i] * total)
        aux[i] = pick
        below = pick
    return log_evidence


def _pairs(ext):
    """The pair tables of ``ext`` (shape ``(K + 1, 2)``), cached.

    A fixed kappa and rank give the same tables on every pass, and building them
    (``triu_indices``, fancy indexing) cost about half as much as a 24 x 24 column pass's
    compiled work. The kernels only read them.
    """
    ext = np.ascontiguousarray(ext, dtype=np.float64)
    return _cached_pairs(ext.tobytes(), ext.shape[0])


# Small: a sampled kappa changes ext on every sweep. lru_cache is thread-safe (Dask threads).
@functools.lru_cache(maxsize=8)
def _cached_pairs(ext_bytes: bytes, n_rows: int):
    return _build_pairs(np.frombuffer(ext_bytes, dtype=np.float64).reshape(n_rows, 2).copy())


def _build_pairs(ext):
    n_modes = ext.shape[0] - 1
    a, b = np.triu_indices(n_modes)
    vectors = ext[a] + ext[b]
    index = np.empty((n_modes, n_modes), dtype=np.int64)
    index[a, b] = np.arange(a.size)
    index[b, a] = np.arange(a.size)
    return (
        np.ascontiguousarray(vectors[:, 0]),
        np.ascontiguousarray(vectors[:, 1]),
        np.ascontiguousarray(ext[:n_modes, 0]),
        np.ascontiguousarray(ext[:n_modes, 1]),
        index.ravel(),
        np.array([np.hypot(*vectors.T).max(), np.hypot(*ext.T).max()]),
    )


@numba.njit(cache=True)
def _chain_block(lo, hi, node_vec, pairs, uniforms, aux, log_evidence):
    length = node_vec.shape[1]
    n_modes, n_pairs = pairs[2].shape[0], pairs[0].shape[0]
    vals = np.empty((length, n_pairs))
    forward = np.empty((max(length - 1, 1), n_modes))
    weights = np.empty(n_modes)
    for chain in range(lo, hi):
        log_evidence[chain] = _one_chain(
            node_vec[chain], pairs, uniforms[chain], aux[chain], vals, forward, weights
        )


@numba.njit(cache=True)
def _chains_serial(node_vec, pairs, uniforms, aux, log_evidence):
    # np.int64(0), not 0: a literal argument would compile _chain_block a second time, for
    # Literal[int](0), beside the int64 signature _chains_parallel uses.
    _chain_block(np.int64(0), node_vec.shape[0], node_vec, pairs, uniforms, aux, log_evidence)


@numba.njit(cache=True, parallel=True)
def _chains_parallel(node_vec, pairs, uniforms, aux, log_evidence):
    n_chains = node_vec.shape[0]
    for block in numba.prange((n_chains + _BLOCK - 1) // _BLOCK):
        lo = block * _BLOCK
        hi = min(lo + _BLOCK, n_chains)
        _chain_block(lo, hi, node_vec, pairs, uniforms, aux, log_evidence)


def chain_modes(node_vec, ext, uniforms, *, parallel=None):
    """Vertical modes of every chain and each chain's log evidence (power-series kernel).

    ``aux[:, i]`` and ``aux[:, i + 1]`` are the modes above and below node ``i``; the result
    does not depend on the number of threads.

    Parameters
    ----------
    node_vec : numpy.ndarray (B, M, 2)
        Natural vector of each node's off-chain factor.
    ext : numpy.ndarray (K + 1, 2)
        ``kappa r_k`` and a zero row (no neighbour).
    uniforms : numpy.ndarray (B, M)
        One uniform per node (backward sampling).
    parallel : bool or None, default None
        Threads; ``None`` uses them from :data:`PARALLEL_MIN_NODES` nodes on.

    Returns
    -------
    aux : numpy.ndarray of int (B, M + 1)
        Modes above node ``i`` (``aux[:, i]``) and below it (``aux[:, i + 1]``).
    log_evidence : numpy.ndarray (B,)
        Log normaliser of each chain.

    Examples
    --------
    >>> import numpy as np
    >>> ext = np.array([[2.0, 0.0], [-2.0, 0.0], [0.0, 0.0]])
    >>> aux, log_ev = chain_modes(np.zeros((1, 3, 2)), ext, np.full((1, 3), 0.5))
    >>> aux.shape, log_ev.shape
    ((1, 4), (1,))
    """
    node_vec = np.ascontiguousarray(node_vec, dtype=np.float64)
    n_chains, length, _ = node_vec.shape
    n_modes = ext.shape[0] - 1
    aux = np.full((n_chains, length + 1), n_modes, dtype=np.int64)
    log_evidence = np.empty(n_chains)
    if parallel is None:
        parallel = n_chains * length >= PARALLEL_MIN_NODES
    kernel = _chains_parallel if parallel else _chains_serial
    ext = np.ascontiguousarray(ext, dtype=np.float64)
    uniforms = np.ascontiguousarray(uniforms, dtype=np.float64)
    kernel(node_vec, _pairs(ext), uniforms, aux, log_evidence)
    return aux, log_evidence
