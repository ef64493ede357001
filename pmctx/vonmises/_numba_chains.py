"""Compiled FFBS over the vertical modes for chains whose nodes carry one term ``exp(v . o)``.

This is the hot loop of the augmented sampler: per node, ``log 2 pi I0(|v + kappa r_a +
kappa r_b|)`` for all mode pairs (symmetric, so only ``a <= b``), forward filtering, and
backward sampling of the modes from pre-drawn uniforms (randomness stays with the caller's
numpy Generator).

``log i0e`` is evaluated by cubic Hermite interpolation of a table of SciPy's exact values and
derivatives (spacing 1/64 on [0, 64]; interpolation error below 1e-11) and by the
asymptotic series beyond, several times faster than calling ``i0e`` itself.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from scipy.special import i0e, i1e


@numba.njit(cache=True, inline="always")
def inverse_cdf_pick(weights, n, target):
    """First index below ``n`` whose cumulative weight reaches ``target`` (``uniform *
    total``); ``n - 1`` when rounding leaves the total short. Shared by every compiled
    kernel, so that they draw the same modes from the same uniforms."""
    cumulative = 0.0
    for k in range(n):
        cumulative += weights[k]
        if cumulative >= target:
            return k
    return n - 1


_LOG_2PI = math.log(2.0 * math.pi)
TABLE_STEP = 1.0 / 64.0
TABLE_END = 64.0


def _make_table():
    r = np.arange(0.0, TABLE_END + 2 * TABLE_STEP, TABLE_STEP)
    # d/dr log i0e(r) = I1(r) / I0(r) - 1.
    return np.stack([np.log(i0e(r)), i1e(r) / i0e(r) - 1.0], axis=1)


LOG_I0E_TABLE = _make_table()


@numba.njit(cache=True, inline="always")
def log_i0e(r, table):
    """``log(i0e(r))`` for ``r >= 0`` (see module docstring for the method)."""
    if r >= TABLE_END:
        # sqrt(2 pi r) e^{-r} I0(r) = sum_k prod_{j<=k} (2j - 1)^2 / (k! (8 r)^k).
        term = 1.0
        total = 1.0
        for k in range(1, 9):
            term *= (2.0 * k - 1.0) ** 2 / (k * 8.0 * r)
            total += term
        return math.log(total) - 0.5 * math.log(2.0 * math.pi * r)
    x = r / TABLE_STEP
    index = int(x)
    t = x - index
    f0 = table[index, 0]
    f1 = table[index + 1, 0]
    d0 = table[index, 1] * TABLE_STEP
    d1 = table[index + 1, 1] * TABLE_STEP
    t2 = t * t
    t3 = t2 * t
    return (
        (2.0 * t3 - 3.0 * t2 + 1.0) * f0
        + (t3 - 2.0 * t2 + t) * d0
        + (-2.0 * t3 + 3.0 * t2) * f1
        + (t3 - t2) * d1
    )


@numba.njit(cache=True, fastmath={"nsz", "arcp", "contract", "afn", "reassoc"})
def _one_chain(node_vec, ext, uniforms, table, aux, mats, forward, weights):
    """FFBS over the modes of one chain; fills ``aux`` and returns the log evidence.

    The forward recursion runs in linear space: per node the mode-pair potentials
    ``C_i(a, b) = 2 pi I0(|v_i + kappa r_a + kappa r_b|)`` are exponentiated once, relative to
    their largest entry ``m_i`` (so nothing overflows), the forward vector is renormalised at
    every node and the log scale factors are summed into the evidence. This replaces the
    log-space recursion (one ``exp`` per mode pair and node in every step) by one ``exp`` per
    distinct pair and plain multiply-adds.
    """
    length = node_vec.shape[0]
    n_modes = ext.shape[0] - 1
    null = n_modes
    if length == 1:
        x = node_vec[0, 0]
        y = node_vec[0, 1]
        r = math.sqrt(x * x + y * y)
        return _LOG_2PI + log_i0e(r, table) + r
    log_scale = 0.0
    # First node: only the lower mode varies (upper = none).
    peak = -np.inf
    for b in range(n_modes):
        x = node_vec[0, 0] + ext[b, 0]
        y = node_vec[0, 1] + ext[b, 1]
        r = math.sqrt(x * x + y * y)
        weights[b] = log_i0e(r, table) + r
        peak = max(peak, weights[b])
    total = 0.0
    for b in range(n_modes):
        forward[0, b] = math.exp(weights[b] - peak)
        total += forward[0, b]
    for b in range(n_modes):
        forward[0, b] /= total
    log_scale += peak + math.log(total) + _LOG_2PI
    # Middle nodes: symmetric mode-pair matrices.
    for i in range(1, length - 1):
        vx = node_vec[i, 0]
        vy = node_vec[i, 1]
        peak = -np.inf
        for a in range(n_modes):
            for b in range(a, n_modes):
                x = vx + ext[a, 0] + ext[b, 0]
                y = vy + ext[a, 1] + ext[b, 1]
                r = math.sqrt(x * x + y * y)
                value = log_i0e(r, table) + r
                mats[i, a, b] = value
                peak = max(peak, value)
        for a in range(n_modes):
            for b in range(a, n_modes):
                value = math.exp(mats[i, a, b] - peak)
                mats[i, a, b] = value
                mats[i, b, a] = value
        total = 0.0
        for b in range(n_modes):
            acc = 0.0
            for a in range(n_modes):
                acc += forward[i - 1, a] * mats[i, a, b]
            forward[i, b] = acc
            total += acc
        for b in range(n_modes):
            forward[i, b] /= total
        log_scale += peak + math.log(total) + _LOG_2PI
    # Last node: only the upper mode varies; it is drawn from F_{M-2}(a) C_{M-1}(a, none).
    last = length - 1
    peak = -np.inf
    for a in range(n_modes):
        x = node_vec[last, 0] + ext[a, 0]
        y = node_vec[last, 1] + ext[a, 1]
        r = math.sqrt(x * x + y * y)
        weights[a] = log_i0e(r, table) + r
        peak = max(peak, weights[a])
    total = 0.0
    for a in range(n_modes):
        weights[a] = forward[last - 1, a] * math.exp(weights[a] - peak)
        total += weights[a]
    log_evidence = log_scale + peak + math.log(total) + _LOG_2PI
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
