"""One sweep of the specialised IBP Gibbs sampler on a plain-array state.

The sweep is the pure kernel behind :class:`pmctx.steps.ibp_gibbs.IBPGibbs` and is usable
without PyMC (tests, benchmarks). Order within a sweep (seed Algorithm 2, truncated):
``A | F, Z`` (eq. 2), every ``y_kt`` (eq. 3-5), every row of ``Z`` (eq. 6 with the finite-K
collapsed prior, then the new-feature block of eq. 10-14), and finally
``pi | Z ~ Beta(alpha/K_max + m_k, 1 + N - m_k)``. All ``Z`` and ``Y`` updates integrate
``pi`` out, so the sweep leaves the joint posterior of ``(pi, Z, A, Y)`` invariant.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pmctx.ibp.sweep import sweep_joint, sweep_legacy

__all__ = ["MOVES", "IBPHyper", "IBPState", "gibbs_sweep"]

MOVES = ("joint", "legacy")


@dataclass(frozen=True)
class IBPHyper:
    """Hyperparameters: IBP concentration, noise and basis scales, noisy-OR parameters.

    Parameters
    ----------
    alpha : float, default 1.0
        IBP concentration.
    sigma_n : float, default 0.5
        Force noise sd.
    sigma_a : float, default 1.0
        Prior sd of the force bases.
    phi : float, default 0.5
        Prior probability of a cue-image pixel.
    lam : float, default 0.9
        Noisy-OR strength.
    eps : float, default 0.05
        Noisy-OR leak.

    Examples
    --------
    >>> IBPHyper(alpha=2.0).as_array(4).tolist()
    [2.0, 0.5, 1.0, 0.5, 0.9, 0.05, 4.0]
    """

    alpha: float = 1.0
    sigma_n: float = 0.5
    sigma_a: float = 1.0
    phi: float = 0.5
    lam: float = 0.9
    eps: float = 0.05

    def as_array(self, k_max: int) -> np.ndarray:
        """The hyperparameters and ``k_max`` as one float array (the numba kernels' layout).

        Parameters
        ----------
        k_max : int
            Truncation level.

        Returns
        -------
        numpy.ndarray (7,)
            ``alpha, sigma_n, sigma_a, phi, lam, eps, k_max``.
        """
        return np.array(
            [self.alpha, self.sigma_n, self.sigma_a, self.phi, self.lam, self.eps, float(k_max)]
        )


@dataclass
class IBPState:
    """Sampler state; ``A`` has 0 columns without forces, ``Y`` 0 columns without cues.

    Parameters
    ----------
    Z : numpy.ndarray (N, K_max) int64
        Ownership.
    A : numpy.ndarray (K_max, D) float64
        Force bases.
    Y : numpy.ndarray (K_max, T) int64
        Cue images.
    pi_logit : numpy.ndarray (K_max,) float64
        ``logit`` of the feature probabilities.
    """

    Z: np.ndarray  # (N, K_max) int64
    A: np.ndarray  # (K_max, D) float64
    Y: np.ndarray  # (K_max, T) int64
    pi_logit: np.ndarray  # (K_max,) float64

    @classmethod
    def from_arrays(cls, Z, A, Y, pi_logit=None):
        """A state from arrays of any dtype, converted to the kernels' contiguous layout.

        Parameters
        ----------
        Z : array_like (N, K_max)
            Ownership.
        A : array_like (K_max, D)
            Force bases (D may be 0).
        Y : array_like (K_max, T)
            Cue images (T may be 0).
        pi_logit : array_like (K_max,), optional
            ``logit(pi)`` (default zeros).

        Returns
        -------
        IBPState
            The state.

        Examples
        --------
        >>> IBPState.from_arrays(np.zeros((3, 2)), np.zeros((2, 1)), np.zeros((2, 0))).Y.shape
        (2, 0)
        """
        Z = np.ascontiguousarray(Z, dtype=np.int64)
        k_max = Z.shape[1]
        pi_logit = np.zeros(k_max) if pi_logit is None else pi_logit
        return cls(
            Z,
            np.ascontiguousarray(A, dtype=np.float64).reshape(k_max, -1),
            np.ascontiguousarray(Y, dtype=np.int64).reshape(k_max, -1),
            np.ascontiguousarray(pi_logit, dtype=np.float64),
        )

    @property
    def n_active(self) -> int:
        """Number of features owned by at least one row.

        Returns
        -------
        int
            Non-empty columns of ``Z``.
        """
        return int(np.count_nonzero(self.Z.any(axis=0)))


def gibbs_sweep(
    state: IBPState,
    F,
    X,
    hyper: IBPHyper,
    rng,
    *,
    new_features: bool = True,
    block_size: int = 3,
    moves: str = "joint",
):
    """Update ``state`` in place by one sweep; returns ``(features_added, truncation_hits)``.

    Parameters
    ----------
    state : IBPState
    F : ndarray (N, D) float64, D may be 0 (no forces)
    X : ndarray (N, T) int64, T may be 0 (no visual cues)
    hyper : IBPHyper
    rng : numpy.random.Generator
    new_features : bool, default True
        Include the new-feature block move (without it, free columns stay as they are).
    block_size : int, default 3
        After the single-site updates of a row, jointly redraw a random block of this many
        shared columns (exact, 2^block_size configurations); 0 or 1 switches it off. With
        ``moves="joint"`` the block is drawn together with the row's number of singletons.
    moves : {"joint", "legacy"}, default "joint"
        ``"joint"``: :mod:`pmctx.ibp.joint_row` (block and singletons together, removes the
        singleton-for-shared-features trap); ``"legacy"``: the original row update, kept
        for comparison (``new_features`` applies to it only).

    Returns
    -------
    features_added : int
        New features opened in this sweep.
    truncation_hits : int
        Times a move wanted more than ``K_max`` features.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> F, X = rng.normal(size=(5, 2)), rng.integers(0, 2, size=(5, 4))
    >>> state = IBPState.from_arrays(np.zeros((5, 3)), np.zeros((3, 2)), np.zeros((3, 4)))
    >>> added, hits = gibbs_sweep(state, F, X, IBPHyper(), rng)
    >>> state.Z.shape
    (5, 3)
    """
    if moves not in MOVES:
        raise ValueError(f"moves must be one of {sorted(MOVES)}; got {moves!r}.")
    arrays = (
        state.Z,
        state.A,
        state.Y,
        np.ascontiguousarray(F, dtype=np.float64),
        np.ascontiguousarray(X, dtype=np.int64),
        state.pi_logit,
        hyper.as_array(state.Z.shape[1]),
        rng,
    )
    if moves == "joint":
        added, hits = sweep_joint(*arrays, block_size)
    else:
        added, hits = sweep_legacy(*arrays, new_features, block_size)
    return int(added), int(hits)
