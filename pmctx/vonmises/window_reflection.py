"""Window reflections: an exact Metropolis-Hastings move that creates and annihilates pinwheels.

At a large ``kappa`` the map posterior can hold a second mode in which a small patch takes
the mirror image of its orientations (a pinwheel pair more or fewer); block Gibbs sweeps
leave it only through improbable intermediate maps (about every thousand sweeps on the demo
map at ``kappa = 5``). This move proposes that mirror image directly: pick a rectangular
window ``W`` (position and size drawn independently of the state), reflect its doubled angles

    o_n -> c - o_n  for n in W,

and accept with the Metropolis-Hastings probability. The reflection ``T_c`` is an involution
with unit Jacobian. The axis ``c`` is drawn as ``c = mu(O) + eps``, ``eps ~ VonMises(0,
lambda)``, around the axis that makes the reflected window edge nodes match their outside
neighbours,

    mu(O) = arg sum_{(i, b): i in W, b not in W} exp(i (o_i + o_b))

(``c - o_i = o_b`` exactly when ``c = o_i + o_b``). ``mu`` depends on the state, so the
reverse proposal density enters the ratio: with ``O' = T_c(O)``

    log alpha = log p(O' | Z) - log p(O | Z) + lambda cos(c - mu(O')) - lambda cos(c - mu(O)),

the von Mises normalisers cancelling. Only the window's node terms and the edges that touch
it change, so a proposal costs ``O(|W|)`` operations. The move is not ergodic by itself and
always follows a block Gibbs sweep (:func:`reflection_sweep`).

Examples
--------
>>> import numpy as np
>>> from pmctx.vonmises.window_reflection import reflection_sweep
>>> rng = np.random.default_rng(0)
>>> o = reflection_sweep(np.zeros((6, 6)), np.zeros((6, 6, 2)), 5.0, 5, rng)
>>> o.shape
(6, 6)
"""

from __future__ import annotations

import math

import numba
import numpy as np

from pmctx.vonmises.augmented import augmented_sweep

__all__ = [
    "DEFAULT_CONCENTRATION",
    "DEFAULT_WINDOW_SIZES",
    "reflection_moves",
    "reflection_sweep",
]

#: Sides of the square and oblong windows proposed (rows and columns drawn independently).
DEFAULT_WINDOW_SIZES = (3, 4, 5)
#: ``lambda``, the concentration of the axis around ``mu(O)``.
DEFAULT_CONCENTRATION = 5.0
#: Proposals per sweep, as a fraction of the number of nodes.
DEFAULT_PROPOSALS_PER_NODE = 0.25


@numba.njit(cache=True)
def _log_psi(ca, sa, cb, sb, kx, ky):
    x = ca + cb
    y = sa + sb
    peak = kx[0] * x + ky[0] * y
    for k in range(1, kx.shape[0]):
        peak = max(peak, kx[k] * x + ky[k] * y)
    acc = 0.0
    for k in range(kx.shape[0]):
        acc += math.exp(kx[k] * x + ky[k] * y - peak)
    return peak + math.log(acc)


@numba.njit(cache=True)
def _axis(cos_o, sin_o, r0, r1, c0, c1, new, cos_c, sin_c):
    """``mu`` of the window ``[r0, r1) x [c0, c1)``; ``new``: with the window reflected."""
    n_rows, n_cols = cos_o.shape
    zx = 0.0
    zy = 0.0
    for r in range(r0, r1):
        for inner, outer in ((c0, c0 - 1), (c1 - 1, c1)):
            if 0 <= outer < n_cols:
                ci, si = _reflected(cos_o[r, inner], sin_o[r, inner], new, cos_c, sin_c)
                zx += ci * cos_o[r, outer] - si * sin_o[r, outer]
                zy += si * cos_o[r, outer] + ci * sin_o[r, outer]
    for col in range(c0, c1):
        for inner, outer in ((r0, r0 - 1), (r1 - 1, r1)):
            if 0 <= outer < n_rows:
                ci, si = _reflected(cos_o[inner, col], sin_o[inner, col], new, cos_c, sin_c)
                zx += ci * cos_o[outer, col] - si * sin_o[outer, col]
                zy += si * cos_o[outer, col] + ci * sin_o[outer, col]
    return math.atan2(zy, zx)


@numba.njit(cache=True, inline="always")
def _reflected(cos_a, sin_a, new, cos_c, sin_c):
    """``cos, sin`` of ``c - a`` when ``new``, else of ``a``."""
    if new:
        return cos_c * cos_a + sin_c * sin_a, sin_c * cos_a - cos_c * sin_a
    return cos_a, sin_a


@numba.njit(cache=True)
def _window_delta(cos_o, sin_o, field, r0, r1, c0, c1, cos_c, sin_c, kx, ky):
    """``log p(T_c O) - log p(O)``: the window's node terms and every edge touching it."""
    n_rows, n_cols = cos_o.shape
    delta = 0.0
    for r in range(r0, r1):
        for col in range(c0, c1):
            ca, sa = cos_o[r, col], sin_o[r, col]
            na, ma = _reflected(ca, sa, True, cos_c, sin_c)
            delta += field[r, col, 0] * (na - ca) + field[r, col, 1] * (ma - sa)
            # Each edge once: to the right and below from inside the window, and the edges
            # entering the window from the left and from above.
            for dr, dc in ((0, 1), (1, 0), (0, -1), (-1, 0)):
                rr = r + dr
                cc = col + dc
                if rr < 0 or rr >= n_rows or cc < 0 or cc >= n_cols:
                    continue
                inside = r0 <= rr < r1 and c0 <= cc < c1
                if inside and (dr < 0 or dc < 0):
                    continue
                cb, sb = cos_o[rr, cc], sin_o[rr, cc]
                nb, mb = _reflected(cb, sb, inside, cos_c, sin_c)
                delta += _log_psi(na, ma, nb, mb, kx, ky) - _log_psi(ca, sa, cb, sb, kx, ky)
    return delta


@numba.njit(cache=True)
def _reflection_moves(o, field, kx, ky, concentration, rows, cols, heights, widths, eps, log_u):
    cos_o = np.cos(o)
    sin_o = np.sin(o)
    accepted = 0
    for t in range(rows.shape[0]):
        r0, c0 = rows[t], cols[t]
        r1, c1 = r0 + heights[t], c0 + widths[t]
        mu = _axis(cos_o, sin_o, r0, r1, c0, c1, False, 1.0, 0.0)
        c = mu + eps[t]
        cos_c, sin_c = math.cos(c), math.sin(c)
        mu_new = _axis(cos_o, sin_o, r0, r1, c0, c1, True, cos_c, sin_c)
        log_alpha = _window_delta(cos_o, sin_o, field, r0, r1, c0, c1, cos_c, sin_c, kx, ky)
        log_alpha += concentration * (math.cos(c - mu_new) - math.cos(c - mu))
        if log_u[t] < log_alpha:
            accepted += 1
            for r in range(r0, r1):
                for col in range(c0, c1):
                    o[r, col] = (c - o[r, col] + math.pi) % (2.0 * math.pi) - math.pi
                    cos_o[r, col] = math.cos(o[r, col])
                    sin_o[r, col] = math.sin(o[r, col])
    return accepted


def reflection_moves(
    o,
    field,
    kappa: float,
    rank: int,
    rng,
    *,
    n_proposals: int,
    sizes=DEFAULT_WINDOW_SIZES,
    concentration: float = DEFAULT_CONCENTRATION,
):
    """``n_proposals`` window reflections, one after another, each accepted or not by MH.

    Parameters
    ----------
    o : ndarray, shape (M, N)
        Current doubled angles (not modified).
    field : ndarray, shape (M, N, 2)
        Natural parameters of observations and node priors.
    kappa : float
        Smoothing concentration.
    rank : int
        Rank ``R`` (``R + 1`` modes).
    rng : numpy.random.Generator
    n_proposals : int
        Number of proposals (>= 0).
    sizes : sequence of int, default (3, 4, 5)
        Window sides; each proposal draws its height and width from ``sizes`` (clipped to the
        map) and its position uniformly among those where it fits.
    concentration : float, default 5.0
        ``lambda`` of the axis's von Mises spread around ``mu(O)`` (> 0).

    Returns
    -------
    o : ndarray, shape (M, N)
        The map after the proposals.
    n_accepted : int
        Proposals accepted.
    """
    o = np.array(o, dtype=np.float64, order="C")
    n_rows, n_cols = o.shape
    sizes = np.asarray(sizes, dtype=np.int64)
    heights = np.minimum(rng.choice(sizes, n_proposals), n_rows)
    widths = np.minimum(rng.choice(sizes, n_proposals), n_cols)
    rows = (rng.random(n_proposals) * (n_rows - heights + 1)).astype(np.int64)
    cols = (rng.random(n_proposals) * (n_cols - widths + 1)).astype(np.int64)
    eps = rng.vonmises(0.0, concentration, n_proposals)
    log_u = np.log(rng.random(n_proposals))
    phases = 2.0 * np.pi * np.arange(rank + 1) / (rank + 1)
    kx, ky = kappa * np.cos(phases), kappa * np.sin(phases)
    field = np.ascontiguousarray(field, dtype=np.float64)
    n_accepted = _reflection_moves(
        o, field, kx, ky, float(concentration), rows, cols, heights, widths, eps, log_u
    )
    return o, int(n_accepted)


def reflection_sweep(o, field, kappa: float, rank: int, rng, *, n_proposals: int | None = None):
    """An augmented block Gibbs sweep, then window reflections.

    Parameters
    ----------
    o : ndarray, shape (M, N)
        Current doubled angles (not modified).
    field : ndarray, shape (M, N, 2)
        Natural parameters of observations and node priors.
    kappa : float
        Smoothing concentration.
    rank : int
        Rank ``R`` (``R + 1`` modes).
    rng : numpy.random.Generator
    n_proposals : int, optional
        Reflections per sweep (default: a quarter of the number of nodes, at least one).

    Returns
    -------
    ndarray, shape (M, N)
    """
    o = augmented_sweep(o, field, kappa, rank, rng)
    if n_proposals is None:
        n_proposals = max(1, int(DEFAULT_PROPOSALS_PER_NODE * o.size))
    return reflection_moves(o, field, kappa, rank, rng, n_proposals=n_proposals)[0]
