"""Window symmetry moves: Metropolis-Hastings flips of small rectangles of the orientation map.

The rank-``R`` edge potential ``psi(a, b) = sum_k exp(kappa (cos(a - phi_k) + cos(b - phi_k)))``,
``phi_k = 2 pi k / (R + 1)``, is invariant when *both* ends are moved by one element ``g`` of
its symmetry group: the ``R + 1`` reflections ``o -> c - o`` and the ``R`` rotations
``o -> o + c`` (``c`` a multiple of ``2 pi / (R + 1)``, rotation by 0 excluded). One move

1. draws a window ``W`` (height and width uniform in ``1..max_size``, position uniform) and a
   group element ``g`` uniformly among the ``2 R + 1`` non-identity elements, independently
   of the state;
2. proposes ``o' = o`` with ``g`` applied to every angle in ``W``;
3. accepts with probability ``min(1, p(o') / p(o))``. Edges inside ``W`` keep their
   potential, so ``log p(o') - log p(o)`` is a sum over the edges that cross the window's
   border and the node terms (observations, node prior) of ``W``: ``O(perimeter + area)``.

The proposal is symmetric: ``(W, g)`` maps ``o`` to ``o'`` and ``(W, g^-1)``, drawn with the
same probability (reflections are their own inverse; the rotations by ``c`` and ``-c`` are
both in the set), maps ``o'`` back. So the move satisfies detailed balance with respect to
the map posterior (tested against brute-force enumeration of its transitions and by exact
binning on a 2 x 2 grid). It is not ergodic by itself and always follows a Gibbs sweep
(:func:`window_sweep`).

What it does on the demo's map at the generating ``kappa = 5`` (the demo itself fits the
``kappa = 3`` that held-out pixels choose, where the default run converges;
``benchmarks/vonmises_pinwheel_mixing.py escape``, 2-core box at load 8): the slow mode
there is a pair of pinwheels that appears when the patch around rows 16-18, columns 4-6
takes the mirror image of its orientations. Started in that mode,
augmented sweeps left it within 100 sweeps in 2 of 12 starts (8 of 12 still in it after
300 sweeps); with one window proposal per node after each sweep, in 5 of 12 (2 of 12 still
in it after 300); with four per node, in 5 of 8. Per CPU second that is no gain yet (a
proposal costs about 10 microseconds: a sweep with one per node took 34 ms CPU against 4-6 ms): the
move is exact and tested but not used by default.

Examples
--------
>>> import numpy as np
>>> from pmctx.vonmises.window import window_moves
>>> rng = np.random.default_rng(0)
>>> o, n_accepted = window_moves(np.zeros((4, 4)), np.zeros((4, 4, 2)), 5.0, 5, rng, n_moves=10)
>>> o.shape
(4, 4)
"""

from __future__ import annotations

import math

import numba
import numpy as np

from pmctx.vonmises.cluster import _log_psi

__all__ = ["DEFAULT_MAX_SIZE", "window_kernel", "window_log_ratio", "window_moves", "window_sweep"]

#: Largest window side drawn by default (sides are uniform in ``1..DEFAULT_MAX_SIZE``).
DEFAULT_MAX_SIZE = 4


@numba.njit(cache=True, inline="always")
def _apply(a, sign, offset):
    return sign * a + offset


@numba.njit(cache=True)
def window_log_ratio(o, field, top, left, height, width, sign, offset, kappa, phases):
    """``log p(o') - log p(o)`` for ``g(a) = sign * a + offset`` on one window (compiled).

    Parameters
    ----------
    o : numpy.ndarray (M, N)
        Current doubled angles.
    field : numpy.ndarray (M, N, 2)
        Natural parameters of the node terms.
    top, left, height, width : int
        The window: rows ``top .. top + height - 1``, columns ``left .. left + width - 1``.
    sign, offset : float
        The group element (``sign = -1``: reflection; ``+1``: rotation).
    kappa : float
        Smoothing concentration.
    phases : numpy.ndarray (R + 1,)
        Mode phases ``2 pi k / (R + 1)``.

    Returns
    -------
    float
        The log ratio of the unnormalised posterior.
    """
    n_rows, n_cols = o.shape
    bottom = top + height
    right = left + width
    delta = 0.0
    for r in range(top, bottom):
        for q in range(left, right):
            a = o[r, q]
            b = _apply(a, sign, offset)
            delta += field[r, q, 0] * (math.cos(b) - math.cos(a))
            delta += field[r, q, 1] * (math.sin(b) - math.sin(a))
            # Edges to nodes outside the window (inside ones keep their potential).
            if r == top and r > 0:
                nb = o[r - 1, q]
                delta += _log_psi(b, nb, kappa, phases) - _log_psi(a, nb, kappa, phases)
            if r == bottom - 1 and r + 1 < n_rows:
                nb = o[r + 1, q]
                delta += _log_psi(b, nb, kappa, phases) - _log_psi(a, nb, kappa, phases)
            if q == left and q > 0:
                nb = o[r, q - 1]
                delta += _log_psi(b, nb, kappa, phases) - _log_psi(a, nb, kappa, phases)
            if q == right - 1 and q + 1 < n_cols:
                nb = o[r, q + 1]
                delta += _log_psi(b, nb, kappa, phases) - _log_psi(a, nb, kappa, phases)
    return delta


@numba.njit(cache=True)
def window_kernel(o, field, kappa, phases, tops, lefts, heights, widths, elements, uniforms):
    """Run pre-drawn window moves on a copy of ``o`` (compiled).

    Move ``t`` flips the window ``(tops[t], lefts[t], heights[t], widths[t])`` by group element
    ``elements[t]`` (``0 .. R``: reflection ``o -> 2 pi j / (R + 1) - o``; ``R + 1 .. 2 R``:
    rotation by ``2 pi (j - R) / (R + 1)``) and accepts it when
    ``log(uniforms[t]) < log p(o') - log p(o)``.

    Parameters
    ----------
    o : numpy.ndarray (M, N)
        Current doubled angles (not modified).
    field : numpy.ndarray (M, N, 2)
        Natural parameters of the node terms.
    kappa : float
        Smoothing concentration.
    phases : numpy.ndarray (R + 1,)
        Mode phases.
    tops, lefts, heights, widths, elements : numpy.ndarray of int
        The windows and group elements, one per move.
    uniforms : numpy.ndarray of float
        One uniform per move (acceptance).

    Returns
    -------
    o : numpy.ndarray (M, N)
        The new angles, wrapped into ``[-pi, pi)``.
    n_accepted : int
        Number of accepted moves.
    """
    out = o.copy()
    n_modes = phases.shape[0]
    step = 2.0 * math.pi / n_modes
    two_pi = 2.0 * math.pi
    n_accepted = 0
    for t in range(tops.shape[0]):
        g = elements[t]
        if g < n_modes:
            sign, offset = -1.0, g * step
        else:
            sign, offset = 1.0, (g - n_modes + 1) * step
        top, left, height, width = tops[t], lefts[t], heights[t], widths[t]
        delta = window_log_ratio(out, field, top, left, height, width, sign, offset, kappa, phases)
        if math.log(uniforms[t]) < delta:
            n_accepted += 1
            for r in range(top, top + height):
                for q in range(left, left + width):
                    out[r, q] = ((sign * out[r, q] + offset + math.pi) % two_pi) - math.pi
    return out, n_accepted


def _draw_moves(shape, rank, n_moves, max_size, rng):
    n_rows, n_cols = shape
    heights = rng.integers(1, min(max_size, n_rows) + 1, size=n_moves)
    widths = rng.integers(1, min(max_size, n_cols) + 1, size=n_moves)
    tops = (rng.random(n_moves) * (n_rows - heights + 1)).astype(np.int64)
    lefts = (rng.random(n_moves) * (n_cols - widths + 1)).astype(np.int64)
    elements = rng.integers(0, 2 * rank + 1, size=n_moves)
    uniforms = rng.random(n_moves)
    return tops, lefts, heights.astype(np.int64), widths.astype(np.int64), elements, uniforms


def window_moves(
    o,
    field,
    kappa: float,
    rank: int,
    rng,
    *,
    n_moves: int | None = None,
    max_size: int = DEFAULT_MAX_SIZE,
):
    """``n_moves`` window symmetry moves (Metropolis-Hastings) with windows drawn from ``rng``.

    Parameters
    ----------
    o : numpy.ndarray (M, N)
        Current doubled angles (not modified).
    field : numpy.ndarray (M, N, 2)
        Natural parameters of observations and node priors.
    kappa : float
        Smoothing concentration.
    rank : int
        Rank ``R`` (``2 R + 1`` non-identity symmetries).
    rng : numpy.random.Generator
        Random generator.
    n_moves : int, optional
        Number of proposals (default: one per node).
    max_size : int, default 4
        Largest window side.

    Returns
    -------
    o : numpy.ndarray (M, N)
        The new angles.
    n_accepted : int
        Number of accepted proposals.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> o, n_accepted = window_moves(np.zeros((3, 3)), np.zeros((3, 3, 2)), 0.0, 2, rng, n_moves=5)
    >>> n_accepted  # a flat target accepts every proposal
    5
    """
    o = np.ascontiguousarray(o, dtype=np.float64)
    if n_moves is None:
        n_moves = o.size
    if isinstance(max_size, bool) or int(max_size) != max_size or max_size < 1:
        raise ValueError(f"max_size must be an integer >= 1, got {max_size!r}.")
    phases = 2.0 * np.pi * np.arange(rank + 1) / (rank + 1)
    moves = _draw_moves(o.shape, rank, int(n_moves), int(max_size), rng)
    field = np.ascontiguousarray(field, dtype=np.float64)
    return window_kernel(o, field, float(kappa), phases, *moves)


def window_sweep(
    o, field, kappa: float, rank: int, rng, *, n_moves=None, max_size: int = DEFAULT_MAX_SIZE
):
    """An augmented Gibbs sweep followed by window symmetry moves (one per node by default).

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
    n_moves : int, optional
        Window proposals after the sweep (default: one per node).
    max_size : int, default 4
        Largest window side.

    Returns
    -------
    numpy.ndarray (M, N)
        The updated angles.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> window_sweep(np.zeros((4, 4)), np.zeros((4, 4, 2)), 5.0, 5, rng).shape
    (4, 4)
    """
    from pmctx.vonmises.augmented import augmented_sweep

    o = augmented_sweep(o, field, kappa, rank, rng)
    o, _ = window_moves(o, field, kappa, rank, rng, n_moves=n_moves, max_size=max_size)
    return o
