"""One whole sweep of the specialised IBP sampler (numba), with a choice of row moves.

:func:`sweep_legacy` uses the original row update (:func:`pmctx.ibp.kernels.sweep_rows`:
shared columns, then a small block of them, then the singletons given the shared columns);
:func:`sweep_joint` uses :func:`pmctx.ibp.joint_row.sweep_rows_joint` (a block of shared
columns and the number of singletons drawn together, singletons' ``A`` and ``Y`` integrated
out). Each move has its own compiled sweep, so a process compiles only the move it runs.
"""

from __future__ import annotations

import numba
import numpy as np

from pmctx.ibp.continuous import sample_a_kernel, sample_pi_logit_kernel
from pmctx.ibp.joint_row import sweep_rows_joint
from pmctx.ibp.kernels import noisy_or_tables, sweep_rows, update_y

__all__ = ["row_caches", "sweep_joint", "sweep_legacy"]


@numba.njit(cache=True)
def row_caches(Z, A, Y, F):
    """Residual ``R = F - Z A``, counts ``C = Z Y`` and column counts ``m`` of a state."""
    n, k_max = Z.shape
    C = np.zeros((n, Y.shape[1]), dtype=np.int64)
    R = F.copy()
    m = np.zeros(k_max, dtype=np.int64)
    for i in range(n):
        for k in range(k_max):
            if Z[i, k] == 1:
                m[k] += 1
                for t in range(Y.shape[1]):
                    C[i, t] += Y[k, t]
                for d in range(A.shape[1]):
                    R[i, d] -= A[k, d]
    return R, C, m


@numba.njit(cache=True)
def _copy_rows(target, values):
    """``target[:, :] = values`` (equal shapes) as loops: Numba's broadcasting assignment
    compiles its shape-mismatch message (string formatting) for seconds in every kernel."""
    for i in range(target.shape[0]):
        for j in range(target.shape[1]):
            target[i, j] = values[i, j]


@numba.njit(cache=True)
def _copy_vector(target, values):
    """``target[:] = values`` (equal lengths) as a loop, for the reason of :func:`_copy_rows`."""
    for i in range(target.shape[0]):
        target[i] = values[i]


@numba.njit(cache=True)
def _before_rows(Z, A, Y, F, X, hyper, rng):
    """A | Z, then Y | Z: the noisy-OR tables and the row caches the row moves read."""
    if A.shape[1] > 0:
        _copy_rows(A, sample_a_kernel(Z, F, hyper[1], hyper[2], rng))
    ll0, ll1 = noisy_or_tables(hyper[4], hyper[5], Z.shape[1])
    R, C, m = row_caches(Z, A, Y, F)
    if Y.shape[1] > 0:
        update_y(Z, Y, X, C, hyper[3], ll0, ll1, rng)
    return ll0, ll1, R, C, m


@numba.njit(cache=True)
def sweep_joint(Z, A, Y, F, X, pi_logit, hyper, rng, block_size):
    """One whole sweep in place with the joint row move: A (eq. 2), Y (eq. 3-5), rows of Z,
    then pi | Z. Returns ``(features added, truncation hits)``."""
    ll0, ll1, R, C, m = _before_rows(Z, A, Y, F, X, hyper, rng)
    added, hits = sweep_rows_joint(Z, A, Y, X, R, C, m, hyper, ll0, ll1, rng, block_size)
    _copy_vector(pi_logit, sample_pi_logit_kernel(m, Z.shape[0], hyper[0] / hyper[6], rng))
    return added, hits


@numba.njit(cache=True)
def sweep_legacy(Z, A, Y, F, X, pi_logit, hyper, rng, new_features, block_size):
    """:func:`sweep_joint` with the legacy row update (``new_features`` applies to it only)."""
    ll0, ll1, R, C, m = _before_rows(Z, A, Y, F, X, hyper, rng)
    added, hits = sweep_rows(Z, A, Y, X, R, C, m, hyper, ll0, ll1, rng, new_features, block_size)
    _copy_vector(pi_logit, sample_pi_logit_kernel(m, Z.shape[0], hyper[0] / hyper[6], rng))
    return added, hits
