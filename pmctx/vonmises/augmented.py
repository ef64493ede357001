"""Auxiliary-variable block Gibbs for the orientation map: all columns at once.

Every edge potential is a sum over ``R + 1`` modes, ``psi(o_a, o_b) = sum_k exp(kappa r_k .
(o_a + o_b))``, so the map is the marginal of a joint over angles ``O`` and one discrete
mode per edge. One sweep here

1. draws every **horizontal** edge mode from its exact conditional, a categorical with
   probabilities proportional to ``exp(kappa r_k . (o_a + o_b))`` (vectorised over edges);
2. given those modes the columns are independent chains: each node's off-column factor is a
   single term ``exp(v . o)`` with ``v = kappa (r_left + r_right) + field``, so forward
   filtering over the vertical modes costs ``O((R + 1)^2)`` per node, and every column is
   drawn exactly and simultaneously with the shared FFBS kernel
   (:func:`pmctx.vonmises.ffbs.sample_chains`);
3. repeats 1-2 with rows and columns swapped (vertical modes explicit, rows as chains).

How it differs from the seed note's scheme (:func:`pmctx.vonmises.ffbs.ffbs_sweep`): the note
sums out the horizontal modes of both neighbouring columns, a mixture of ``(R + 1)^2`` terms
per node and ``O((R + 1)^4)`` work per node, and neighbouring columns cannot be updated
together. Here the horizontal modes are sampled, not summed: each step is an exact Gibbs
update of the joint over ``(O, modes)``, whose ``O``-marginal is the map posterior, so both
samplers have the same stationary distribution (tested by exact enumeration).

Compiled kernels (:data:`KERNELS`): ``"series"`` (the default: pair terms ``I0`` by their
power series, no ``exp``/``i0e`` per pair, :mod:`pmctx.vonmises._numba_series`, and one
compiled call per pass, :mod:`pmctx.vonmises._numba_series_pass`), ``"vector"``
(:mod:`pmctx.vonmises._numba_vector`: vectorised ``i0e``/``exp``) and ``"table"`` (the
earliest, :mod:`pmctx.vonmises._numba_chains`). Series and vector use threads from 2**15 nodes
on; the same uniforms give the same draws (tested to 1e-12).

Examples
--------
>>> import numpy as np
>>> from pmctx.vonmises.augmented import augmented_sweep
>>> rng = np.random.default_rng(0)
>>> augmented_sweep(np.zeros((5, 4)), np.zeros((5, 4, 2)), 5.0, 5, rng).shape
(5, 4)
"""

from __future__ import annotations

import numpy as np

from pmctx.vonmises import _numba_chains, _numba_series, _numba_series_pass, _numba_vector
from pmctx.vonmises.potentials import mode_vectors, sample_von_mises, wrap_angle

__all__ = ["KERNELS", "augmented_sweep", "sample_edge_modes", "sample_single_term_chains"]

#: Compiled kernels: ``"series"`` (:mod:`pmctx.vonmises._numba_series`, the default),
#: ``"vector"`` (:mod:`pmctx.vonmises._numba_vector`) and ``"table"``
#: (:mod:`pmctx.vonmises._numba_chains`). Same law, same random stream; kept side by side for
#: the scale benchmark and the equality tests.
KERNELS = ("series", "vector", "table")


def _check_kernel(kernel):
    if kernel not in KERNELS:
        raise ValueError(f"kernel must be one of {KERNELS}, got {kernel!r}.")


def _edge_kernel(cos_a, sin_a, cos_b, sin_b, kappa_modes, uniforms, kernel):
    if kernel in ("series", "vector"):
        return _numba_vector.edge_modes(cos_a, sin_a, cos_b, sin_b, kappa_modes, uniforms)
    return _numba_chains.edge_modes(cos_a, sin_a, cos_b, sin_b, kappa_modes, uniforms)


def sample_edge_modes(o_a, o_b, kappa: float, modes, rng, *, kernel="series") -> np.ndarray:
    """Draw the mode of each edge ``(o_a, o_b)``: ``P(k) ∝ exp(kappa r_k · (o_a + o_b))``.

    ``o_a`` and ``o_b`` are 2-D arrays of the edges' endpoint angles (compiled kernel).

    Parameters
    ----------
    o_a, o_b : array_like
        Endpoint angles of the edges (same shape).
    kappa : float
        Smoothing concentration.
    modes : numpy.ndarray (K, 2)
        Mode unit vectors (:func:`~pmctx.vonmises.potentials.mode_vectors`).

    rng : numpy.random.Generator
        Random generator.
    kernel : {"series", "vector", "table"}, default "series"
        Compiled kernel (:data:`KERNELS`).

    Returns
    -------
    numpy.ndarray of int
        Mode index of each edge, shape of ``o_a``.
    """
    _check_kernel(kernel)
    o_a = np.asarray(o_a, dtype=np.float64)
    o_b = np.asarray(o_b, dtype=np.float64)
    shape = o_a.shape
    width = shape[-1] if o_a.ndim >= 2 else max(o_a.size, 1)
    o_a, o_b = o_a.reshape(-1, width), o_b.reshape(-1, width)
    uniforms = rng.random(o_a.shape)
    picks = _edge_kernel(
        np.cos(o_a), np.sin(o_a), np.cos(o_b), np.sin(o_b), kappa * modes, uniforms, kernel
    )
    return picks.reshape(shape)


def sample_single_term_chains(node_vec, kappa: float, modes, rng, *, kernel="series"):
    """FFBS draw of chains whose node factors are single terms ``exp(v · o)`` (compiled).

    Same law as :func:`pmctx.vonmises.ffbs.sample_chains` with one component per node;
    ``node_vec`` has shape ``(B, M, 2)``. Returns ``(angles (B, M), log_evidence (B,))``.

    Parameters
    ----------
    node_vec : numpy.ndarray (B, M, 2)
        Natural vector of each node's factor.
    kappa : float
        Smoothing concentration.
    modes : numpy.ndarray (K, 2)
        Mode unit vectors.

    rng : numpy.random.Generator
        Random generator.
    kernel : {"series", "vector", "table"}, default "series"
        Compiled kernel (:data:`KERNELS`).

    Returns
    -------
    angles : numpy.ndarray (B, M)
        The drawn chains.
    log_evidence : numpy.ndarray (B,)
        Log normaliser of each chain's unnormalised density.
    """
    _check_kernel(kernel)
    ext = np.concatenate([kappa * modes, np.zeros((1, 2))], axis=0)
    uniforms = rng.random(node_vec.shape[:2])
    if kernel == "series":
        aux, log_evidence = _numba_series.chain_modes(node_vec, ext, uniforms)
    elif kernel == "vector":
        aux, log_evidence = _numba_vector.chain_modes(node_vec, ext, uniforms)
    else:
        table = _numba_chains.LOG_I0E_TABLE
        aux, log_evidence = _numba_chains.single_term_chain_modes(node_vec, ext, uniforms, table)
    natural = node_vec + ext[aux[:, :-1]] + ext[aux[:, 1:]]
    return sample_von_mises(natural, rng), log_evidence


def _column_pass(o, field, kappa: float, modes, rng, kernel):
    """Sample horizontal modes, then all columns of ``o`` as independent chains."""
    n_cols = o.shape[1]
    if kernel == "series":  # one compiled call; the same uniforms in the same order
        u_edge = rng.random((o.shape[0], n_cols - 1)) if n_cols > 1 else None
        ext = np.concatenate([kappa * modes, np.zeros((1, 2))], axis=0)
        u_chain = rng.random((n_cols, o.shape[0]))
        mean, concentration = _numba_series_pass.column_pass(o, field, ext, u_edge, u_chain)
        return wrap_angle(rng.vonmises(mean, concentration)).T
    node_vec = np.array(field, dtype=np.float64)
    if n_cols > 1:
        cos_o, sin_o = np.cos(o), np.sin(o)  # once per node, not once per edge end
        uniforms = rng.random((o.shape[0], n_cols - 1))
        edge = _edge_kernel(
            cos_o[:, :-1], sin_o[:, :-1], cos_o[:, 1:], sin_o[:, 1:], kappa * modes, uniforms,
            kernel,
        )  # fmt: skip
        pull = kappa * modes[edge]  # (M, N-1, 2)
        node_vec[:, 1:] += pull
        node_vec[:, :-1] += pull
    chains = np.ascontiguousarray(node_vec.transpose(1, 0, 2))
    angles, _ = sample_single_term_chains(chains, kappa, modes, rng, kernel=kernel)
    return angles.T


def augmented_sweep(
    o, field, kappa: float, rank: int, rng, *, direction: str = "both", kernel: str = "series"
):
    """One sweep of the auxiliary-variable block sampler.

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
    direction : {"both", "columns", "rows"}, default "both"
        ``"columns"``: explicit horizontal modes, columns as chains (every node updated once);
        ``"rows"``: the transpose; ``"both"``: a column pass then a row pass (every node
        updated twice). Alternating directions mixes better than either alone.
    kernel : {"series", "vector", "table"}, default "series"
        Compiled kernel (:data:`KERNELS`); both give the same draws from the same ``rng``.

    Returns
    -------
    ndarray, shape (M, N)
    """
    if direction not in ("both", "columns", "rows"):
        raise ValueError(f"direction must be 'both', 'columns' or 'rows', got {direction!r}.")
    _check_kernel(kernel)
    modes = mode_vectors(rank)
    o = np.asarray(o, dtype=np.float64)
    if direction in ("both", "columns"):
        o = _column_pass(o, field, kappa, modes, rng, kernel)
    if direction in ("both", "rows"):
        field_t = np.asarray(field).transpose(1, 0, 2)
        o = _column_pass(o.T, field_t, kappa, modes, rng, kernel).T
    return np.ascontiguousarray(o)
