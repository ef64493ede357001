"""Exact reference computations on tiny grids, for validating the samplers.

Continuous angles cannot be enumerated, so the joint density of a tiny grid is integrated
numerically over a product of angle bins (midpoint rule on a fine periodic grid, which is
spectrally accurate for these smooth periodic integrands), giving exact bin probabilities
that a sampler's binned draws must match. Rejection sampling gives exact prior draws for
Geweke tests.

Examples
--------
>>> import numpy as np
>>> from tests.oracles.vonmises_exact import binned_joint
>>> probs, _ = binned_joint(np.zeros((1, 2, 2)), 1.0, 2, n_bins=2, points_per_bin=8)
>>> probs.shape, round(float(probs.sum()), 12)
((2, 2), 1.0)
"""

from __future__ import annotations

import itertools

import numpy as np
from scipy.special import logsumexp

from pmctx.vonmises.potentials import log_edge_potential

__all__ = ["bin_index", "binned_joint", "grid_log_density", "rejection_prior"]

_MAX_POINTS = 20_000_000


def grid_log_density(field, kappa: float, rank: int, points: int):
    """Unnormalised log joint of every node on a ``points``-per-angle midpoint grid.

    Returns an array with one axis per node (row-major node order) and the angle grid.

    Parameters
    ----------
    field : numpy.ndarray (M, N, 2)
        Natural parameters (tiny grids only).
    kappa : float
        Smoothing concentration.
    rank : int
        Rank of the potential.
    points : int
        Grid points per angle.

    Returns
    -------
    log_density : numpy.ndarray
        One axis of length ``points`` per node.
    angles : numpy.ndarray (points,)
        The angle grid.
    """
    field = np.asarray(field, dtype=np.float64)
    n_rows, n_cols = field.shape[:2]
    n_nodes = n_rows * n_cols
    if points**n_nodes > _MAX_POINTS:
        raise ValueError(f"{points}**{n_nodes} grid points is too many for exact integration.")
    angles = -np.pi + (np.arange(points) + 0.5) * 2.0 * np.pi / points
    unit = np.stack([np.cos(angles), np.sin(angles)], axis=-1)
    log_psi = log_edge_potential(angles[:, None], angles[None, :], kappa, rank)
    total = np.zeros((points,) * n_nodes)

    def expand(values, axes):
        shape = [1] * n_nodes
        for ax in axes:
            shape[ax] = points
        return values.reshape(shape)

    for r, c in itertools.product(range(n_rows), range(n_cols)):
        node = r * n_cols + c
        total = total + expand(unit @ field[r, c], [node])
        if c + 1 < n_cols:
            total = total + expand(log_psi, [node, node + 1])
        if r + 1 < n_rows:
            total = total + expand(log_psi, [node, node + n_cols])
    return total, angles


def binned_joint(field, kappa: float, rank: int, *, n_bins: int = 3, points_per_bin: int = 12):
    """Exact probabilities of every product of ``n_bins`` equal angle bins per node.

    Returns ``probs`` (one axis of length ``n_bins`` per node) and the fine-grid normalised
    joint (for exact expectations).

    Parameters
    ----------
    field : numpy.ndarray (M, N, 2)
        Natural parameters (tiny grids only).
    kappa : float
        Smoothing concentration.
    rank : int
        Rank of the potential.
    n_bins : int, default 3
        Bins per angle.
    points_per_bin : int, default 12
        Grid points per bin.

    Returns
    -------
    probs : numpy.ndarray
        Probability of each product of bins.
    fine : tuple
        ``(joint, angles)``: the normalised fine-grid joint and its angle grid.
    """
    log_density, angles = grid_log_density(field, kappa, rank, n_bins * points_per_bin)
    joint = np.exp(log_density - logsumexp(log_density))
    n_nodes = joint.ndim
    split = joint.reshape(sum(((n_bins, points_per_bin) for _ in range(n_nodes)), ()))
    probs = split.sum(axis=tuple(range(1, 2 * n_nodes, 2)))
    return probs, (joint, angles)


def bin_index(o, n_bins: int) -> np.ndarray:
    """Flat index of each sampled grid's product bin; ``o`` has shape ``(draws, M, N)``.

    Parameters
    ----------
    o : array_like (draws, M, N)
        Sampled grids of angles in ``[-pi, pi)``.
    n_bins : int
        Bins per angle.

    Returns
    -------
    numpy.ndarray (draws,)
        Flat index of each draw's product bin.
    """
    o = np.asarray(o, dtype=np.float64)
    per_node = np.floor((o + np.pi) / (2.0 * np.pi) * n_bins).astype(np.int64)
    per_node = np.clip(per_node, 0, n_bins - 1).reshape(len(o), -1)
    return np.ravel_multi_index(per_node.T, (n_bins,) * per_node.shape[1])


def rejection_prior(shape, kappa: float, rank: int, n_draws: int, rng) -> np.ndarray:
    """Exact draws from the flat-node-prior map ``p(O) ∝ prod psi`` on a tiny grid.

    Proposes uniform angles and accepts with probability ``prod_e psi_e / max psi^{#edges}``;
    practical only for few edges and small ``kappa``.

    Parameters
    ----------
    shape : tuple of int
        Grid shape ``(M, N)``.
    kappa : float
        Smoothing concentration.
    rank : int
        Rank of the potential.
    n_draws : int
        Draws wanted.

    rng : numpy.random.Generator
        Random generator.

    Returns
    -------
    numpy.ndarray (n_draws, M, N)
        Exact prior draws.
    """
    n_rows, n_cols = shape
    n_edges = n_rows * (n_cols - 1) + (n_rows - 1) * n_cols
    log_max = float(log_edge_potential(0.0, 0.0, kappa, rank))
    out = []
    while sum(len(x) for x in out) < n_draws:
        o = rng.uniform(-np.pi, np.pi, size=(4 * n_draws, n_rows, n_cols))
        log_acc = log_edge_potential(o[:, :, :-1], o[:, :, 1:], kappa, rank).sum(axis=(1, 2))
        log_acc += log_edge_potential(o[:, :-1, :], o[:, 1:, :], kappa, rank).sum(axis=(1, 2))
        log_acc -= n_edges * log_max
        out.append(o[np.log(rng.random(len(o))) < log_acc])
    return np.concatenate(out)[:n_draws]
