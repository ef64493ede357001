"""Choosing the band-pass prior's column spacing by held-out pixels.

The same scheme as the von Mises map's ``kappa`` (:mod:`pmctx.vonmises.select`): the
observed pixels are split into folds, the map is sampled under the band-pass prior
(:func:`pmctx.vonmises.spectral.spectral_posterior`) given all other folds, and each
held-out observation is scored by the posterior predictive density
``log mean_s VonMises(z_i; o_i^(s), kappa_obs^(s))``
(:func:`pmctx.vonmises.select.heldout_log_predictive`). The grid of spacings is centred on
the data's own estimate (:func:`pmctx.vonmises.spectral.estimate_spacing`, the peak of
the radial power spectrum of the observed unit vectors) unless given.

Examples
--------
>>> import numpy as np
>>> from pmctx.vonmises.spectral_cv import cross_validate_spacing
>>> rng = np.random.default_rng(0)
>>> y, x = np.indices((10, 10))
>>> z = rng.vonmises(2 * np.pi * x / 6.0, 4.0)
>>> cv = cross_validate_spacing(z, z == z, spacings=[4.0, 6.0], draws=4, tune=4,
...                             random_seed=0)
>>> cv.curve.columns.tolist()
['spacing', 'score', 'delta', 'se_diff', 'kappa_obs']
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from pmctx.validation import as_rng, check_int, check_positive
from pmctx.vonmises.select import heldout_log_predictive
from pmctx.vonmises.spectral import (
    FLOOR,
    RING_WIDTH,
    estimate_spacing,
    padded_shape,
    ring_spectrum,
    spectral_posterior,
)

__all__ = ["RATIOS", "SpacingCV", "cross_validate_spacing", "spacing_grid", "torus_for"]

#: Spacings scored by default: these multiples of the data's estimated spacing.
RATIOS = (0.8, 1.0, 1.25)
#: Padding beyond the map: at least this many pixels, and at least the largest spacing.
MIN_PAD = 24


@dataclass(frozen=True)
class SpacingCV:
    """Outcome of :func:`cross_validate_spacing`.

    Parameters
    ----------
    curve : pandas.DataFrame
        One row per spacing: ``spacing``, ``score`` (mean held-out log predictive density
        per observed pixel), ``delta`` (score minus the best), ``se_diff`` (paired standard
        error of that difference), ``kappa_obs`` (posterior mean, averaged over folds).
    pointwise : numpy.ndarray (K, n_observed)
        Held-out log predictive density of every observed pixel at every spacing.
    estimate : float or None
        The data's estimated spacing when the grid was centred on it.
    """

    curve: pd.DataFrame
    pointwise: np.ndarray
    estimate: float | None


def spacing_grid(z, observed, ratios=RATIOS) -> tuple[list[float], float]:
    """Spacings ``ratio * estimate`` (at least 2 pixels) around the data's own estimate.

    Parameters
    ----------
    z : numpy.ndarray (M, N)
        Observed doubled angles.
    observed : numpy.ndarray of bool (M, N)
        Where ``z`` is observed.
    ratios : sequence of float, default RATIOS
        Multiples of the estimate.

    Returns
    -------
    spacings : list of float
        The grid.
    estimate : float
        :func:`~pmctx.vonmises.spectral.estimate_spacing` of the data.
    """
    estimate = estimate_spacing(z, observed)
    return [max(2.0, round(float(r) * estimate, 3)) for r in ratios], estimate


def torus_for(shape, spacings) -> tuple[int, int]:
    """The padded torus for a map of ``shape`` and a grid of ``spacings``.

    Parameters
    ----------
    shape : tuple of int
        The map's ``(M, N)``.
    spacings : sequence of float
        Column spacings to be fitted; the padding is the largest (at least ``MIN_PAD``).

    Returns
    -------
    tuple of int
        :func:`~pmctx.vonmises.spectral.padded_shape` of the map.

    Examples
    --------
    >>> torus_for((64, 64), [8.0, 30.5])
    (96, 96)
    """
    return padded_shape(shape, max(MIN_PAD, int(np.ceil(max(spacings)))))


def cross_validate_spacing(
    z,
    observed,
    *,
    spacings=None,
    width: float = RING_WIDTH,
    floor: float = FLOOR,
    kappa_obs=None,
    n_folds: int = 3,
    draws: int = 40,
    tune: int = 60,
    random_seed=None,
) -> SpacingCV:
    """Held-out-pixel cross-validation of the column spacing of the band-pass prior.

    Parameters
    ----------
    z : numpy.ndarray (M, N)
        Observed doubled angles (any value where not observed).
    observed : numpy.ndarray of bool (M, N)
        Where ``z`` is observed.
    spacings : sequence of float, optional
        Spacings to score (pixels, each >= 2); default :func:`spacing_grid` of the data.
    width, floor : float
        Ring width and white floor of :func:`~pmctx.vonmises.spectral.ring_spectrum`.
    kappa_obs : float, optional
        Fixed observation concentration (default: learned in every fit).
    n_folds : int, default 3
        Folds of observed pixels (a random split shared by every spacing).
    draws, tune : int
        Kept and discarded draws of each fold's fit.
    random_seed : int or numpy.random.Generator, optional
        Random seed or generator.

    Returns
    -------
    SpacingCV
    """
    z = np.asarray(z, dtype=np.float64)
    observed = np.asarray(observed, dtype=bool)
    n_folds = check_int(n_folds, "n_folds", minimum=2)
    if observed.sum() < n_folds:
        raise ValueError(
            f"n_folds ({n_folds}) must be at most the number of observed pixels "
            f"({int(observed.sum())}); pass fewer folds or observe more pixels."
        )
    estimate = None
    if spacings is None:
        spacings, estimate = spacing_grid(z, observed)
    spacings = [check_positive(s, "spacing") for s in np.atleast_1d(spacings)]
    torus = torus_for(z.shape, spacings)
    rng = as_rng(random_seed)
    obs_index = np.flatnonzero(observed)
    fold_of = rng.permutation(obs_index.size) % n_folds
    pointwise = np.empty((len(spacings), obs_index.size))
    mean_kappa_obs = np.empty(len(spacings))
    for g, spacing in enumerate(spacings):
        spectrum = ring_spectrum(torus, spacing, width, floor)
        k_means = []
        for fold in range(n_folds):
            test = np.zeros(z.shape, dtype=bool)
            test.flat[obs_index[fold_of == fold]] = True
            o_test, k_draws = spectral_posterior(
                z,
                observed & ~test,
                spectrum,
                draws=draws,
                tune=tune,
                kappa_obs=kappa_obs,
                keep=test,
                random_seed=rng,
            )
            pointwise[g, fold_of == fold] = heldout_log_predictive(z[test], o_test, k_draws)
            k_means.append(k_draws.mean())
        mean_kappa_obs[g] = np.mean(k_means)
    score = pointwise.mean(axis=1)
    best = int(np.argmax(score))
    diff = pointwise - pointwise[best]
    se = diff.std(axis=1, ddof=1) / np.sqrt(obs_index.size) if obs_index.size > 1 else 0 * score
    curve = pd.DataFrame(
        {
            "spacing": spacings,
            "score": score,
            "delta": score - score[best],
            "se_diff": se,
            "kappa_obs": mean_kappa_obs,
        }
    )
    return SpacingCV(curve, pointwise, estimate)
