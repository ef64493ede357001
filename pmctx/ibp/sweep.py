"""One whole sweep of the specialised IBP sampler (numba), with a choice of row moves.

``moves``: ``MOVES_LEGACY`` is the original row update (:func:`pmctx.ibp.kernels.sweep_rows`:
shared columns, then a small block of them, then the singletons given the shared columns);
``MOVES_JOINT`` is :func:`pmctx.ibp.joint_row.sweep_rows_joint` (a block of shared columns
and the number of singletons drawn together, singletons' ``A`` and ``Y`` integrated out).
"""

from __future__ import annotations

import numba
import numpy as np

from pmctx.ibp.continuous import sample_a_kernel, sample_pi_logit_kernel
from pmctx.ibp.joint_row import sweep_rows_joint
from pmctx.ibp.kernels import noisy_or_tables, sweep_rows, update_y

__all__ = ["MOVES_JOINT", "MOVES_LEGACY", "full_sweep", "row_caches"]

MOVES_LEGACY = 0
MOVES_JOINT = 1


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


def full_sweep(Z, A, Y, F, X, pi_logit, hyper, rng, new_features, block_size, moves):
    """One whole sweep in place: A (eq. 2), Y (eq. 3-5), rows of Z, then pi | Z.

    Each row move has its own compiled sweep, so a process compiles only the move it runs.

    Parameters
    ----------
    Z : numpy.ndarray of int64, shape (N, K_max)
        Binary feature assignments, updated in place.
    A : numpy.ndarray of float64, shape (K_max, D)
        Force basis, updated in place.
    Y : numpy.ndarray of int64, shape (K_max, T)
        Binary cue matrix, updated in place.
    F : numpy.ndarray of float64, shape (N, D)
        Observed forces (C-contiguous).
    X : numpy.ndarray of int64, shape (N, T)
        Observed binary cues (C-contiguous).
    pi_logit : numpy.ndarray of float64, shape (K_max,)
        Logits of the feature probabilities, updated in place.
    hyper : numpy.ndarray of float64, shape (7,)
        :meth:`pmctx.ibp.sampler.IBPHyper.as_array`'s layout.
    rng : numpy.random.Generator
        Source of every random draw.
    new_features : bool
        Whether the legacy moves may open new features (the joint move always may).
    block_size : int
        Shared columns drawn together in a row's block move.
    moves : int
        ``MOVES_JOINT`` or ``MOVES_LEGACY``.

    Returns
    -------
    features_added : int
        New features opened in this sweep.
    truncation_hits : int
        Times a move wanted more than ``K_max`` features.
    """
    if moves == MOVES_JOINT:
        return _sweep_joint(Z, A, Y, F, X, pi_logit, hyper, rng, block_size)
    return _sweep_legacy(Z, A, Y, F, X, pi_logit, hyper, rng, new_features, block_size)


@numba.njit(cache=True)
def _before_rows(Z, A, Y, F, X, hyper, rng):
    """A | Z, then Y | Z: the noisy-OR tables and the row caches the row moves read."""
    if A.shape[1] > 0:
        A[:, :] = sample_a_kernel(Z, F, hyper[1], hyper[2], rng)
    ll0, ll1 = noisy_or_tables(hyper[4], hyper[5], Z.shape[1])
    R, C, m = row_caches(Z, A, Y, F)
    if Y.shape[1] > 0:
        update_y(Z, Y, X, C, hyper[3], ll0, ll1, rng)
    return ll0, ll1, R, C, m


@numba.njit(cache=True)
def _sweep_joint(Z, A, Y, F, X, pi_logit, hyper, rng, block_size):
    ll0, ll1, R, C, m = _before_rows(Z, A, Y, F, X, hyper, rng)
    added, hits = sweep_rows_joint(Z, A, Y, X, R, C, m, hyper, ll0, ll1, rng, block_size)
    pi_logit[:] = sample_pi_logit_kernel(m, Z.shape[0], hyper[0] / hyper[6], rng)
    return added, hits


@numba.njit(cache=True)
def _sweep_legacy(Z, A, Y, F, X, pi_logit, hyper, rng, new_features, block_size):
    ll0, ll1, R, C, m = _before_rows(Z, A, Y, F, X, hyper, rng)
    added, hits = sweep_rows(Z, A, Y, X, R, C, m, hyper, ll0, ll1, rng, new_features, block_size)
    pi_logit[:] = sample_pi_logit_kernel(m, Z.shape[0], hyper[0] / hyper[6], rng)
    return added, hits
