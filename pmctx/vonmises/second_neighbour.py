"""Second-neighbour couplings: an orientation-map prior with a preferred smoothness scale.

The nearest-neighbour map prior penalises only differences between neighbouring doubled
angles, like a first-order (gradient) smoothing prior; real orientation maps are smooth at
the pixel scale and periodic at the column spacing. This prior adds a coupling between
nodes two pixels apart along rows and columns, of signed strength ``kappa2``::

    psi2(o_a, o_c) = sum_{k=0}^{R} exp(|kappa2| r_k . (u(o_a) + sign(kappa2) u(o_c))),

with ``u(o) = (cos o, sin o)`` and the ``R + 1`` mode vectors ``r_k`` of the nearest-neighbour
potential (``a`` is the upper or left end; a repulsive potential is symmetric in its ends when
``R + 1`` is even, as at the default rank 5). A positive ``kappa2`` pulls the two angles
together (a wider smoothing kernel); a negative one pushes ``o_c`` towards ``o_a + pi``, which
with attractive nearest neighbours penalises curvature rather than slope (a Gaussian field with
nearest couplings ``-4`` and second-neighbour ``+1`` in its precision is the second-order random
walk, whose spectrum favours smooth maps; stronger repulsion favours a wavelength, as in the
Swift-Hohenberg model of orientation maps).

Sampling stays exact block Gibbs on a joint with one discrete mode per second-neighbour
edge: given the angles, each edge's mode is a categorical with probabilities proportional to
``exp(|kappa2| r_k . (u(o_a) + sign u(o_c)))``; given the modes, every second-neighbour edge
is a single term ``exp(v . u(o))`` at each end (``v = |kappa2| r_k`` at ``a``,
``kappa2 r_k`` at ``c``), which adds to the node field, so the nearest-neighbour sampler's
column and row passes (:func:`pmctx.vonmises.augmented.augmented_sweep`) draw the angles
exactly given them. :func:`second_neighbour_sweep` redraws the modes before each pass. The
marginal of the angles is the prior above (tests: exact enumeration on tiny grids).

Examples
--------
>>> import numpy as np
>>> from pmctx.vonmises.second_neighbour import second_neighbour_sweep
>>> rng = np.random.default_rng(0)
>>> o = second_neighbour_sweep(np.zeros((5, 4)), np.zeros((5, 4, 2)), 3.0, 5, rng, kappa2=-0.6)
>>> o.shape
(5, 4)
"""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

from pmctx.vonmises.augmented import augmented_sweep, sample_edge_modes
from pmctx.vonmises.potentials import log_joint, mode_vectors

__all__ = ["log_joint_second", "log_second_potential", "second_field", "second_neighbour_sweep"]


def log_second_potential(o_a, o_c, kappa2: float, rank: int):
    """``log psi2(o_a, o_c)`` of the signed second-neighbour potential (broadcasts).

    Parameters
    ----------
    o_a, o_c : array_like
        Angles of the two ends (broadcast).
    kappa2 : float
        Signed strength: positive attracts, negative repels (towards ``o_a + pi``).
    rank : int
        Rank ``R`` (``R + 1`` modes).

    Returns
    -------
    numpy.ndarray
        ``log psi2``.

    Examples
    --------
    >>> apart, equal = log_second_potential(0.0, [np.pi, 0.0], -1.0, 3)
    >>> bool(apart > equal)
    True
    """
    phases = 2.0 * np.pi * np.arange(rank + 1) / (rank + 1)
    a = np.asarray(o_a, dtype=np.float64)[..., None]
    c = np.asarray(o_c, dtype=np.float64)[..., None]
    strength = abs(float(kappa2))
    sign = 1.0 if kappa2 >= 0 else -1.0
    return logsumexp(strength * (np.cos(a - phases) + sign * np.cos(c - phases)), axis=-1)


def second_field(o, kappa2: float, rank: int, rng) -> np.ndarray:
    """Draw every second-neighbour edge's mode given ``o``; return the field they induce.

    Edges join ``(i, j)`` to ``(i, j + 2)`` and ``(i, j)`` to ``(i + 2, j)``. An edge of
    mode ``k`` adds ``|kappa2| r_k`` to the natural vector of its first end and ``kappa2 r_k``
    to its second.

    Parameters
    ----------
    o : numpy.ndarray (M, N)
        Current doubled angles.
    kappa2 : float
        Signed second-neighbour strength.
    rank : int
        Rank ``R``.
    rng : numpy.random.Generator
        Random generator.

    Returns
    -------
    numpy.ndarray (M, N, 2)
        Natural parameters contributed by the edges (zeros when ``kappa2`` is 0).
    """
    o = np.asarray(o, dtype=np.float64)
    field = np.zeros((*o.shape, 2))
    strength = abs(float(kappa2))
    if strength == 0.0:
        return field
    sign = 1.0 if kappa2 > 0 else -1.0
    modes = mode_vectors(rank)
    # u(o + pi) = -u(o): a repulsive edge is the attractive kernel on (o_a, o_c + pi).
    shift = 0.0 if sign > 0 else np.pi
    if o.shape[1] > 2:
        k = sample_edge_modes(o[:, :-2], o[:, 2:] + shift, strength, modes, rng)
        field[:, :-2] += strength * modes[k]
        field[:, 2:] += sign * strength * modes[k]
    if o.shape[0] > 2:
        k = sample_edge_modes(o[:-2, :], o[2:, :] + shift, strength, modes, rng)
        field[:-2, :] += strength * modes[k]
        field[2:, :] += sign * strength * modes[k]
    return field


def second_neighbour_sweep(o, field, kappa: float, rank: int, rng, *, kappa2: float = 0.0):
    """One exact block-Gibbs sweep of the map with nearest- and second-neighbour couplings.

    Draws the second-neighbour modes, then the column pass of the nearest-neighbour sampler
    with their field added; again the modes, then the row pass. With ``kappa2 = 0`` it
    equals :func:`~pmctx.vonmises.augmented.augmented_sweep`.

    Parameters
    ----------
    o : numpy.ndarray (M, N)
        Current doubled angles (not modified).
    field : numpy.ndarray (M, N, 2)
        Natural parameters of observations and node priors.
    kappa : float
        Nearest-neighbour smoothing concentration.
    rank : int
        Rank ``R`` of both potentials.
    rng : numpy.random.Generator
        Random generator.
    kappa2 : float, default 0.0
        Signed second-neighbour strength.

    Returns
    -------
    numpy.ndarray (M, N)
        The new doubled angles.
    """
    if kappa2 == 0.0:
        return augmented_sweep(o, field, kappa, rank, rng)
    field = np.asarray(field, dtype=np.float64)
    o = np.asarray(o, dtype=np.float64)
    for direction in ("columns", "rows"):
        total = field + second_field(o, kappa2, rank, rng)
        o = augmented_sweep(o, total, kappa, rank, rng, direction=direction)
    return o


def log_joint_second(o, field, kappa: float, rank: int, kappa2: float) -> float:
    """Unnormalised ``log p(O | Z)`` with nearest- and second-neighbour potentials.

    Parameters
    ----------
    o : array_like (M, N)
        Doubled angles.
    field : numpy.ndarray (M, N, 2)
        Natural parameters.
    kappa : float
        Nearest-neighbour concentration.
    rank : int
        Rank of both potentials.
    kappa2 : float
        Signed second-neighbour strength.

    Returns
    -------
    float
        The unnormalised log density.
    """
    o = np.asarray(o, dtype=np.float64)
    total = log_joint(o, field, kappa, rank)
    if kappa2 != 0.0:
        total += float(np.sum(log_second_potential(o[:, :-2], o[:, 2:], kappa2, rank)))
        total += float(np.sum(log_second_potential(o[:-2, :], o[2:, :], kappa2, rank)))
    return total
