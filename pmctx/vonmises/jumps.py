"""Pinwheel-pair jumps for the orientation map: exact Metropolis moves learnt during tuning.

At a ``kappa`` above what the data favour, the map posterior can hold a minority layout in
which a small patch carries an extra pinwheel pair (on the demo map at ``kappa = 5``: about
5 % of the mass, entered about once per thousand block-Gibbs sweeps). Both layouts are
smooth, and the posterior mean of ``exp(i o)`` in the minority layout is close to the
majority's turned by a fixed, smooth field ``delta`` that winds around the pair's two cores.

A **jump** proposes ``o' = o + s delta`` with a fair sign ``s = +-1``. The map from ``o`` to
``o'`` is a translation on the torus (unit Jacobian) and ``s`` and ``-s`` are equally likely,
so the proposal is symmetric and Metropolis' ratio ``p(o') / p(o)`` makes the move exact; it
needs only the node and edge terms that ``delta`` touches (:func:`propose_jumps`).

The fields are learnt from the chain's own tuning draws (:func:`learn_jumps`) and fixed when
tuning ends, so the stored draws come from an exact, time-homogeneous kernel (as with NUTS'
step size). Learning: plaquettes whose pinwheel occupancy is neither 0 nor above one half
are grouped into clusters; in each cluster's window the states are classed by their number
of pinwheels, and ``delta`` is the angle between the mean ``exp(i o)`` of the commonest class
and of the class with a pair more or less (where at least ``min_states`` draws hold it),
kept where it turns by more than ``min_shift``.

Examples
--------
>>> import numpy as np
>>> from pmctx.vonmises.jumps import JumpMove, propose_jumps
>>> move = JumpMove.from_field(np.pad([[0.0, 2.0], [0.0, 0.0]], 1))
>>> o, field = np.zeros((4, 4)), np.zeros((4, 4, 2))
>>> _, accepted = propose_jumps(o, field, 1.0, 2, [move], 5, np.random.default_rng(0))
>>> 0 <= accepted <= 5
True
"""

from __future__ import annotations

from typing import NamedTuple

import numba as nb
import numpy as np
from scipy import ndimage

from pmctx.vonmises.maps import pinwheel_charges
from pmctx.vonmises.potentials import mode_vectors

__all__ = [
    "DEFAULT_JUMPS_PER_SWEEP",
    "JumpMove",
    "TuningStates",
    "jump_log_ratio",
    "learn_jumps",
    "propose_jumps",
]

#: Proposals of each learnt jump after every sweep. On the demo map at kappa 5 (one learnt
#: move of 46 nodes), 10 per sweep took the pinwheel count's bulk ESS from 29 to 967 in
#: 4 x 9000 augmented sweeps (30 per sweep: 1075).
DEFAULT_JUMPS_PER_SWEEP = 10
#: Leading fraction of the tuning draws left out of learning (burn-in: chains start at the
#: data with random angles where it is missing).
BURN_IN_FRACTION = 0.125
#: Bytes of tuning draws a chain keeps for learning (float32 maps, strided when full).
TUNING_BYTES = 32 * 2**20


class JumpMove(NamedTuple):
    """A fixed translation ``delta`` of some nodes, with the edges its ratio needs.

    Parameters
    ----------
    nodes : numpy.ndarray of int (S,)
        Flat (row-major) indices of the shifted nodes.
    shift : numpy.ndarray (S,)
        Their shifts (doubled angles, radians).
    edges : numpy.ndarray of int (E, 2)
        Flat endpoints of every 4-neighbour edge with an endpoint among ``nodes``.
    edge_shift : numpy.ndarray (E, 2)
        The shifts of those endpoints (0 outside ``nodes``).
    """

    nodes: np.ndarray
    shift: np.ndarray
    edges: np.ndarray
    edge_shift: np.ndarray

    @classmethod
    def from_field(cls, delta) -> JumpMove:
        """The move of a full ``(M, N)`` shift field (zero where nodes stay).

        Parameters
        ----------
        delta : array_like (M, N)
            Shift of each node.

        Returns
        -------
        JumpMove
            The move.
        """
        delta = np.asarray(delta, dtype=np.float64)
        M, N = delta.shape
        index = np.arange(M * N).reshape(M, N)
        moved = delta != 0
        pairs = []
        for a, b, moved_edge in (
            (index[:, :-1], index[:, 1:], moved[:, :-1] | moved[:, 1:]),
            (index[:-1, :], index[1:, :], moved[:-1, :] | moved[1:, :]),
        ):
            pairs.append(np.stack([a[moved_edge], b[moved_edge]], axis=-1))
        edges = np.concatenate(pairs).astype(np.int64).reshape(-1, 2)
        flat = delta.ravel()
        nodes = np.flatnonzero(moved.ravel()).astype(np.int64)
        return cls(nodes, flat[nodes].copy(), edges, flat[edges].copy())


@nb.njit(cache=True)
def _log_psi(a, b, kx, ky):
    ca, sa, cb, sb = np.cos(a), np.sin(a), np.cos(b), np.sin(b)
    top = -np.inf
    for k in range(kx.shape[0]):
        top = max(top, kx[k] * (ca + cb) + ky[k] * (sa + sb))
    total = 0.0
    for k in range(kx.shape[0]):
        total += np.exp(kx[k] * (ca + cb) + ky[k] * (sa + sb) - top)
    return top + np.log(total)


@nb.njit(cache=True)
def _log_ratio(o, field, kx, ky, nodes, shift, edges, edge_shift, sign):
    total = 0.0
    for s in range(nodes.shape[0]):
        i = nodes[s]
        new = o[i] + sign * shift[s]
        total += field[i, 0] * (np.cos(new) - np.cos(o[i]))
        total += field[i, 1] * (np.sin(new) - np.sin(o[i]))
    for e in range(edges.shape[0]):
        a, b = o[edges[e, 0]], o[edges[e, 1]]
        new_a, new_b = a + sign * edge_shift[e, 0], b + sign * edge_shift[e, 1]
        total += _log_psi(new_a, new_b, kx, ky) - _log_psi(a, b, kx, ky)
    return total


@nb.njit(cache=True)
def _jumps(o, field, kx, ky, nodes, shift, edges, edge_shift, signs, uniforms):
    accepted = 0
    for t in range(signs.shape[0]):
        ratio = _log_ratio(o, field, kx, ky, nodes, shift, edges, edge_shift, signs[t])
        if np.log(uniforms[t]) < ratio:
            accepted += 1
            for s in range(nodes.shape[0]):
                i = nodes[s]
                o[i] = (o[i] + signs[t] * shift[s] + np.pi) % (2.0 * np.pi) - np.pi
    return accepted


def _mode_weights(kappa: float, rank: int):
    weights = kappa * mode_vectors(rank)
    return np.ascontiguousarray(weights[:, 0]), np.ascontiguousarray(weights[:, 1])


def jump_log_ratio(o, field, kappa: float, rank: int, move: JumpMove, sign: float) -> float:
    """``log p(o + sign delta) - log p(o)`` of the map posterior (the move's ratio).

    Parameters
    ----------
    o : array_like (M, N)
        Doubled angles.
    field : numpy.ndarray (M, N, 2)
        Natural parameters of the observations and node prior.
    kappa : float
        Smoothing concentration.
    rank : int
        Rank of the edge potential.
    move : JumpMove
        The move.
    sign : float
        ``+1`` or ``-1``.

    Returns
    -------
    float
        The log ratio.
    """
    kx, ky = _mode_weights(kappa, rank)
    flat = np.ascontiguousarray(o, dtype=np.float64).ravel()
    nodes_field = np.ascontiguousarray(field, dtype=np.float64).reshape(-1, 2)
    return float(_log_ratio(flat, nodes_field, kx, ky, *move, float(sign)))


def propose_jumps(o, field, kappa: float, rank: int, moves, n_proposals: int, rng):
    """``n_proposals`` Metropolis jumps of every move in ``moves``, in turn.

    Parameters
    ----------
    o : array_like (M, N)
        Doubled angles (not modified).
    field : numpy.ndarray (M, N, 2)
        Natural parameters of the observations and node prior.
    kappa : float
        Smoothing concentration.
    rank : int
        Rank of the edge potential.
    moves : sequence of JumpMove
        The fixed moves.
    n_proposals : int
        Proposals per move.
    rng : numpy.random.Generator
        Random generator (fair signs and uniforms).

    Returns
    -------
    o : numpy.ndarray (M, N)
        The new map.
    accepted : int
        Accepted jumps.
    """
    o = np.array(o, dtype=np.float64, order="C")
    if not moves or n_proposals < 1:
        return o, 0
    flat = o.reshape(-1)
    nodes_field = np.ascontiguousarray(field, dtype=np.float64).reshape(-1, 2)
    kx, ky = _mode_weights(kappa, rank)
    accepted = 0
    for move in moves:
        signs = rng.choice(np.array([-1.0, 1.0]), size=n_proposals)
        uniforms = rng.random(n_proposals)
        accepted += int(_jumps(flat, nodes_field, kx, ky, *move, signs, uniforms))
    return o, accepted


class TuningStates:
    """The tuning draws a chain learns its jumps from, within a memory budget.

    Keeps every ``stride``-th map (float32); when full it doubles the stride and drops the
    maps off it, so it always holds an even subsample of the draws seen so far.

    Parameters
    ----------
    shape : tuple of int
        Map shape ``(M, N)``.
    budget_bytes : int, default :data:`TUNING_BYTES`
        Memory for the kept maps.
    """

    def __init__(self, shape, budget_bytes: int = TUNING_BYTES):
        self.capacity = max(2, int(budget_bytes) // (4 * int(np.prod(shape))))
        self.reset()

    def reset(self) -> None:
        """Forget every draw (a new chain)."""
        self.maps, self.draws, self.stride, self.seen = [], [], 1, 0

    def add(self, o) -> None:
        """Offer one tuning draw.

        Parameters
        ----------
        o : array_like (M, N)
            The chain's map after this draw.
        """
        if self.seen % self.stride == 0:
            self.maps.append(np.asarray(o, dtype=np.float32).copy())
            self.draws.append(self.seen)
            if len(self.maps) >= self.capacity:
                self.stride *= 2
                kept = [k for k, d in enumerate(self.draws) if d % self.stride == 0]
                self.maps = [self.maps[k] for k in kept]
                self.draws = [self.draws[k] for k in kept]
        self.seen += 1

    def after_burn_in(self) -> np.ndarray:
        """The kept maps past the first :data:`BURN_IN_FRACTION` of the draws seen.

        Returns
        -------
        numpy.ndarray (n, M, N)
            The maps, float64.
        """
        start = BURN_IN_FRACTION * self.seen
        keep = [m for m, d in zip(self.maps, self.draws, strict=True) if d >= start]
        return np.asarray(keep, dtype=np.float64)


def learn_jumps(
    states, *, min_states: int = 5, margin: int = 4, min_shift: float = 0.087, significance=2.0
):
    """Jump moves between the pinwheel layouts that ``states`` visit (see the module notes).

    Parameters
    ----------
    states : array_like (n, M, N)
        Maps from the chain (doubled angles), after burn-in.
    min_states : int, default 5
        Fewest maps in the rarer layout for a move to be learnt.
    margin : int, default 4
        Nodes around a cluster's window that its move may shift.
    min_shift : float, default 0.087
        Smallest shift kept, in radians of doubled angle (5 degrees).
    significance : float, default 2.0
        Shifts within this many standard errors of zero (from the two layouts' circular
        spreads and counts) are dropped as noise.

    Returns
    -------
    list of JumpMove
        The learnt moves (empty when no cluster changes its pinwheel count).
    """
    states = np.asarray(states, dtype=np.float64)
    if states.ndim != 3 or states.shape[0] < 2 * min_states:
        return []
    charges = np.sign(pinwheel_charges(states / 2.0)).astype(np.int8)
    occupied = charges != 0
    occupancy = occupied.mean(axis=0)
    candidate = (occupancy > 0) & (occupancy <= 0.5)
    if not candidate.any():  # also a map of one row or column: no plaquettes
        return []
    grown = ndimage.binary_dilation(candidate, structure=np.ones((3, 3), bool))
    labels, _ = ndimage.label(grown, structure=np.ones((3, 3), bool))
    moves = []
    for window in ndimage.find_objects(labels):
        layouts = _layouts(charges[(slice(None), *window)], min_states)
        if layouts is None:
            continue
        common, rare = layouts
        # The pair's plaquettes: where the rarer layout holds a pinwheel much more often.
        inside = occupied[(slice(None), *window)]
        gain = inside[rare].mean(axis=0) - inside[common].mean(axis=0)
        sites = np.zeros(occupancy.shape, bool)
        sites[window] = gain > 0.25
        delta = _shift_field(states, common, rare, sites, margin, min_shift, significance)
        if delta is not None:
            moves.append(JumpMove.from_field(delta))
    return moves


def _layouts(charges, min_states: int):
    """Boolean masks of the commonest layout of a window and of the one with a pair more or
    less (by numbers of +1/2 and -1/2 pinwheels), or None when the latter is too rare."""
    positive = (charges > 0).sum(axis=(1, 2))
    negative = (charges < 0).sum(axis=(1, 2))
    keys = positive * 10_000 + negative
    values, sizes = np.unique(keys, return_counts=True)
    common = values[np.argmax(sizes)]
    size = dict(zip(values.tolist(), sizes.tolist(), strict=True))
    n_rare, rare = max((size.get(common + d, 0), common + d) for d in (-10_001, 10_001))
    if n_rare < min_states:
        return None
    return keys == common, keys == rare


def _shift_field(states, common, rare, sites, margin, min_shift, significance):
    """The mean turn from the common to the rare layout at nodes near the pair's ``sites``."""
    if not sites.any():
        return None
    # Plaquette (i, j) has corner nodes (i..i+1, j..j+1); take nodes within the margin.
    corners = np.zeros(states.shape[1:], bool)
    corners[:-1, :-1] |= sites
    corners[1:, 1:] |= sites
    near = ndimage.binary_dilation(corners, iterations=margin, structure=np.ones((3, 3), bool))
    phasors = np.exp(1j * states[:, near])
    means, variances = [], []
    for members in (rare, common):
        mean = phasors[members].mean(axis=0)
        # Squared standard error of the mean angle: circular variance -2 log R over n.
        variances.append(-2.0 * np.log(np.clip(np.abs(mean), 1e-12, 1.0)) / members.sum())
        means.append(mean)
    shift = np.angle(means[0] / means[1])
    noise = significance * np.sqrt(variances[0] + variances[1])
    shift[np.abs(shift) < np.maximum(min_shift, noise)] = 0.0
    if not shift.any():
        return None
    delta = np.zeros(states.shape[1:])
    delta[near] = shift
    return delta
