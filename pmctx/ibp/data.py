"""Synthetic visuo-motor data: 6 x 6 bar images as visual cues paired with force vectors."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pmctx.ibp.conditionals import noisy_or_log_p
from pmctx.validation import as_rng, check_int, check_positive, check_probability

__all__ = [
    "PATTERNS",
    "VisuomotorData",
    "bar_images",
    "bars_data",
    "feature_images",
    "visuomotor_data",
]


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


#: Image patterns of :func:`bars_data`: distinct horizontal/vertical bars, or random blobs.
PATTERNS = ("bars", "blobs")


def feature_images(n_features: int, side: int = 6, *, pattern: str = "bars",
                   random_seed=0) -> np.ndarray:  # fmt: skip
    """``n_features`` distinct 0/1 images of ``side x side`` pixels, flattened.

    ``"bars"``: distinct rows and columns of the image chosen at random (a horizontal and a
    vertical bar share the pixel where they cross, so up to ``2 * side`` features that
    overlap pairwise); ``"blobs"``: random rectangles of 2-4 pixels a side, placed anywhere,
    so that features overlap in several pixels and some are nearly nested (harder to tell
    apart than bars).

    Parameters
    ----------
    n_features : int
        Number of images (at most ``2 * side`` for bars).
    side : int, default 6
        Image side length (>= 4).
    pattern : {"bars", "blobs"}, default "bars"
        Image family.
    random_seed : int or numpy.random.Generator, default 0
        Random seed or generator.

    Returns
    -------
    numpy.ndarray (n_features, side^2)
        The images, all distinct.

    Examples
    --------
    >>> feature_images(3, 6, random_seed=0).sum(axis=1).tolist()
    [6, 6, 6]
    """
    side = check_int(side, "side", minimum=4)
    if pattern not in PATTERNS:
        raise ValueError(f"pattern must be one of {PATTERNS}; got {pattern!r}.")
    limit = 2 * side if pattern == "bars" else side * side // 2
    k = check_int(n_features, "n_features", minimum=1, maximum=limit)
    rng = as_rng(random_seed)
    if pattern == "bars":
        imgs = np.zeros((k, side, side), dtype=np.int64)
        for j, b in enumerate(rng.choice(2 * side, size=k, replace=False)):
            if b < side:
                imgs[j, b, :] = 1
            else:
                imgs[j, :, b - side] = 1
        return imgs.reshape(k, side * side)
    out: list[np.ndarray] = []
    while len(out) < k:
        h, w = rng.integers(2, 5, size=2)
        r, c = rng.integers(0, side - h + 1), rng.integers(0, side - w + 1)
        img = np.zeros((side, side), dtype=np.int64)
        img[r : r + h, c : c + w] = 1
        flat = img.reshape(-1)
        if not any(np.array_equal(flat, o) for o in out):
            out.append(flat)
    return np.array(out)


def bars_data(
    n_trials: int = 100,
    *,
    n_features: int = 4,
    side: int = 6,
    n_dims: int = 2,
    pattern: str = "bars",
    p_own=0.4,
    sigma_n: float = 0.3,
    sigma_A: float = 1.0,
    lam: float = 0.9,
    eps: float = 0.05,
    random_seed=0,
) -> VisuomotorData:
    """Bars-style visuo-motor data with any number of features, image pattern and noise.

    Like :func:`visuomotor_data` but not tied to its four fixed bars and forces, so that fits
    can be checked on data no test was tuned on: ``n_features`` images from
    :func:`feature_images` (bars or overlapping blobs), force bases ``A ~ N(0, sigma_A^2)``
    in ``n_dims`` dimensions, each trial owning feature ``k`` with probability ``p_own[k]``,
    forces ``Z A + N(0, sigma_n^2)`` and noisy-OR cues (a cause shows a pixel with
    probability ``lam``, a pixel lights spontaneously with probability ``eps``).

    Parameters
    ----------
    n_trials : int, default 100
        Trials.
    n_features : int, default 4
        True features.
    side : int, default 6
        Image side length.
    n_dims : int, default 2
        Force dimensions (>= 1).
    pattern : {"bars", "blobs"}, default "bars"
        Image family (see :func:`feature_images`).
    p_own : float or sequence of float, default 0.4
        Probability that a trial owns each feature (one number, or one per feature).
    sigma_n : float, default 0.3
        Force noise sd.
    sigma_A : float, default 1.0
        Sd of the force bases' entries.
    lam, eps : float, default 0.9 and 0.05
        Noisy-OR strength and leak (image noise: a cause's pixel stays dark with probability
        ``1 - lam``, a pixel lights spontaneously with probability ``eps``).
    random_seed : int or numpy.random.Generator, default 0
        Random seed or generator.

    Returns
    -------
    VisuomotorData
        Observations and the truth.

    Examples
    --------
    >>> data = bars_data(30, n_features=6, n_dims=3, pattern="blobs", random_seed=1)
    >>> data.F.shape, data.X.shape, data.n_features
    ((30, 3), (30, 36), 6)
    """
    n = check_int(n_trials, "n_trials", minimum=1)
    d = check_int(n_dims, "n_dims", minimum=1)
    sigma_n, sigma_A = check_positive(sigma_n, "sigma_n"), check_positive(sigma_A, "sigma_A")
    lam, eps = check_probability(lam, "lam"), check_probability(eps, "eps")
    rng = as_rng(random_seed)
    Y = feature_images(n_features, side, pattern=pattern, random_seed=rng)
    k = Y.shape[0]
    p = np.broadcast_to(np.asarray(p_own, dtype=np.float64), (k,))
    if np.any((p <= 0) | (p >= 1)):
        raise ValueError(f"p_own must lie in (0, 1); got {p_own!r}.")
    A = sigma_A * rng.normal(size=(k, d))
    Z = (rng.random((n, k)) < p).astype(np.int64)
    F = Z @ A + sigma_n * rng.normal(size=(n, d))
    log_q, _ = noisy_or_log_p(Z @ Y, lam, eps)
    X = (rng.random(log_q.shape) >= np.exp(log_q)).astype(np.int64)
    return VisuomotorData(F=F, X=X, Z=Z, A=A, Y=Y, side=side)
