"""Numba kernels of the continuous conditionals: ``A | F, Z`` (seed eq. 2) and ``pi | Z``.

Tiny dense linear algebra (K_max x K_max) is written out by hand: at these sizes the call
overhead of LAPACK wrappers dominates the work.
"""

from __future__ import annotations

import math

import numba
import numpy as np

__all__ = ["sample_a_kernel", "sample_pi_logit_kernel", "solve_lower", "solve_upper_t"]


@numba.njit(cache=True)
def solve_lower(L, B):
    """``L^{-1} B`` for lower-triangular ``L`` (forward substitution; tiny K, no overhead)."""
    k, d = B.shape
    out = np.empty((k, d))
    for c in range(d):
        for i in range(k):
            acc = B[i, c]
            for j in range(i):
                acc -= L[i, j] * out[j, c]
            out[i, c] = acc / L[i, i]
    return out


@numba.njit(cache=True)
def solve_upper_t(L, B):
    """``L^{-T} B`` for lower-triangular ``L`` (back substitution)."""
    k, d = B.shape
    out = np.empty((k, d))
    for c in range(d):
        for i in range(k - 1, -1, -1):
            acc = B[i, c]
            for j in range(i + 1, k):
                acc -= L[j, i] * out[j, c]
            out[i, c] = acc / L[i, i]
    return out


@numba.njit(cache=True)
def _log_gamma_variate(shape, rng):
    # Gamma(a) = Gamma(a + 1) U^(1/a) in log space: finite even when the variate underflows.
    return math.log(rng.gamma(shape + 1.0, 1.0)) + math.log(rng.random()) / shape


@numba.njit(cache=True)
def sample_pi_logit_kernel(m, n, a_over_k, rng):
    """``logit(pi_k)`` for ``pi_k ~ Beta(alpha/K_max + m_k, 1 + N - m_k)``, in log space."""
    out = np.empty(m.size)
    for k in range(m.size):
        out[k] = _log_gamma_variate(a_over_k + m[k], rng) - _log_gamma_variate(1.0 + n - m[k], rng)
    return out


@numba.njit(cache=True)
def sample_a_kernel(Z, F, sigma_n, sigma_a, rng):
    """Draw ``A ~ p(A | F, Z)`` (seed eq. 2) through the Cholesky factor of the precision."""
    n, k = Z.shape
    d = F.shape[1]
    gram = np.zeros((k, k))
    rhs = np.zeros((k, d))
    for i in range(n):
        for a in range(k):
            if Z[i, a] == 1:
                for b in range(k):
                    gram[a, b] += Z[i, b]
                for c in range(d):
                    rhs[a, c] += F[i, c]
    ratio = (sigma_n * sigma_n) / (sigma_a * sigma_a)
    for a in range(k):
        gram[a, a] += ratio
    chol = np.linalg.cholesky(gram)
    mean = solve_upper_t(chol, solve_lower(chol, rhs))
    noise = np.empty((k, d))
    for a in range(k):
        for c in range(d):
            noise[a, c] = rng.standard_normal()
    # Cov = sigma_n^2 (L L^T)^{-1}, so sigma_n L^{-T} e has it.
    return mean + sigma_n * solve_upper_t(chol, noise)
