"""Reflection cluster move (Swendsen-Wang with an external field) for the orientation map.

The rank-``R`` edge potential ``psi(a, b) = sum_k exp(kappa (cos(a - phi_k) + cos(b - phi_k)))``,
``phi_k = 2 pi k / (R + 1)``, is invariant under the reflections ``T_c: o -> c - o`` with
``c`` a multiple of ``2 pi / (R + 1)`` applied to *both* ends (``{c - phi_k}`` is the set of
phases again), and ``T_c`` is an involution. That is all the Edwards-Sokal construction needs
(the generalised Swendsen-Wang / Wolff embedding used for XY models):

1. pick ``c`` uniformly among the ``R + 1`` allowed values (independently of the state);
2. bond every edge ``(a, b)`` with probability ``1 - min(1, psi(T a, b) / psi(a, b))``;
   ``min(psi(a, b), psi(T a, b))`` is unchanged when either end alone is reflected, and the
   rest of ``psi`` when both are, so given the bonds the clusters (connected components) can
   be reflected independently without changing the prior part;
3. reflect every cluster ``C`` independently by heat bath on the node terms (observations
   and node prior, the natural ``field``): ``P(reflect) = 1 / (1 + exp(-Delta_C))``,
   ``Delta_C = sum_{i in C} field_i . (u(T o_i) - u(o_i))``.

Each step is an exact Gibbs update of the joint over angles and bonds, so the map posterior
is left invariant (tested against brute-force enumeration of the kernel and by exact
binning on a 2 x 2 grid). The move reflects whole regions at once, which the block Gibbs
samplers can only do through improbable intermediate maps; it is not ergodic by itself
(only ``R + 1`` reflections), so it always alternates with a Gibbs sweep
(:func:`cluster_sweep`).

Examples
--------
>>> import numpy as np
>>> from pmctx.vonmises.cluster import reflection_cluster_move
>>> rng = np.random.default_rng(0)
>>> o, n_flipped = reflection_cluster_move(np.zeros((4, 4)), np.zeros((4, 4, 2)), 5.0, 5, rng)
>>> o.shape
(4, 4)
"""

from __future__ import annotations

import math

import numba
import numpy as np

__all__ = ["cluster_sweep", "reflection_cluster_move", "reflection_kernel"]


@numba.njit(cache=True, inline="always")
def _log_psi(a, b, kappa, phases):
    peak = -np.inf
    for k in range(phases.shape[0]):
        peak = max(peak, kappa * (math.cos(a - phases[k]) + math.cos(b - phases[k])))
    total = 0.0
    for k in range(phases.shape[0]):
        total += math.exp(kappa * (math.cos(a - phases[k]) + math.cos(b - phases[k])) - peak)
    return peak + math.log(total)


@numba.njit(cache=True, inline="always")
def _find(parent, i):
    root = i
    while parent[root] != root:
        root = parent[root]
    while parent[i] != root:  # path compression
        nxt = parent[i]
        parent[i] = root
        i = nxt
    return root


@numba.njit(cache=True, inline="always")
def _bond(o, i, j, c, kappa, phases, u):
    """Whether the edge (i, j) (flat indices) is bonded, given its uniform ``u``."""
    a = o[i]
    b = o[j]
    log_ratio = _log_psi(c - a, b, kappa, phases) - _log_psi(a, b, kappa, phases)
    return log_ratio < 0.0 and u < -math.expm1(log_ratio)


@numba.njit(cache=True)
def reflection_kernel(o, field, c, kappa, phases, u_right, u_down, u_flip):
    """One Swendsen-Wang reflection move from pre-drawn uniforms (compiled).

    ``o`` (M, N) doubled angles, ``field`` (M, N, 2), reflection ``o -> c - o``; uniforms
    ``u_right`` (M, N) for the edge to the right of each node, ``u_down`` (M, N) for the edge
    below, ``u_flip`` (M, N) for the cluster whose root is that node. Returns the new angles
    (wrapped into ``[-pi, pi)``) and the number of nodes reflected.
    """
    n_rows, n_cols = o.shape
    flat = o.ravel()
    size = n_rows * n_cols
    parent = np.arange(size)
    for r in range(n_rows):
        for q in range(n_cols):
            i = r * n_cols + q
            if q + 1 < n_cols and _bond(flat, i, i + 1, c, kappa, phases, u_right[r, q]):
                ri, rj = _find(parent, i), _find(parent, i + 1)
                if ri != rj:
                    parent[max(ri, rj)] = min(ri, rj)
            if r + 1 < n_rows and _bond(flat, i, i + n_cols, c, kappa, phases, u_down[r, q]):
                ri, rj = _find(parent, i), _find(parent, i + n_cols)
                if ri != rj:
                    parent[max(ri, rj)] = min(ri, rj)
    delta = np.zeros(size)
    for i in range(size):
        r, q = divmod(i, n_cols)
        a = flat[i]
        reflected = c - a
        delta[_find(parent, i)] += field[r, q, 0] * (math.cos(reflected) - math.cos(a)) + field[
            r, q, 1
        ] * (math.sin(reflected) - math.sin(a))
    flip = np.zeros(size, dtype=np.bool_)
    for i in range(size):
        if parent[i] == i:
            d = delta[i]
            # P(reflect) = 1 / (1 + exp(-d)), written to avoid overflow.
            if d >= 0.0:
                p = 1.0 / (1.0 + math.exp(-d))
            else:
                e = math.exp(d)
                p = e / (1.0 + e)
            flip[i] = u_flip.ravel()[i] < p
    out = np.empty((n_rows, n_cols))
    n_flipped = 0
    two_pi = 2.0 * math.pi
    for i in range(size):
        r, q = divmod(i, n_cols)
        a = flat[i]
        if flip[_find(parent, i)]:
            a = c - a
            n_flipped += 1
        out[r, q] = ((a + math.pi) % two_pi) - math.pi
    return out, n_flipped


def reflection_cluster_move(o, field, kappa: float, rank: int, rng):
    """One reflection cluster move with a reflection axis drawn from ``rng``.

    Parameters
    ----------
    o : ndarray, shape (M, N)
        Current doubled angles (not modified).
    field : ndarray, shape (M, N, 2)
        Natural parameters of observations and node priors.
    kappa : float
        Smoothing concentration.
    rank : int
        Rank ``R`` (``R + 1`` modes and ``R + 1`` reflections).
    rng : numpy.random.Generator

    Returns
    -------
    o : ndarray, shape (M, N)
    n_flipped : int
        Number of nodes reflected.
    """
    o = np.ascontiguousarray(o, dtype=np.float64)
    n_modes = rank + 1
    phases = 2.0 * np.pi * np.arange(n_modes) / n_modes
    c = 2.0 * np.pi * rng.integers(n_modes) / n_modes
    uniforms = rng.random((3, *o.shape))
    return reflection_kernel(
        o,
        np.ascontiguousarray(field, dtype=np.float64),
        c,
        float(kappa),
        phases,
        uniforms[0],
        uniforms[1],
        uniforms[2],
    )


def cluster_sweep(o, field, kappa: float, rank: int, rng, *, n_moves: int = 1):
    """An augmented Gibbs sweep followed by ``n_moves`` reflection cluster moves.

    Same signature and invariant law as :func:`pmctx.vonmises.augmented.augmented_sweep`.

    Parameters
    ----------
    o : numpy.ndarray (M, N)
        Current doubled angles.
    field : numpy.ndarray (M, N, 2)
        Natural parameters of observations and node priors.
    kappa : float
        Smoothing concentration.
    rank : int
        Rank of the potential.
    rng : numpy.random.Generator
        Random generator.
    n_moves : int, default 1
        Cluster moves after the sweep.

    Returns
    -------
    numpy.ndarray (M, N)
        The updated angles.
    """
    from pmctx.vonmises.augmented import augmented_sweep

    o = augmented_sweep(o, field, kappa, rank, rng)
    for _ in range(n_moves):
        o, _ = reflection_cluster_move(o, field, kappa, rank, rng)
    return o
