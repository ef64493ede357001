"""Replica exchange (parallel tempering) across a ladder of smoothing concentrations.

At a ``kappa`` larger than the data favour, the orientation-map posterior can hold states
(a pinwheel pair more or less) that a block-Gibbs chain leaves only every thousand sweeps or
so. Replica exchange runs ``K`` copies of the map, replica ``j`` targeting

    p_j(O) ∝ exp(sum_n field_n · o_n) prod_edges psi_{kappa_j}(o_a, o_b),

the same data term at every rung and the coupling ``kappa_j`` of a ladder ``kappa_0 < ... <
kappa_{K-1}``, the last rung the target. Each replica takes an exact block-Gibbs sweep at
its own ``kappa_j`` (any sweep of :data:`pmctx.vonmises.SWEEPS`), then neighbouring replicas
offer to swap their states, accepted with the Metropolis probability

    min(1, exp(E_i(O_j) + E_j(O_i) - E_i(O_i) - E_j(O_j))),
    E_kappa(O) = sum_edges log psi_kappa(o_a, o_b).

``kappa`` does not multiply a fixed energy (``log psi`` is a log-sum-exp over the ``R + 1``
modes, not linear in ``kappa``), so the edge energy is evaluated at both rungs; the data
term is the same at every rung and cancels, and so do the rungs' normalising constants.
Every swap is a Metropolis move of the product target ``prod_j p_j(O_j)``, so the last
replica's states are draws from the map posterior at the target ``kappa``.

Swaps are offered between pairs ``(0, 1), (2, 3), ...`` then ``(1, 2), (3, 4), ...`` after
every sweep: alternating even and odd pairs in a fixed order moves a state up or down the
ladder in a straight line rather than by a random walk (non-reversible replica exchange,
Syed et al. 2022, JRSS B 84:321).
More passes per sweep (``n_swap_passes``) cost little: between passes only the states'
rungs change, so each state's energy at a rung is computed once (:func:`swap_passes`).

Examples
--------
>>> import numpy as np
>>> from pmctx.vonmises.tempering import kappa_ladder, tempered_sweep
>>> ladder = kappa_ladder(5.0, 3, kappa_min=4.0)
>>> ladder.round(3).tolist()
[4.0, 4.472, 5.0]
>>> rng = np.random.default_rng(0)
>>> states = np.zeros((3, 4, 4))
>>> states, accepted = tempered_sweep(states, np.zeros((4, 4, 2)), ladder, 2, rng)
>>> states.shape, accepted.shape
((3, 4, 4), (2,))
"""

from __future__ import annotations

import numpy as np

from pmctx.vonmises._numba_vector import edge_energies
from pmctx.vonmises.augmented import augmented_sweep

__all__ = [
    "edge_energy",
    "kappa_ladder",
    "swap_log_acceptance",
    "swap_pass",
    "swap_passes",
    "tempered_sweep",
]


def kappa_ladder(kappa: float, n_replicas: int, *, kappa_min: float) -> np.ndarray:
    """A geometric ladder of ``n_replicas`` concentrations from ``kappa_min`` up to ``kappa``.

    Parameters
    ----------
    kappa : float
        Target concentration (the last rung; > 0).
    n_replicas : int
        Number of rungs, >= 1 (1: just the target).
    kappa_min : float
        Lowest rung, ``0 < kappa_min <= kappa``.

    Returns
    -------
    numpy.ndarray (n_replicas,)
        Increasing concentrations, the last equal to ``kappa``.

    Raises
    ------
    ValueError
        When ``n_replicas < 1`` or ``kappa_min`` is not in ``(0, kappa]``.

    Examples
    --------
    >>> kappa_ladder(4.0, 3, kappa_min=1.0).tolist()
    [1.0, 2.0, 4.0]
    """
    if isinstance(n_replicas, bool) or int(n_replicas) != n_replicas or n_replicas < 1:
        raise ValueError(
            f"n_replicas must be an integer >= 1, got {n_replicas!r}; pass e.g. 8 replicas."
        )
    if not (0.0 < kappa_min <= kappa):
        raise ValueError(
            f"kappa_min must lie in (0, kappa] = (0, {kappa}], got {kappa_min!r}: the ladder "
            "runs from kappa_min up to the target kappa."
        )
    if n_replicas == 1:
        return np.array([float(kappa)])
    ladder = np.geomspace(float(kappa_min), float(kappa), int(n_replicas))
    ladder[-1] = float(kappa)
    return ladder


def edge_energy(o, kappa: float, rank: int) -> float:
    """``E_kappa(O)``: the sum of ``log psi`` over the 4-neighbour edges of the grid ``o``.

    Parameters
    ----------
    o : array_like (M, N)
        Doubled angles.
    kappa : float
        Smoothing concentration.
    rank : int
        Rank of the potential.

    Returns
    -------
    float
        The edge energy (the prior part of the unnormalised log density).

    Examples
    --------
    >>> round(edge_energy(np.zeros((1, 2)), 0.0, 2), 6) == round(float(np.log(3.0)), 6)
    True
    """
    return float(edge_energies(o, [float(kappa)], int(rank))[0])


def swap_log_acceptance(energies_i, energies_j) -> float:
    """Log Metropolis ratio of swapping the states of rungs ``i`` and ``j``.

    ``energies_i = (E_i(O_i), E_i(O_j))`` are rung ``i``'s edge energies of its own state and
    of rung ``j``'s; ``energies_j = (E_j(O_j), E_j(O_i))`` likewise.

    Parameters
    ----------
    energies_i, energies_j : tuple of float
        ``(own state, other state)`` edge energies at each rung's ``kappa``.

    Returns
    -------
    float
        ``E_i(O_j) + E_j(O_i) - E_i(O_i) - E_j(O_j)``; accept with probability
        ``min(1, exp(.))``.

    Examples
    --------
    >>> swap_log_acceptance((1.0, 3.0), (2.0, 0.5))
    0.5
    """
    return float(energies_i[1] + energies_j[1] - energies_i[0] - energies_j[0])


def swap_pass(states, kappas, rank: int, rng, *, parity: int):
    """Offer swaps to the pairs ``(p, p + 1)`` with ``p = parity, parity + 2, ...``.

    Parameters
    ----------
    states : numpy.ndarray (K, M, N)
        One map per rung (modified in place).
    kappas : array_like (K,)
        The ladder.
    rank : int
        Rank of the potential.
    rng : numpy.random.Generator
        Random generator (one uniform per offered pair).
    parity : {0, 1}
        Even or odd pairs.

    Returns
    -------
    numpy.ndarray (K - 1,)
        1 where the pair ``(p, p + 1)`` swapped, 0 where it refused, NaN where not offered.
    """
    n = len(kappas)
    accepted = np.full(max(n - 1, 0), np.nan)
    for p in range(parity, n - 1, 2):
        lo, hi = kappas[p], kappas[p + 1]
        e_lo = (edge_energy(states[p], lo, rank), edge_energy(states[p + 1], lo, rank))
        e_hi = (edge_energy(states[p + 1], hi, rank), edge_energy(states[p], hi, rank))
        log_alpha = swap_log_acceptance(e_lo, e_hi)
        accept = log_alpha >= 0.0 or np.log(rng.random()) < log_alpha
        if accept:
            states[[p, p + 1]] = states[[p + 1, p]]
        accepted[p] = float(accept)
    return accepted


def swap_passes(states, kappas, rank: int, rng, *, n_passes: int = 2, parity: int = 0):
    """``n_passes`` alternating swap passes (even pairs, odd pairs, ...) over fixed states.

    The states do not change between passes, only their rungs, so each state's edge energy
    at a rung is computed once and reused: a pass after the first costs about two energies
    per pair at most, none where the states already visited those rungs. Every offer is the
    Metropolis move of :func:`swap_pass`, and with ``n_passes = 2`` the same draws (energies,
    uniforms, decisions) as ``swap_pass(parity=0)`` then ``swap_pass(parity=1)``.

    Parameters
    ----------
    states : numpy.ndarray (K, M, N)
        One map per rung (reordered in place).
    kappas : array_like (K,)
        The ladder.
    rank : int
        Rank of the potential.
    rng : numpy.random.Generator
        Random generator (one uniform per offer whose ratio is below 1).
    n_passes : int, default 2
        Passes, alternating parity; >= 1.
    parity : {0, 1}, default 0
        Parity of the first pass.

    Returns
    -------
    numpy.ndarray (K - 1,)
        Fraction of the offers to pair ``(p, p + 1)`` that were accepted (NaN if none).

    Examples
    --------
    >>> rng = np.random.default_rng(1)
    >>> states = rng.uniform(-np.pi, np.pi, (3, 2, 2))
    >>> swap_passes(states, np.array([1.0, 1.2, 1.5]), 2, rng, n_passes=4).shape
    (2,)
    """
    kappas = np.asarray(kappas, dtype=np.float64)
    n = len(kappas)
    order = list(range(n))  # order[r]: the index (in the input) of the state now at rung r
    cache = {}
    # Each state's energies at its rung and both neighbours in one pass over its edges (the
    # edges' projections on the modes are shared); a rung two away, reached after a swap in
    # an earlier pass, is computed when first asked for.
    for state in range(n):
        rungs = list(range(max(state - 1, 0), min(state + 2, n)))
        for rung, value in zip(rungs, edge_energies(states[state], kappas[rungs], rank)):
            cache[state, rung] = value

    def energy(state, rung):
        if (state, rung) not in cache:
            cache[state, rung] = edge_energy(states[state], kappas[rung], rank)
        return cache[state, rung]

    offered, accepted = np.zeros(max(n - 1, 0)), np.zeros(max(n - 1, 0))
    for k in range(n_passes):
        for p in range((parity + k) % 2, n - 1, 2):
            a, b = order[p], order[p + 1]
            e_lo = (energy(a, p), energy(b, p))
            e_hi = (energy(b, p + 1), energy(a, p + 1))
            log_alpha = swap_log_acceptance(e_lo, e_hi)
            accept = log_alpha >= 0.0 or np.log(rng.random()) < log_alpha
            if accept:
                order[p], order[p + 1] = b, a
            offered[p] += 1.0
            accepted[p] += float(accept)
    states[:] = states[order]
    with np.errstate(invalid="ignore"):
        return accepted / offered


def tempered_sweep(
    states, field, kappas, rank: int, rng, *, sweep=augmented_sweep, n_swap_passes: int = 2
):
    """One replica-exchange step: a sweep of every rung, then alternating swap passes.

    Parameters
    ----------
    states : array_like (K, M, N)
        Current map of each rung (not modified).
    field : numpy.ndarray (M, N, 2)
        Natural parameters of observations and node priors (the same at every rung).
    kappas : array_like (K,)
        The ladder, increasing; the last rung is the target.
    rank : int
        Rank ``R``.
    rng : numpy.random.Generator
        Random generator.
    sweep : callable, default :func:`~pmctx.vonmises.augmented.augmented_sweep`
        Exact sweep ``sweep(o, field, kappa, rank, rng)`` run at every rung.
    n_swap_passes : int, default 2
        Swap passes after the sweeps (:func:`swap_passes`): even pairs, odd pairs, even, ...
        Passes after the first two reuse the energies already computed, so they cost little
        and let a state cross several rungs per sweep.

    Returns
    -------
    states : numpy.ndarray (K, M, N)
        The new maps, rung by rung.
    accepted : numpy.ndarray (K - 1,)
        Fraction of the swaps offered between rungs ``p`` and ``p + 1`` in this step that
        were accepted (with the default two passes each pair is offered once: 0 or 1).
    """
    kappas = np.asarray(kappas, dtype=np.float64)
    states = np.array(states, dtype=np.float64)
    if states.ndim != 3 or states.shape[0] != kappas.size:
        raise ValueError(
            f"states must have shape (K, M, N) with K = {kappas.size} rungs, got "
            f"{states.shape}; pass one map per rung of the ladder."
        )
    if isinstance(n_swap_passes, bool) or int(n_swap_passes) != n_swap_passes or n_swap_passes < 1:
        raise ValueError(
            f"n_swap_passes must be an integer >= 1, got {n_swap_passes!r}; pass e.g. 2 "
            "(even then odd pairs)."
        )
    for j, kappa in enumerate(kappas):
        states[j] = sweep(states[j], field, float(kappa), rank, rng)
    return states, swap_passes(states, kappas, rank, rng, n_passes=int(n_swap_passes))
