"""One compiled call per column pass of the augmented sampler.

Cosines, edge modes (categorical draws with the polynomial ``exp`` of
:mod:`pmctx.vonmises._numba_vector`), node vectors, FFBS over the vertical modes
(:mod:`pmctx.vonmises._numba_series`) and each node's von Mises mean and concentration, in
parallel blocks of rows and of chains; no NumPy temporaries between them. Only the caller's
``rng.vonmises`` stays serial (its stream is sequential). Same uniforms, same order, same draws
as the pass assembled in NumPy around the separate edge and chain kernels.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from pmctx.vonmises._numba_chains import inverse_cdf_pick
from pmctx.vonmises._numba_series import _BLOCK, _one_chain, _pairs
from pmctx.vonmises._numba_vector import PARALLEL_MIN_NODES, exp_nonpositive

__all__ = ["column_pass"]


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
        pick = inverse_cdf_pick(logits, n_modes, uniforms[i, j] * total)
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
    weights = np.empty(n_modes)
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
        _one_chain(node, pairs, uniforms[j], aux, vals, forward, weights)
        for i in range(length):
            x = node[i, 0] + ext[aux[i], 0] + ext[aux[i + 1], 0]
            y = node[i, 1] + ext[aux[i], 1] + ext[aux[i + 1], 1]
            conc[j, i] = math.hypot(x, y)
            mean[j, i] = math.atan2(y, x)


@numba.njit(cache=True)
def _pass_serial(o, field, ext, pairs, u_edge, u_chain, edges, mean, conc):
    kx, ky = pairs[2], pairs[3]
    # np.int64(0), not 0: a literal would compile each block function again for
    # Literal[int](0), beside the int64 signature _pass_parallel uses.
    first = np.int64(0)
    _edge_block(first, o.shape[0], o, kx, ky, u_edge, edges)
    _pass_block(first, o.shape[1], field, edges, ext, pairs, u_chain, mean, conc)


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
        Natural parameters of observations and node priors (any strides; copied to C order).
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
    # C order: the row pass hands in transposed views, and each layout would be another
    # compile of every kernel below; the copies cost about 1% of a pass.
    o = np.ascontiguousarray(o, dtype=np.float64)
    field = np.ascontiguousarray(field, dtype=np.float64)
    n_rows, n_cols = o.shape
    ext = np.ascontiguousarray(ext, dtype=np.float64)
    if n_cols == 1:
        u_edge = np.zeros((n_rows, 0))
    edges = np.empty((max(n_cols - 1, 0), n_rows), dtype=np.int64)
    mean, conc = np.empty((n_cols, n_rows)), np.empty((n_cols, n_rows))
    if parallel is None:
        parallel = o.size >= PARALLEL_MIN_NODES
    if parallel:
        with numba.parallel_chunksize(1):  # blocks handed out one at a time (cores may be busy)
            _pass_parallel(o, field, ext, _pairs(ext), u_edge, u_chain, edges, mean, conc)
    else:
        _pass_serial(o, field, ext, _pairs(ext), u_edge, u_chain, edges, mean, conc)
    return mean, conc
