"""Compiled kernels for ONE chain (the chain smoother), without thread start-up costs.

The map samplers run many chains in parallel threads; for the smoother's single chain,
starting the thread pool costs far more than the work, so these serial kernels call the
per-chain FFBS, :func:`pmctx.vonmises._numba_chains._one_chain`, directly.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from pmctx.vonmises._numba_chains import _one_chain, log_i0e
from pmctx.vonmises.potentials import LOG_2PI

__all__ = ["forward_log_evidence", "single_chain_modes"]


@numba.njit(cache=True)
def single_chain_modes(node_vec, ext, uniforms, table):
    """Vertical modes and log evidence of one chain by FFBS (serial).

    ``node_vec`` ``(M, 2)``, ``uniforms`` ``(M,)``; returns ``(aux (M + 1,), log_evidence)``.
    """
    length = node_vec.shape[0]
    n_modes = ext.shape[0] - 1
    aux = np.full(length + 1, n_modes, dtype=np.int64)
    mats = np.empty((length, n_modes, n_modes))
    forward = np.empty((max(length - 1, 1), n_modes))
    weights = np.empty(n_modes)
    log_evidence = _one_chain(node_vec, ext, uniforms, table, aux, mats, forward, weights)
    return aux, log_evidence


LOG_2PI_NB = LOG_2PI  # a module global: numba freezes it at compile time


@numba.njit(cache=True)
def forward_log_evidence(node_vec, ext, table):
    """Forward pass over the modes of one chain (no sampling); returns ``log E``.

    Same recursion as the FFBS kernel in :mod:`pmctx.vonmises._numba_chains`, in linear
    space with a per-node rescaling, without the backward pass and without fastmath (the
    value is a target density, so it must be a deterministic, smooth function of kappa).
    """
    length = node_vec.shape[0]
    n_modes = ext.shape[0] - 1
    if length == 1:
        r = math.sqrt(node_vec[0, 0] ** 2 + node_vec[0, 1] ** 2)
        return LOG_2PI_NB + log_i0e(r, table) + r
    forward = np.empty(n_modes)
    scratch = np.empty(n_modes)
    mat = np.empty((n_modes, n_modes))
    peak = -np.inf
    for b in range(n_modes):
        x = node_vec[0, 0] + ext[b, 0]
        y = node_vec[0, 1] + ext[b, 1]
        r = math.sqrt(x * x + y * y)
        forward[b] = log_i0e(r, table) + r
        peak = max(peak, forward[b])
    total = 0.0
    for b in range(n_modes):
        forward[b] = math.exp(forward[b] - peak)
        total += forward[b]
    log_scale = peak + math.log(total) + LOG_2PI_NB
    for b in range(n_modes):
        forward[b] /= total
    for i in range(1, length - 1):
        peak = -np.inf
        for a in range(n_modes):
            for b in range(a, n_modes):
                x = node_vec[i, 0] + ext[a, 0] + ext[b, 0]
                y = node_vec[i, 1] + ext[a, 1] + ext[b, 1]
                r = math.sqrt(x * x + y * y)
                value = log_i0e(r, table) + r
                mat[a, b] = value
                peak = max(peak, value)
        for a in range(n_modes):
            for b in range(a, n_modes):
                value = math.exp(mat[a, b] - peak)
                mat[a, b] = value
                mat[b, a] = value
        total = 0.0
        for b in range(n_modes):
            acc = 0.0
            for a in range(n_modes):
                acc += forward[a] * mat[a, b]
            scratch[b] = acc
            total += acc
        for b in range(n_modes):
            forward[b] = scratch[b] / total
        log_scale += peak + math.log(total) + LOG_2PI_NB
    last = length - 1
    peak = -np.inf
    for a in range(n_modes):
        x = node_vec[last, 0] + ext[a, 0]
        y = node_vec[last, 1] + ext[a, 1]
        r = math.sqrt(x * x + y * y)
        scratch[a] = log_i0e(r, table) + r
        peak = max(peak, scratch[a])
    total = 0.0
    for a in range(n_modes):
        total += forward[a] * math.exp(scratch[a] - peak)
    return log_scale + peak + math.log(total) + LOG_2PI_NB
