"""Reference kernels of the augmented orientation-map sampler: exactness oracles for the default.

The compiled pass behind :func:`pmctx.vonmises.augmented.augmented_sweep` (the power-series
kernels, :mod:`pmctx.vonmises._numba_series` and :mod:`pmctx.vonmises._numba_series_pass`) must
give the same draws from the same random stream as two independent implementations kept here:

* ``"vector"``: pair terms by Cephes' Chebyshev ``i0e`` and a branch-free ``exp``
  (:func:`vector_chain_modes`, edge modes by :func:`pmctx.vonmises._numba_vector.edge_modes`);
* ``"table"``: ``log i0e`` interpolated in a table of SciPy's values, one ``exp`` per
  distinct pair (:func:`table_chain_modes`, :func:`table_edge_modes`).

:func:`augmented_sweep` runs either one with the pass assembled in NumPy (edge modes, node
vectors, chain modes, von Mises draws), drawing the uniforms in the order the default pass
draws them, so the maps agree to rounding.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from pmctx.vonmises import _numba_vector
from pmctx.vonmises._numba_chains import LOG_I0E_TABLE, _one_chain, inverse_cdf_pick
from pmctx.vonmises._numba_vector import (
    PARALLEL_MIN_NODES,
    _chbevl_low,
    exp_nonpositive,
    i0e_cheb,
)
from pmctx.vonmises.potentials import mode_vectors, sample_von_mises

#: The reference kernels :func:`augmented_sweep` can run.
KERNELS = ("vector", "table")

_LOG_2PI = math.log(2.0 * math.pi)


@numba.njit(cache=True, inline="always", fastmath=True)
def _pair_row(vx, vy, pair_x, pair_y, rad, val):
    """Fill ``val`` with ``i0e(r) exp(r - r_max)`` of every pair; returns ``r_max``.

    When all of a node's pairs lie below ``r = 8`` only the near series is evaluated; the
    loops stay branch-free either way.
    """
    n = pair_x.shape[0]
    r_max = 0.0
    for p in range(n):
        x = vx + pair_x[p]
        y = vy + pair_y[p]
        r = math.sqrt(x * x + y * y)
        rad[p] = r
        r_max = max(r_max, r)
    if r_max <= 8.0:
        for p in range(n):
            r = rad[p]
            val[p] = _chbevl_low(0.5 * r - 2.0) * exp_nonpositive(r - r_max)
    else:  # (a loop of the far series alone did not vectorise: slower than both)
        for p in range(n):
            r = rad[p]
            val[p] = i0e_cheb(r) * exp_nonpositive(r - r_max)
    return r_max


@numba.njit(cache=True, fastmath=True)
def _vector_one_chain(node_vec, pairs, uniforms, aux, mats, forward, rad, val, weights):
    """FFBS over the modes of one chain (linear space, as the table kernel); log evidence.

    ``pairs``: mode indices and vectors of the distinct pairs, then the single-mode vectors
    (see :func:`_pairs`).
    """
    pair_a, pair_b, pair_x, pair_y, ext_x, ext_y = pairs
    length = node_vec.shape[0]
    n_modes = ext_x.shape[0]
    null = n_modes
    if length == 1:
        r = math.sqrt(node_vec[0, 0] ** 2 + node_vec[0, 1] ** 2)
        return _LOG_2PI + math.log(i0e_cheb(r)) + r
    # First node: only the mode below varies (none above).
    r_max = _pair_row(node_vec[0, 0], node_vec[0, 1], ext_x, ext_y, rad, val)
    total = 0.0
    for b in range(n_modes):
        total += val[b]
    for b in range(n_modes):
        forward[0, b] = val[b] / total
    log_scale = r_max + math.log(total) + _LOG_2PI
    for i in range(1, length - 1):
        r_max = _pair_row(node_vec[i, 0], node_vec[i, 1], pair_x, pair_y, rad, val)
        for p in range(pair_a.shape[0]):
            mats[i, pair_a[p], pair_b[p]] = val[p]
            mats[i, pair_b[p], pair_a[p]] = val[p]
        for b in range(n_modes):
            weights[b] = 0.0
        for a in range(n_modes):
            f = forward[i - 1, a]
            for b in range(n_modes):
                weights[b] += f * mats[i, a, b]
        total = 0.0
        for b in range(n_modes):
            total += weights[b]
        for b in range(n_modes):
            forward[i, b] = weights[b] / total
        log_scale += r_max + math.log(total) + _LOG_2PI
    last = length - 1
    r_max = _pair_row(node_vec[last, 0], node_vec[last, 1], ext_x, ext_y, rad, val)
    total = 0.0
    for a in range(n_modes):
        weights[a] = forward[last - 1, a] * val[a]
        total += weights[a]
    log_evidence = log_scale + r_max + math.log(total) + _LOG_2PI
    aux[last + 1] = null
    aux[0] = null
    below = null
    for i in range(last, 0, -1):  # draw u_{i-1}, the mode above node i
        if i < last:
            total = 0.0
            for a in range(n_modes):
                weights[a] = forward[i - 1, a] * mats[i, a, below]
                total += weights[a]
        pick = inverse_cdf_pick(weights, n_modes, uniforms[i] * total)
        aux[i] = pick
        below = pick
    return log_evidence


@numba.njit(cache=True)
def _chains_serial(node_vec, pairs, uniforms, aux, log_evidence):
    n_chains, length, _ = node_vec.shape
    n_modes, n_pairs = pairs[4].shape[0], pairs[0].shape[0]
    mats = np.empty((length, n_modes, n_modes))
    forward = np.empty((max(length - 1, 1), n_modes))
    rad, val, weights = np.empty(n_pairs), np.empty(n_pairs), np.empty(n_modes)
    for chain in range(n_chains):
        log_evidence[chain] = _vector_one_chain(
            node_vec[chain], pairs, uniforms[chain], aux[chain], mats, forward, rad, val, weights
        )


@numba.njit(cache=True, parallel=True)
def _chains_parallel(node_vec, pairs, uniforms, aux, log_evidence):
    n_chains, length, _ = node_vec.shape
    n_modes, n_pairs = pairs[4].shape[0], pairs[0].shape[0]
    for chain in numba.prange(n_chains):
        mats = np.empty((length, n_modes, n_modes))
        forward = np.empty((max(length - 1, 1), n_modes))
        rad, val, weights = np.empty(n_pairs), np.empty(n_pairs), np.empty(n_modes)
        log_evidence[chain] = _vector_one_chain(
            node_vec[chain], pairs, uniforms[chain], aux[chain], mats, forward, rad, val, weights
        )


def _pairs(ext):
    n_modes = ext.shape[0] - 1
    a, b = np.triu_indices(n_modes)
    vectors = ext[a] + ext[b]
    return (
        a.astype(np.int64),
        b.astype(np.int64),
        np.ascontiguousarray(vectors[:, 0]),
        np.ascontiguousarray(vectors[:, 1]),
        np.ascontiguousarray(ext[:n_modes, 0]),
        np.ascontiguousarray(ext[:n_modes, 1]),
    )


def vector_chain_modes(node_vec, ext, uniforms, *, parallel=None):
    """Vertical modes of every chain and each chain's log evidence (vectorised kernel).

    Same arguments and result as :func:`table_chain_modes`
    without the table: ``node_vec`` ``(B, M, 2)``, ``ext`` ``(K + 1, 2)`` (``kappa r_k`` and a
    zero row), ``uniforms`` ``(B, M)``. ``parallel=None`` uses threads from
    :data:`PARALLEL_MIN_NODES` nodes on.
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
    kernel(node_vec, _pairs(ext), uniforms, aux, log_evidence)
    return aux, log_evidence


@numba.njit(cache=True, parallel=True)
def table_chain_modes(node_vec, ext, uniforms, table):
    """Sample the vertical modes of every chain; returns ``(aux, log_evidence)``.

    ``node_vec`` ``(B, M, 2)``: natural vector of each node's off-chain factor; ``ext``
    ``(K + 1, 2)``: ``kappa r_k`` plus a zero row (index K = no neighbour); ``uniforms``
    ``(B, M)``; ``table``: :data:`~pmctx.vonmises._numba_chains.LOG_I0E_TABLE`.
    ``aux[:, i]`` and ``aux[:, i + 1]`` are the modes above and below node ``i``. Chains run
    in parallel threads; the result does not depend on the number of threads (the uniforms are
    drawn by the caller).
    """
    n_chains, length, _ = node_vec.shape
    n_modes = ext.shape[0] - 1
    aux = np.full((n_chains, length + 1), n_modes, dtype=np.int64)
    log_evidence = np.empty(n_chains)
    for chain in numba.prange(n_chains):
        mats = np.empty((length, n_modes, n_modes))
        forward = np.empty((max(length - 1, 1), n_modes))
        weights = np.empty(n_modes)
        log_evidence[chain] = _one_chain(
            node_vec[chain], ext, uniforms[chain], table, aux[chain], mats, forward, weights
        )
    return aux, log_evidence


@numba.njit(cache=True, parallel=True)
def table_edge_modes(cos_a, sin_a, cos_b, sin_b, kappa_modes, uniforms):
    """Mode of every edge: ``P(k) ∝ exp(kappa r_k . (o_a + o_b))`` by inverse CDF.

    Inputs are 2-D arrays of the endpoints' ``cos``/``sin`` (same shape), ``kappa_modes``
    ``(K, 2)`` and one uniform per edge; returns the mode indices.
    """
    n_rows, n_cols = cos_a.shape
    n_modes = kappa_modes.shape[0]
    out = np.empty((n_rows, n_cols), dtype=np.int64)
    for i in numba.prange(n_rows):
        logits = np.empty(n_modes)
        for j in range(n_cols):
            x = cos_a[i, j] + cos_b[i, j]
            y = sin_a[i, j] + sin_b[i, j]
            peak = -np.inf
            for k in range(n_modes):
                logits[k] = kappa_modes[k, 0] * x + kappa_modes[k, 1] * y
                peak = max(peak, logits[k])
            total = 0.0
            for k in range(n_modes):
                logits[k] = math.exp(logits[k] - peak)
                total += logits[k]
            pick = inverse_cdf_pick(logits, n_modes, uniforms[i, j] * total)
            out[i, j] = pick
    return out


def edge_modes(cos_a, sin_a, cos_b, sin_b, kappa_modes, uniforms, kernel):
    """Mode of every edge by the ``kernel``'s edge kernel (same uniforms, same picks)."""
    if kernel == "vector":
        return _numba_vector.edge_modes(cos_a, sin_a, cos_b, sin_b, kappa_modes, uniforms)
    return table_edge_modes(cos_a, sin_a, cos_b, sin_b, kappa_modes, uniforms)


def chain_modes(node_vec, ext, uniforms, kernel):
    """Vertical modes and log evidence of every chain by the ``kernel``'s FFBS."""
    if kernel == "vector":
        return vector_chain_modes(node_vec, ext, uniforms)
    return table_chain_modes(node_vec, ext, uniforms, LOG_I0E_TABLE)


def single_term_chains(node_vec, kappa: float, modes, rng, *, kernel="vector"):
    """FFBS draw of single-term chains ``(B, M, 2)``: ``(angles (B, M), log_evidence (B,))``."""
    ext = np.concatenate([kappa * modes, np.zeros((1, 2))], axis=0)
    uniforms = rng.random(node_vec.shape[:2])
    aux, log_evidence = chain_modes(node_vec, ext, uniforms, kernel)
    natural = node_vec + ext[aux[:, :-1]] + ext[aux[:, 1:]]
    return sample_von_mises(natural, rng), log_evidence


def _column_pass(o, field, kappa: float, modes, rng, kernel):
    """Sample horizontal modes, then all columns of ``o`` as independent chains."""
    n_cols = o.shape[1]
    node_vec = np.array(field, dtype=np.float64)
    if n_cols > 1:
        cos_o, sin_o = np.cos(o), np.sin(o)
        uniforms = rng.random((o.shape[0], n_cols - 1))
        edge = edge_modes(
            cos_o[:, :-1], sin_o[:, :-1], cos_o[:, 1:], sin_o[:, 1:], kappa * modes, uniforms,
            kernel,
        )  # fmt: skip
        pull = kappa * modes[edge]  # (M, N-1, 2)
        node_vec[:, 1:] += pull
        node_vec[:, :-1] += pull
    chains = np.ascontiguousarray(node_vec.transpose(1, 0, 2))
    angles, _ = single_term_chains(chains, kappa, modes, rng, kernel=kernel)
    return angles.T


def augmented_sweep(
    o, field, kappa: float, rank: int, rng, *, direction: str = "both", kernel: str = "vector"
):
    """One augmented sweep by a reference kernel; same arguments as the package's sweep.

    ``kernel`` is one of :data:`KERNELS`; ``direction`` as in
    :func:`pmctx.vonmises.augmented.augmented_sweep`.
    """
    if direction not in ("both", "columns", "rows"):
        raise ValueError(f"direction must be 'both', 'columns' or 'rows', got {direction!r}.")
    if kernel not in KERNELS:
        raise ValueError(f"kernel must be one of {KERNELS}, got {kernel!r}.")
    modes = mode_vectors(rank)
    o = np.asarray(o, dtype=np.float64)
    if direction in ("both", "columns"):
        o = _column_pass(o, field, kappa, modes, rng, kernel)
    if direction in ("both", "rows"):
        field_t = np.asarray(field).transpose(1, 0, 2)
        o = _column_pass(o.T, field_t, kappa, modes, rng, kernel).T
    return np.ascontiguousarray(o)
