"""Vectorised compiled helpers of the orientation-map samplers: ``i0e``, ``exp``, edge modes.

Written so that LLVM vectorises the loops that call them:

* ``I0(r) e^{-r}`` by Cephes' Chebyshev series (the ones SciPy's ``i0e`` evaluates, read
  from NumPy's ``i0``): ``[0, 8]`` in ``x = r / 2 - 2`` and ``(8, inf)`` in ``x = 32 / r - 2``
  (times ``1 / sqrt(r)``), both evaluated and one selected, so there is no branch; relative
  error below ``1e-15`` on ``[0, 1e7]`` (tested against :func:`scipy.special.i0e`);
* ``exp(d)`` for ``d <= 0`` by range reduction ``d = k ln 2 + f`` (``|f| <= ln 2 / 2``), a
  degree-13 Taylor polynomial of ``e^f`` (truncation below ``1e-17``) and ``2^k`` from a
  table (exact powers of two down to the subnormals, then 0), so no libm call is left in a
  vector loop;
* :func:`edge_modes`: every edge's mode by inverse CDF from caller-drawn uniforms;
* :func:`log_joint_compiled`: the map's unnormalised log density.

Maps with fewer than :data:`PARALLEL_MIN_NODES` nodes run in one thread (starting numba's
thread pool costs more than the work on small maps); larger maps run rows in parallel. The
result does not depend on the number of threads.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from pmctx.vonmises._numba_chains import inverse_cdf_pick

__all__ = [
    "PARALLEL_MIN_NODES",
    "edge_modes",
    "exp_nonpositive",
    "i0e_cheb",
    "log_joint_compiled",
]

PARALLEL_MIN_NODES = 2**15
_LOG2E = 1.0 / math.log(2.0)
_LN2_HI = 6.93147180369123816490e-01  # ln 2 split so that k * _LN2_HI is exact
_LN2_LO = 1.90821492927058770002e-10
_POW2_NEG = np.ldexp(1.0, -np.arange(1077))  # 2^-j, j = 0..1076 (the last two are 0)
_EXP_COEF = np.array([1.0 / math.factorial(n) for n in range(14)])[::-1].copy()
_N_EXP = _EXP_COEF.shape[0]


def _cephes_i0e_coefficients():
    """Cephes' Chebyshev coefficients of ``i0e`` (SciPy's and NumPy's ``i0`` use the same)."""
    try:
        from numpy.lib import _function_base_impl as source
    except ImportError:  # pragma: no cover - numpy < 2
        from numpy.lib import function_base as source
    return np.array(source._i0A, dtype=np.float64), np.array(source._i0B, dtype=np.float64)


# exp(-r) I0(r) on [0, 8] as a series in x = r / 2 - 2; sqrt(r) exp(-r) I0(r) on (8, inf) in
# x = 32 / r - 2 (highest coefficient first, Cephes' chbevl convention).
I0E_LOW, I0E_HIGH = _cephes_i0e_coefficients()


_N_LOW = I0E_LOW.shape[0]
_N_HIGH = I0E_HIGH.shape[0]


@numba.njit(cache=True, inline="always", fastmath=True)
def _chbevl_low(x):
    # Trip count and coefficients are compile-time constants (globals are frozen), so LLVM
    # unrolls the recurrence and the caller's loop over mode pairs vectorises.
    b0 = I0E_LOW[0]
    b1 = 0.0
    b2 = 0.0
    for j in range(1, _N_LOW):
        b2 = b1
        b1 = b0
        b0 = x * b1 - b2 + I0E_LOW[j]
    return 0.5 * (b0 - b2)


@numba.njit(cache=True, inline="always", fastmath=True)
def _chbevl_high(x):
    b0 = I0E_HIGH[0]
    b1 = 0.0
    b2 = 0.0
    for j in range(1, _N_HIGH):
        b2 = b1
        b1 = b0
        b0 = x * b1 - b2 + I0E_HIGH[j]
    return 0.5 * (b0 - b2)


@numba.njit(cache=True, inline="always", fastmath=True)
def i0e_cheb(r):
    """``exp(-r) I0(r)`` for ``r >= 0`` (both series evaluated, one selected: no branch)."""
    near = _chbevl_low(0.5 * r - 2.0)
    safe = max(r, 8.0)
    far = _chbevl_high(32.0 / safe - 2.0) / math.sqrt(safe)
    return near if r <= 8.0 else far


@numba.njit(cache=True, inline="always", fastmath=True)
def exp_nonpositive(d):
    """``exp(d)`` for ``d <= 0`` by range reduction, a polynomial and a power-of-two table."""
    d = max(d, -745.5)  # below exp's smallest subnormal: the table gives 0
    k = math.floor(d * _LOG2E + 0.5)
    f = (d - k * _LN2_HI) - k * _LN2_LO
    p = _EXP_COEF[0]
    for j in range(1, _N_EXP):
        p = p * f + _EXP_COEF[j]
    return p * _POW2_NEG[int(-k)]


@numba.njit(cache=True, inline="always", fastmath=True)
def _edge_row(i, cos_a, sin_a, cos_b, sin_b, kx, ky, uniforms, out, logits):
    n_modes = kx.shape[0]
    for j in range(cos_a.shape[1]):
        x = cos_a[i, j] + cos_b[i, j]
        y = sin_a[i, j] + sin_b[i, j]
        for k in range(n_modes):
            logits[k] = kx[k] * x + ky[k] * y
        peak = logits[0]
        for k in range(1, n_modes):
            peak = max(peak, logits[k])
        total = 0.0
        for k in range(n_modes):
            logits[k] = math.exp(logits[k] - peak)  # libm: K = R + 1 terms, not vectorised
            total += logits[k]
        pick = inverse_cdf_pick(logits, n_modes, uniforms[i, j] * total)
        out[i, j] = pick


@numba.njit(cache=True)
def _edges_serial(cos_a, sin_a, cos_b, sin_b, kx, ky, uniforms, out):
    logits = np.empty(kx.shape[0])
    for i in range(cos_a.shape[0]):
        _edge_row(i, cos_a, sin_a, cos_b, sin_b, kx, ky, uniforms, out, logits)


@numba.njit(cache=True, parallel=True)
def _edges_parallel(cos_a, sin_a, cos_b, sin_b, kx, ky, uniforms, out):
    for i in numba.prange(cos_a.shape[0]):
        logits = np.empty(kx.shape[0])
        _edge_row(i, cos_a, sin_a, cos_b, sin_b, kx, ky, uniforms, out, logits)


def edge_modes(cos_a, sin_a, cos_b, sin_b, kappa_modes, uniforms, *, parallel=None):
    """Mode of every edge, ``P(k) ∝ exp(kappa r_k . (o_a + o_b))`` (vectorised kernel).

    Same arguments and result as :func:`pmctx.vonmises._numba_chains.edge_modes`.
    """
    out = np.empty(cos_a.shape, dtype=np.int64)
    if parallel is None:
        parallel = cos_a.size >= PARALLEL_MIN_NODES
    kernel = _edges_parallel if parallel else _edges_serial
    kx = np.ascontiguousarray(kappa_modes[:, 0])
    ky = np.ascontiguousarray(kappa_modes[:, 1])
    kernel(cos_a, sin_a, cos_b, sin_b, kx, ky, uniforms, out)
    return out


@numba.njit(cache=True, fastmath=True)
def _log_joint_kernel(cos_o, sin_o, field, kx, ky):
    n_rows, n_cols = cos_o.shape
    n_modes = kx.shape[0]
    logits = np.empty(n_modes)
    total = 0.0
    for i in range(n_rows):
        for j in range(n_cols):
            total += field[i, j, 0] * cos_o[i, j] + field[i, j, 1] * sin_o[i, j]
            for di, dj in ((0, 1), (1, 0)):
                if i + di >= n_rows or j + dj >= n_cols:
                    continue
                x = cos_o[i, j] + cos_o[i + di, j + dj]
                y = sin_o[i, j] + sin_o[i + di, j + dj]
                for k in range(n_modes):
                    logits[k] = kx[k] * x + ky[k] * y
                peak = logits[0]
                for k in range(1, n_modes):
                    peak = max(peak, logits[k])
                acc = 0.0
                for k in range(n_modes):
                    acc += exp_nonpositive(logits[k] - peak)
                total += peak + math.log(acc)
    return total


def log_joint_compiled(o, field, kappa: float, rank: int) -> float:
    """Compiled :func:`pmctx.vonmises.potentials.log_joint` (agrees to 1e-12 relative).

    ``o`` ``(M, N)`` doubled angles, ``field`` ``(M, N, 2)``; returns the unnormalised
    ``log p(O | Z)``: node terms plus ``log psi`` of every 4-neighbour edge.
    """
    o = np.asarray(o, dtype=np.float64)
    phases = 2.0 * np.pi * np.arange(rank + 1) / (rank + 1)
    kx, ky = kappa * np.cos(phases), kappa * np.sin(phases)
    field = np.ascontiguousarray(field, dtype=np.float64)
    return float(_log_joint_kernel(np.cos(o), np.sin(o), field, kx, ky))
