"""Tempered transitions on a window of the orientation map (Neal 1996).

At a ``kappa`` above what the data favour, the map posterior can hold a local slow mode (a
small patch that takes the mirror image of its orientations, adding a pinwheel pair) that
a block-Gibbs chain leaves only every thousand sweeps or so. Replica exchange over the
whole map pays for it with swap rates that fall with the map's size (the edge energy is
extensive). A tempered transition heats only a ``w x w`` window ``W`` at a position drawn
independently of the state: with the ladder ``kappa = kappa_0 > kappa_1 > ... > kappa_J``,

    pi_j(O) ∝ exp(sum_n field_n · o_n) prod_{edges e touching W} psi_{kappa_j}(e)
              prod_{other edges e} psi_kappa(e),

so ``pi_0`` is the posterior. The move climbs the ladder with kernels ``T_1, ..., T_J``
(``T_j`` leaves ``pi_j`` invariant, is reversible, and changes only window pixels), then
comes down with ``T_J, ..., T_1``, and accepts the final state with Neal's probability
(Stat. Comput. 6:353, 1996)

    min(1, prod_{j=1}^{J} pi_j(x_up_{j-1}) / pi_{j-1}(x_up_{j-1})
           prod_{j=1}^{J} pi_{j-1}(x_down_{j-1}) / pi_j(x_down_{j-1})),

``x_up_{j-1}`` the state before ``T_j`` on the way up and ``x_down_{j-1}`` the state after
``T_j`` on the way down. Each ratio involves only the energies of the edges that touch the
window (:func:`window_energy`), so the move costs ``O(w^2 J)`` and its acceptance does not
fall with the map's size.

On the way up ``T_j`` scans the window's two checkerboard colours in the order (0, 1), on
the way down in the order (1, 0) (``n_sweeps`` times each): the two are each other's
reverses, as Neal's scheme requires. A pass updates the window nodes of one colour by data
augmentation:
every edge touching such a node draws its mode ``m`` with ``P(m) ∝ exp(kappa_j r_m · (u_a +
u_b))`` (:mod:`pmctx.vonmises.potentials`), then each node draws its angle from the single
von Mises term ``exp((field + kappa_j sum r_m) · u)``. The pass is the marginal kernel of a
two-block Gibbs sampler on (colour's angles, modes) given the other colour, hence
reversible, so ``(P_0 P_1)^s`` and ``(P_1 P_0)^s`` are each other's adjoints.
``heat="boundary"`` heats only the edges that leave the window (its inside keeps
``kappa``), so fewer edges enter the acceptance.

Measured on the demo map at ``kappa = 5`` (``benchmarks/vonmises_pinwheel_mixing.py
escape``, 48 starts in the 11-pinwheel mode, 300 sweeps, results in
``benchmarks/results/vonmises_pinwheel_escape.json``): an augmented sweep alone leaves the
mode every 425 sweeps, 1.32 CPU s per exit; with three 8 x 8 transitions (5 rungs down to
4.5) after each sweep every 200 sweeps, but at 2.1 times the CPU per sweep, 1.30 s per
exit (six such transitions: 307 sweeps, 2.73 s; about 30 exits each, so about 18%
Poisson error); other widths (6, 12) and ladders (down to 4, 10 rungs) cost 1.73-3.5 s.
Aimed at the patch, a transition ends outside the mode in only 3-5% of the moves (all
edges heated; none with the boundary heated). The move is exact but does not pay per CPU
second there, so no sampler uses it by default.

Examples
--------
>>> import numpy as np
>>> from pmctx.vonmises.transitions import window_transition
>>> rng = np.random.default_rng(0)
>>> o, accepted = window_transition(np.zeros((6, 6)), np.zeros((6, 6, 2)), 5.0, 2, rng,
...                                 width=3)
>>> o.shape, type(accepted).__name__
((6, 6), 'bool')
"""

from __future__ import annotations

from functools import lru_cache

import numba
import numpy as np

from pmctx.vonmises.potentials import mode_vectors, wrap_angle

__all__ = [
    "transition_ladder",
    "window_energy",
    "window_pass",
    "window_transition",
]

_OFFSETS = np.array([[-1, 0], [1, 0], [0, -1], [0, 1]], dtype=np.int64)


@lru_cache(maxsize=64)
def _cached(kappa: float, n_rungs: int, kappa_min: float, rank: int):
    """The ladder and the mode vectors' components (read-only), computed once per setting."""
    ladder = transition_ladder(kappa, n_rungs, kappa_min=kappa_min)
    modes = mode_vectors(rank)
    arrays = (ladder, np.ascontiguousarray(modes[:, 0]), np.ascontiguousarray(modes[:, 1]))
    for a in arrays:
        a.flags.writeable = False
    return arrays


@numba.njit(cache=True)
def _seed(seed):
    np.random.seed(seed)  # noqa: NPY002 (numba's generator, seeded from the caller's rng)


@numba.njit(cache=True)
def _log_psi(ca, sa, cb, sb, kappa, mx, my):
    sx, sy = ca + cb, sa + sb
    top = -np.inf
    for m in range(mx.size):
        v = kappa * (mx[m] * sx + my[m] * sy)
        if v > top:
            top = v
    total = 0.0
    for m in range(mx.size):
        total += np.exp(kappa * (mx[m] * sx + my[m] * sy) - top)
    return top + np.log(total)


@numba.njit(cache=True)
def _window_energy(o, r0, c0, w, kappa, kappa_out, mx, my):
    """Sum of ``log psi`` over the edges touching the window (``kappa_out`` on those that
    leave it)."""
    n_rows, n_cols = o.shape
    total = 0.0
    for r in range(max(r0 - 1, 0), min(r0 + w, n_rows)):
        for c in range(max(c0 - 1, 0), min(c0 + w, n_cols)):
            here = r0 <= r < r0 + w and c0 <= c < c0 + w
            ca, sa = np.cos(o[r, c]), np.sin(o[r, c])
            # the edge to the right neighbour, then the one below
            if c + 1 < n_cols and r >= r0 and (here or c + 1 == c0):
                k = kappa if here and c + 1 < c0 + w else kappa_out
                total += _log_psi(ca, sa, np.cos(o[r, c + 1]), np.sin(o[r, c + 1]), k, mx, my)
            if r + 1 < n_rows and c >= c0 and (here or r + 1 == r0):
                k = kappa if here and r + 1 < r0 + w else kappa_out
                total += _log_psi(ca, sa, np.cos(o[r + 1, c]), np.sin(o[r + 1, c]), k, mx, my)
    return total


@numba.njit(cache=True)
def _pass(o, fx, fy, r0, c0, w, colour, kappa_in, kappa_out, mx, my, offsets, logits):
    """One data-augmentation pass over the window nodes of one checkerboard colour."""
    n_rows, n_cols = o.shape
    n_modes = mx.size
    for r in range(r0, r0 + w):
        for c in range(c0, c0 + w):
            if (r + c) % 2 != colour:
                continue
            ca, sa = np.cos(o[r, c]), np.sin(o[r, c])
            vx, vy = fx[r, c], fy[r, c]
            for k in range(4):
                rn, cn = r + offsets[k, 0], c + offsets[k, 1]
                if rn < 0 or rn >= n_rows or cn < 0 or cn >= n_cols:
                    continue
                inside = r0 <= rn < r0 + w and c0 <= cn < c0 + w
                kappa = kappa_in if inside else kappa_out
                sx, sy = ca + np.cos(o[rn, cn]), sa + np.sin(o[rn, cn])
                top = -np.inf
                for m in range(n_modes):
                    logits[m] = kappa * (mx[m] * sx + my[m] * sy)
                    top = max(top, logits[m])
                total = 0.0
                for m in range(n_modes):
                    logits[m] = np.exp(logits[m] - top)
                    total += logits[m]
                u = np.random.random() * total  # noqa: NPY002
                pick, acc = n_modes - 1, 0.0
                for m in range(n_modes):
                    acc += logits[m]
                    if u < acc:
                        pick = m
                        break
                vx += kappa * mx[pick]
                vy += kappa * my[pick]
            o[r, c] = np.random.vonmises(np.arctan2(vy, vx), np.hypot(vx, vy))  # noqa: NPY002


@numba.njit(cache=True)
def _scan(o, fx, fy, r0, c0, w, k_in, k_out, n_sweeps, first, mx, my, offsets, logits):
    for p in range(2 * n_sweeps):
        _pass(o, fx, fy, r0, c0, w, (first + p) % 2, k_in, k_out, mx, my, offsets, logits)


@numba.njit(cache=True)
def _transition(o, fx, fy, r0, c0, w, k_in, k_out, n_sweeps, mx, my, offsets):
    """Up and down the ladder from ``o`` (copied); returns the final state and log ratio."""
    x = o.copy()
    logits = np.empty(mx.size)
    log_ratio = 0.0
    n = k_in.size
    for j in range(1, n):
        log_ratio += _window_energy(x, r0, c0, w, k_in[j], k_out[j], mx, my)
        log_ratio -= _window_energy(x, r0, c0, w, k_in[j - 1], k_out[j - 1], mx, my)
        _scan(x, fx, fy, r0, c0, w, k_in[j], k_out[j], n_sweeps, 0, mx, my, offsets, logits)
    for j in range(n - 1, 0, -1):
        _scan(x, fx, fy, r0, c0, w, k_in[j], k_out[j], n_sweeps, 1, mx, my, offsets, logits)
        log_ratio += _window_energy(x, r0, c0, w, k_in[j - 1], k_out[j - 1], mx, my)
        log_ratio -= _window_energy(x, r0, c0, w, k_in[j], k_out[j], mx, my)
    return x, log_ratio


def _check_sweeps(n_sweeps):
    if isinstance(n_sweeps, bool) or int(n_sweeps) != n_sweeps or n_sweeps < 1:
        raise ValueError(f"n_sweeps must be an integer >= 1, got {n_sweeps!r}; pass e.g. 1.")
    return int(n_sweeps)


def _check_width(width) -> int:
    if isinstance(width, bool) or int(width) != width or width < 1:
        raise ValueError(f"width must be an integer >= 1, got {width!r}; pass e.g. 8.")
    return int(width)


def _check_window(shape, row: int, col: int, width: int):
    _check_width(width)
    if not (0 <= row <= shape[0] - width and 0 <= col <= shape[1] - width):
        raise ValueError(
            f"the {width} x {width} window at ({row}, {col}) does not fit the {shape} map; "
            f"pass a corner in [0, {shape[0] - width}] x [0, {shape[1] - width}] or a smaller "
            "width."
        )


def window_energy(o, row: int, col: int, width: int, kappa: float, rank: int, *,
                  kappa_boundary: float | None = None) -> float:  # fmt: skip
    """Sum of ``log psi_kappa`` over the edges with at least one end in the window.

    Parameters
    ----------
    o : array_like (M, N)
        Doubled angles.
    row, col : int
        Top-left corner of the window.
    width : int
        Side of the (square) window.
    kappa : float
        Smoothing concentration of those edges.
    rank : int
        Rank of the potential.
    kappa_boundary : float, optional
        Coupling of the edges that leave the window (default ``kappa``).

    Returns
    -------
    float
        The window's edge energy (the part of ``log pi_j`` that depends on ``kappa_j``).

    Examples
    --------
    >>> from pmctx.vonmises.potentials import log_edge_potential
    >>> o = np.zeros((3, 3))
    >>> e = window_energy(o, 1, 1, 1, 2.0, 2)  # the centre's four edges
    >>> bool(np.isclose(e, 4 * log_edge_potential(0.0, 0.0, 2.0, 2)))
    True
    """
    o = np.ascontiguousarray(o, dtype=np.float64)
    _check_window(o.shape, row, col, width)
    modes = mode_vectors(rank)
    k_out = float(kappa if kappa_boundary is None else kappa_boundary)
    return float(
        _window_energy(o, int(row), int(col), int(width), float(kappa), k_out,
                       modes[:, 0].copy(), modes[:, 1].copy())
    )  # fmt: skip


def window_pass(o, field, row: int, col: int, width: int, kappa: float, rank: int, rng, *,
                n_sweeps: int = 1, first_colour: int = 0,
                kappa_boundary: float | None = None):  # fmt: skip
    """``T_j``: ``n_sweeps`` scans of the window's two colours at ``kappa`` (others fixed).

    Leaves invariant the map posterior whose edges touching the window have coupling
    ``kappa`` (the rest of the map is fixed, so their couplings do not matter here).

    Parameters
    ----------
    o : array_like (M, N)
        Current doubled angles (not modified).
    field : numpy.ndarray (M, N, 2)
        Natural parameters of observations and node priors.
    row, col : int
        Top-left corner of the window.
    width : int
        Side of the window.
    kappa : float
        Coupling of the edges touching the window.
    rank : int
        Rank of the potential.
    rng : numpy.random.Generator
        Random generator (seeds the compiled kernel).
    n_sweeps : int, default 1
        Scans of both colours.
    first_colour : {0, 1}, default 0
        The colour ``(row + col) % 2`` updated first (0 on the way up, 1 on the way down).
    kappa_boundary : float, optional
        Coupling of the edges that leave the window (default ``kappa``).

    Returns
    -------
    numpy.ndarray (M, N)
        The new angles (only window nodes differ).
    """
    o = np.array(o, dtype=np.float64)
    _check_window(o.shape, row, col, width)
    n_sweeps = _check_sweeps(n_sweeps)
    if first_colour not in (0, 1):
        raise ValueError(f"first_colour must be 0 or 1 (the colour updated first), got "
                         f"{first_colour!r}.")  # fmt: skip
    _, mx, my = _cached(float(kappa), 1, float(kappa), int(rank))
    field = np.asarray(field, dtype=np.float64)
    _seed(int(rng.integers(2**62)))
    _scan(o, np.ascontiguousarray(field[..., 0]), np.ascontiguousarray(field[..., 1]),
          int(row), int(col), int(width), float(kappa),
          float(kappa if kappa_boundary is None else kappa_boundary), n_sweeps,
          int(first_colour), mx, my, _OFFSETS, np.empty(mx.size))  # fmt: skip
    return wrap_angle(o)


def transition_ladder(kappa: float, n_rungs: int, *, kappa_min: float) -> np.ndarray:
    """``kappa_0 = kappa > ... > kappa_J = kappa_min``: a geometric ladder of ``n_rungs + 1``.

    Parameters
    ----------
    kappa : float
        Target concentration (> 0).
    n_rungs : int
        Heated rungs ``J >= 1``.
    kappa_min : float
        The hottest coupling, ``0 < kappa_min <= kappa``.

    Returns
    -------
    numpy.ndarray (n_rungs + 1,)
        Decreasing concentrations, the first equal to ``kappa``.

    Examples
    --------
    >>> transition_ladder(4.0, 2, kappa_min=1.0).tolist()
    [4.0, 2.0, 1.0]
    """
    if isinstance(n_rungs, bool) or int(n_rungs) != n_rungs or n_rungs < 1:
        raise ValueError(f"n_rungs must be an integer >= 1, got {n_rungs!r}; pass e.g. 10.")
    if not (0.0 < kappa_min <= kappa):
        raise ValueError(
            f"kappa_min must lie in (0, kappa] = (0, {kappa}], got {kappa_min!r}: the window "
            "is heated from kappa down to kappa_min."
        )
    ladder = np.geomspace(float(kappa), float(kappa_min), int(n_rungs) + 1)
    ladder[0] = float(kappa)
    return ladder


def window_transition(o, field, kappa: float, rank: int, rng, *, width: int = 8,
                      n_rungs: int = 10, kappa_min: float = 4.0, n_sweeps: int = 1,
                      heat: str = "all", corner=None):  # fmt: skip
    """One tempered transition on a window at a random position; Metropolis-accepted.

    Parameters
    ----------
    o : array_like (M, N)
        Current doubled angles (not modified).
    field : numpy.ndarray (M, N, 2)
        Natural parameters of observations and node priors.
    kappa : float
        The target's smoothing concentration.
    rank : int
        Rank of the potential.
    rng : numpy.random.Generator
        Random generator.
    width : int, default 8
        Side of the window (clipped to the map).
    n_rungs : int, default 10
        Heated rungs ``J``.
    kappa_min : float, default 4.0
        The hottest coupling (clipped to ``kappa``).
    n_sweeps : int, default 1
        Scans of both colours per rung and direction.
    heat : {"all", "boundary"}, default "all"
        Which edges the ladder heats: all edges touching the window, or only those that
        leave it (the window's inside keeps ``kappa`` and is decoupled from the rest of the
        map at the top of the ladder; fewer edges enter the acceptance).
    corner : tuple of int, optional
        Top-left corner of the window; by default uniform over the positions that fit.

    Returns
    -------
    o : numpy.ndarray (M, N)
        The new angles (a copy of ``o`` when refused).
    accepted : bool
        Whether the transition was accepted.
    """
    o = np.ascontiguousarray(o, dtype=np.float64)
    field = np.asarray(field, dtype=np.float64)
    width = min(_check_width(width), *o.shape)
    if corner is None:
        corner = (rng.integers(o.shape[0] - width + 1), rng.integers(o.shape[1] - width + 1))
    row, col = int(corner[0]), int(corner[1])
    _check_window(o.shape, row, col, width)
    n_rungs = int(n_rungs) if not isinstance(n_rungs, bool) and n_rungs == int(n_rungs) else n_rungs
    if heat not in ("all", "boundary"):
        raise ValueError(f"heat must be 'all' or 'boundary', got {heat!r}.")
    ladder, mx, my = _cached(float(kappa), n_rungs, min(float(kappa_min), float(kappa)), int(rank))
    k_in = ladder if heat == "all" else np.full(ladder.size, float(kappa))
    _seed(int(rng.integers(2**62)))
    x, log_ratio = _transition(
        o, np.ascontiguousarray(field[..., 0]), np.ascontiguousarray(field[..., 1]), row, col,
        int(width), k_in, ladder, _check_sweeps(n_sweeps), mx, my, _OFFSETS,
    )  # fmt: skip
    accepted = _accept(log_ratio, rng)
    return (wrap_angle(x) if accepted else o.copy()), accepted


def _accept(log_ratio: float, rng) -> bool:
    return bool(log_ratio >= 0.0 or np.log(rng.random()) < log_ratio)
