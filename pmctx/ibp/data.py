"""Synthetic visuo-motor data: 6 x 6 bar images as visual cues paired with force vectors."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pmctx.ibp.conditionals import noisy_or_log_p
from pmctx.validation import as_rng, check_int, check_positive, check_probability

__all__ = ["VisuomotorData", "bar_images", "visuomotor_data"]


@dataclass(frozen=True)
class VisuomotorData:
    """Observations ``F`` (N x D), ``X`` (N x T) and the true ``Z``, ``A``, ``Y``.

    Parameters
    ----------
    F : numpy.ndarray (N, D)
        Forces.
    X : numpy.ndarray (N, T)
        Binary cue images.
    Z : numpy.ndarray (N, K)
        True ownership.
    A : numpy.ndarray (K, D)
        True force bases.
    Y : numpy.ndarray (K, T)
        True cue images.
    side : int
        Image side length (``T = side^2``).
    """

    F: np.ndarray
    X: np.ndarray
    Z: np.ndarray
    A: np.ndarray
    Y: np.ndarray
    side: int

    @property
    def n_features(self) -> int:
        """Number of true features (contexts).

        Returns
        -------
        int
            Columns of ``Z``.
        """
        return self.Z.shape[1]


def bar_images(side: int = 6) -> np.ndarray:
    """Four prototypical cues, flattened: two horizontal and two vertical bars (4 x side^2).

    Parameters
    ----------
    side : int, default 6
        Image side length (>= 4).

    Returns
    -------
    numpy.ndarray (4, side^2)
        The four 0/1 images.

    Examples
    --------
    >>> bar_images(4).sum(axis=1).tolist()
    [4, 4, 4, 4]
    """
    side = check_int(side, "side", minimum=4)
    imgs = np.zeros((4, side, side), dtype=np.int64)
    imgs[0, 1, :] = 1
    imgs[1, side - 2, :] = 1
    imgs[2, :, 1] = 1
    imgs[3, :, side - 2] = 1
    return imgs.reshape(4, side * side)


# Forces of the four contexts (2-D, one row per bar): distinct directions so sums are unique.
BAR_FORCES = np.array([[1.5, 0.0], [0.0, 1.5], [-1.0, 1.0], [1.0, 1.0]])


def visuomotor_data(
    n_trials: int = 100,
    *,
    p_own: float = 0.4,
    sigma_n: float = 0.3,
    lam: float = 0.9,
    eps: float = 0.05,
    side: int = 6,
    n_features: int = 4,
    random_seed=0,
) -> VisuomotorData:
    """Draw data from the generative model with the four bar contexts (or the first few).

    Each trial owns each of the first ``n_features`` (1-4) contexts with probability
    ``p_own``; forces are ``Z A`` plus ``N(0, sigma_n^2)`` noise and cues are noisy-OR images
    of the owned bars.

    Parameters
    ----------
    n_trials : int, default 100
        Trials.
    p_own : float, default 0.4
        Probability that a trial owns each context.
    sigma_n : float, default 0.3
        Force noise sd.
    lam, eps : float, default 0.9 and 0.05
        Noisy-OR strength and leak of the cues.
    side : int, default 6
        Image side length.
    n_features : int, default 4
        Number of true features (contexts), 1 to 4.
    random_seed : int or numpy.random.Generator, default 0
        Random seed or generator.

    Returns
    -------
    VisuomotorData
        Observations and the truth.

    Examples
    --------
    >>> data = visuomotor_data(10, random_seed=0)
    >>> data.F.shape, data.X.shape, data.n_features
    ((10, 2), (10, 36), 4)
    """
    n = check_int(n_trials, "n_trials", minimum=1)
    p_own = check_probability(p_own, "p_own")
    sigma_n = check_positive(sigma_n, "sigma_n")
    lam, eps = check_probability(lam, "lam"), check_probability(eps, "eps")
    k = check_int(n_features, "n_features", minimum=1, maximum=4)
    rng = as_rng(random_seed)
    Y = bar_images(side)[:k]
    A = BAR_FORCES[:k].copy()
    Z = (rng.random((n, k)) < p_own).astype(np.int64)
    F = Z @ A + sigma_n * rng.normal(size=(n, A.shape[1]))
    log_q, _ = noisy_or_log_p(Z @ Y, lam, eps)
    X = (rng.random(log_q.shape) >= np.exp(log_q)).astype(np.int64)
    return VisuomotorData(F=F, X=X, Z=Z, A=A, Y=Y, side=side)
