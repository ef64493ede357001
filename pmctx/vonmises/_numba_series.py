"""Compiled column pass of the augmented sampler by power series (the default since session 13).

Same law, same inputs and the same random stream as :mod:`pmctx.vonmises._numba_vector` (the
uniforms are drawn by the caller), with less work per node:

* **no** ``i0e``, ``exp`` or square root per mode pair: a node's pair terms are
  ``I0(r) = sum_k t^k / (k!)^2`` with ``t = r^2 / 4 = |v + kappa r_a + kappa r_b|^2 / 4``,
  a polynomial in ``t`` with positive coefficients (no cancellation: relative rounding
  error below ``2 n`` ulp for ``n`` terms). The number of terms is a compile-time constant
  of a band of the node's largest ``t`` (:data:`BANDS`, truncation below ``2^-56`` of the
  sum at the band's edge), so the Horner loop unrolls and the loop over pairs vectorises.
  Forward filtering normalises per node, so the terms need no common factor ``e^{-r_max}``;
  nodes beyond the last band (``r > 64``) use the vector kernel's ``i0e(r) e^{r - r_max}``;
* the ``(R + 1)(R + 2) / 2`` terms are kept packed (upper triangle, row-major) and the
  forward step reads them by rows, so there is no symmetric ``(R + 1)^2`` matrix to fill;
* one compiled call per pass: cosines, edge modes (polynomial ``exp``), node vectors, FFBS
  and each node's von Mises mean and concentration, in blocks of chains with scratch
  allocated once per block. Only the caller's ``rng.vonmises`` stays serial.

The result does not depend on the number of threads.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numba
import numpy as np

from pmctx.vonmises._numba_vector import PARALLEL_MIN_NODES, exp_nonpositive, i0e_cheb

__all__ = ["BANDS", "chain_modes", "column_pass", "i0_series_terms"]

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
    """``1 / (k!)^2`` for ``k = n..0`` (highest first), correctly rounded."""
    return np.array([float(Fraction(1, math.factorial(k) ** 2)) for k in range(n_terms, -1, -1)])


#: Radius bands ``(r_limit, terms)``: a node whose largest pair radius is below ``r_limit``
#: evaluates every pair term with ``terms + 1`` coefficients.
BANDS = tuple((r, i0_series_terms(r)) for r in (8.0, 16.0, 24.0, 40.0, 64.0))
_T0, _T1, _T2, _T3, _T4 = (r * r / 4.0 for r, _ in BANDS)
_C0, _C1, _C2, _C3, _C4 = (_coefficients(n) for _, n in BANDS)
_N0, _N1, _N2, _N3, _N4 = (n + 1 for _, n in BANDS)


@numba.njit(cache=True, inline="always", fastmath=True)
def _series0(t):
    acc = _C0[0]
    for j in range(1, _N0):
        acc = acc * t + _C0[j]
    return acc


@numba.njit(cache=True, inline="always", fastmath=True)
def _series1(t):
    acc = _C1[0]
    for j in range(1, _N1):
        acc = acc * t + _C1[j]
    return acc


@numba.njit(cache=True, inline="always", fastmath=True)
def _series2(t):
    acc = _C2[0]
    for j in range(1, _N2):
        acc = acc * t + _C2[j]
    return acc


@numba.njit(cache=True, inline="always", fastmath=True)
def _series3(t):
    acc = _C3[0]
    for j in range(1, _N3):
        acc = acc * t + _C3[j]
    return acc


@numba.njit(cache=True, inline="always", fastmath=True)
def _series4(t):
    acc = _C4[0]
    for j in range(1, _N4):
        acc = acc * t + _C4[j]
    return acc


@numba.njit(cache=True, fastmath=True)
def _node_terms(vx, vy, px, py, t, out):
    """``out[p] = I0(|v + s_p|) e^{-c}``; returns the log factor ``c`` (0 inside the bands)."""
    n = px.shape[0]
    t_max = 0.0
    for p in range(n):
        x = vx + px[p]
        y = vy + py[p]
        tp = 0.25 * (x * x + y * y)
        t[p] = tp
        t_max = max(t_max, tp)
    if t_max <= _T0:
        for p in range(n):
            out[p] = _series0(t[p])
    elif t_max <= _T1:
        for p in range(n):
            out[p] = _series1(t[p])
    elif t_max <= _T2:
        for p in range(n):
            out[p] = _series2(t[p])
    elif t_max <= _T3:
        for p in range(n):
            out[p] = _series3(t[p])
    elif t_max <= _T4:
        for p in range(n):
            out[p] = _series4(t[p])
    else:
        r_max = 2.0 * math.sqrt(t_max)
        for p in range(n):
            r = 2.0 * math.sqrt(t[p])
            out[p] = i0e_cheb(r) * exp_nonpositive(r - r_max)
        return r_max
    return 0.0


@numba.njit(cache=True)
def _one_chain(node, pairs, uniforms, aux, vals, forward, t, weights):
    """FFBS over the modes of one chain from packed pair terms; returns the log evidence.

    ``pairs``: ``(pair_x, pair_y, ext_x, ext_y, row_start, index)``; ``index[a * K + b]`` is
    the packed position of pair ``(min(a, b), max(a, b))``.
    """
    pair_x, pair_y, ext_x, ext_y, row_start, index = pairs
    length = node.shape[0]
    n_modes = ext_x.shape[0]
    null = n_modes
    if length == 1:
        r = math.sqrt(node[0, 0] ** 2 + node[0, 1] ** 2)
        return _LOG_2PI + math.log(i0e_cheb(r)) + r
    val = vals[0]
    log_scale = _node_terms(node[0, 0], node[0, 1], ext_x, ext_y, t, val)
    total = 0.0
    for b in range(n_modes):
        total += val[b]
    for b in range(n_modes):
        forward[0, b] = val[b] / total
    log_scale += math.log(total) + _LOG_2PI
    for i in range(1, length - 1):
        val = vals[i]
        log_scale += _node_terms(node[i, 0], node[i, 1], pair_x, pair_y, t, val)
        for b in range(n_modes):
            weights[b] = 0.0
        for a in range(n_modes):
            # packed row a holds (a, b) for b >= a: an axpy into weights[a:] and a dot
            start = row_start[a] - a
            fa = forward[i - 1, a]
            acc = 0.0
            for b in range(a + 1, n_modes):
                weights[b] += fa * val[start + b]
                acc += forward[i - 1, b] * val[start + b]
            weights[a] += fa * val[start + a] + acc
        total = 0.0
        for b in range(n_modes):
            total += weights[b]
        for b in range(n_modes):
            forward[i, b] = weights[b] / total
        log_scale += math.log(total) + _LOG_2PI
    last = length - 1
    val = vals[last]
    log_scale += _node_terms(node[last, 0], node[last, 1], ext_x, ext_y, t, val)
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
        target = uniforms[i] * total
        cumulative = 0.0
        pick = n_modes - 1
        for a in range(n_modes):
            cumulative += weights[a]
            if cumulative >= target:
                pick = a
                break
        aux[i] = pick
        below = pick
    return log_evidence


def _pairs(ext):
    n_modes = ext.shape[0] - 1
    a, b = np.triu_indices(n_modes)
    vectors = ext[a] + ext[b]
    index = np.empty((n_modes, n_modes), dtype=np.int64)
    index[a, b] = np.arange(a.size)
    index[b, a] = np.arange(a.size)
    row_start = np.concatenate([[0], np.cumsum(n_modes - np.arange(n_modes))[:-1]])
    return (
        np.ascontiguousarray(vectors[:, 0]),
        np.ascontiguousarray(vectors[:, 1]),
        np.ascontiguousarray(ext[:n_modes, 0]),
        np.ascontiguousarray(ext[:n_modes, 1]),
        row_start.astype(np.int64),
        index.ravel(),
    )


@numba.njit(cache=True)
def _chain_block(lo, hi, node_vec, pairs, uniforms, aux, log_evidence):
    length = node_vec.shape[1]
    n_modes, n_pairs = pairs[2].shape[0], pairs[0].shape[0]
    vals = np.empty((length, n_pairs))
    forward = np.empty((max(length - 1, 1), n_modes))
    t, weights = np.empty(n_pairs), np.empty(n_modes)
    for chain in range(lo, hi):
        log_evidence[chain] = _one_chain(
            node_vec[chain], pairs, uniforms[chain], aux[chain], vals, forward, t, weights
        )


@numba.njit(cache=True)
def _chains_serial(node_vec, pairs, uniforms, aux, log_evidence):
    _chain_block(0, node_vec.shape[0], node_vec, pairs, uniforms, aux, log_evidence)


@numba.njit(cache=True, parallel=True)
def _chains_parallel(node_vec, pairs, uniforms, aux, log_evidence):
    n_chains = node_vec.shape[0]
    for block in numba.prange((n_chains + _BLOCK - 1) // _BLOCK):
        lo = block * _BLOCK
        hi = min(lo + _BLOCK, n_chains)
        _chain_block(lo, hi, node_vec, pairs, uniforms, aux, log_evidence)


def chain_modes(node_vec, ext, uniforms, *, parallel=None):
    """Vertical modes of every chain and each chain's log evidence (power-series kernel).

    Same arguments and result as :func:`pmctx.vonmises._numba_vector.chain_modes`.

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


@numba.njit(cache=True, fastmath=True)
def _edge_row(i, o, kx, ky, uniforms, edges, cos_row, sin_row, logits):
    """Modes of the edges of row ``i`` of ``o``, written chain-major: ``edges[j, i]``."""
    n_cols = o.shape[1]
    n_modes = kx.shape[0]
    for j in range(n_cols):
        cos_row[j] = math.cos(o[i, j])
        sin_row[j] = math.sin(o[i, j])
    for j in range(n_cols - 1):
        x = cos_row[j] + cos_row[j + 1]
        y = sin_row[j] + sin_row[j + 1]
        peak = -np.inf
        for k in range(n_modes):
            logits[k] = kx[k] * x + ky[k] * y
            peak = max(peak, logits[k])
        total = 0.0
        for k in range(n_modes):
            logits[k] = exp_nonpositive(logits[k] - peak)
            total += logits[k]
        target = uniforms[i, j] * total
        cumulative = 0.0
        pick = n_modes - 1
        for k in range(n_modes):
            cumulative += logits[k]
            if cumulative >= target:
                pick = k
                break
        edges[j, i] = pick


@numba.njit(cache=True)
def _edge_block(lo, hi, o, kx, ky, uniforms, edges):
    cos_row, sin_row = np.empty(o.shape[1]), np.empty(o.shape[1])
    logits = np.empty(kx.shape[0])
    for i in range(lo, hi):
        _edge_row(i, o, kx, ky, uniforms, edges, cos_row, sin_row, logits)


@numba.njit(cache=True)
def _pass_block(lo, hi, field, edges, ext, pairs, uniforms, mean, conc):
    """FFBS of chains ``lo..hi-1`` (columns of ``field``), then each node's von Mises law."""
    length, n_chains = field.shape[0], field.shape[1]
    n_modes, n_pairs = pairs[2].shape[0], pairs[0].shape[0]
    vals = np.empty((length, n_pairs))
    forward = np.empty((max(length - 1, 1), n_modes))
    t, weights = np.empty(n_pairs), np.empty(n_modes)
    node = np.empty((length, 2))
    aux = np.empty(length + 1, dtype=np.int64)
    for j in range(lo, hi):
        aux[:] = n_modes  # none (a chain of one node has no vertical modes)
        for i in range(length):  # same additions, same order as the NumPy assembly
            x = field[i, j, 0]
            y = field[i, j, 1]
            if j > 0:
                x += ext[edges[j - 1, i], 0]
                y += ext[edges[j - 1, i], 1]
            if j < n_chains - 1:
                x += ext[edges[j, i], 0]
                y += ext[edges[j, i], 1]
            node[i, 0] = x
            node[i, 1] = y
        _one_chain(node, pairs, uniforms[j], aux, vals, forward, t, weights)
        for i in range(length):
            x = node[i, 0] + ext[aux[i], 0] + ext[aux[i + 1], 0]
            y = node[i, 1] + ext[aux[i], 1] + ext[aux[i + 1], 1]
            conc[j, i] = math.hypot(x, y)
            mean[j, i] = math.atan2(y, x)


@numba.njit(cache=True)
def _pass_serial(o, field, ext, pairs, u_edge, u_chain, edges, mean, conc):
    kx, ky = pairs[2], pairs[3]
    _edge_block(0, o.shape[0], o, kx, ky, u_edge, edges)
    _pass_block(0, o.shape[1], field, edges, ext, pairs, u_chain, mean, conc)


@numba.njit(cache=True, parallel=True)
def _pass_parallel(o, field, ext, pairs, u_edge, u_chain, edges, mean, conc):
    kx, ky = pairs[2], pairs[3]
    n_rows, n_cols = o.shape
    for block in numba.prange((n_rows + 4 * _BLOCK - 1) // (4 * _BLOCK)):
        _edge_block(4 * _BLOCK * block, min(4 * _BLOCK * (block + 1), n_rows), o, kx, ky,
                    u_edge, edges)  # fmt: skip
    for block in numba.prange((n_cols + _BLOCK - 1) // _BLOCK):
        lo = block * _BLOCK
        _pass_block(lo, min(lo + _BLOCK, n_cols), field, edges, ext, pairs, u_chain, mean, conc)


def column_pass(o, field, ext, u_edge, u_chain, *, parallel=None):
    """Edge modes, column FFBS and each node's von Mises parameters in one compiled call.

    The same computation as the NumPy column pass of :mod:`pmctx.vonmises.augmented` with the
    vector kernel (same uniforms, same draws), up to the final ``rng.vonmises``.

    Parameters
    ----------
    o : numpy.ndarray (M, N)
        Current doubled angles.
    field : numpy.ndarray (M, N, 2)
        Natural parameters of observations and node priors (any strides).
    ext : numpy.ndarray (K + 1, 2)
        ``kappa r_k`` and a zero row.
    u_edge : numpy.ndarray (M, N - 1)
        One uniform per horizontal edge.
    u_chain : numpy.ndarray (N, M)
        One uniform per node, chain-major (backward sampling of the vertical modes).
    parallel : bool or None, default None
        Threads; ``None`` uses them from :data:`PARALLEL_MIN_NODES` nodes on.

    Returns
    -------
    mean, concentration : numpy.ndarray (N, M)
        Chain-major von Mises parameters of every node's conditional.

    Examples
    --------
    >>> import numpy as np
    >>> ext = np.array([[2.0, 0.0], [-2.0, 0.0], [0.0, 0.0]])
    >>> rng = np.random.default_rng(0)
    >>> mean, conc = column_pass(
    ...     np.zeros((3, 2)), np.zeros((3, 2, 2)), ext, rng.random((3, 1)), rng.random((2, 3))
    ... )
    >>> mean.shape
    (2, 3)
    """
    o = np.asarray(o, dtype=np.float64)
    field = np.asarray(field, dtype=np.float64)
    n_rows, n_cols = o.shape
    ext = np.ascontiguousarray(ext, dtype=np.float64)
    if n_cols == 1:
        u_edge = np.zeros((n_rows, 0))
    edges = np.empty((max(n_cols - 1, 0), n_rows), dtype=np.int64)
    mean, conc = np.empty((n_cols, n_rows)), np.empty((n_cols, n_rows))
    if parallel is None:
        parallel = o.size >= PARALLEL_MIN_NODES
    kernel = _pass_parallel if parallel else _pass_serial
    kernel(o, field, ext, _pairs(ext), u_edge, u_chain, edges, mean, conc)
    return mean, conc
