"""Choosing the band-pass prior's column spacing and ring width by held-out pixels.

The same scheme as the von Mises map's ``kappa`` (:mod:`pmctx.vonmises.select`): the
observed pixels are split into folds, the map is sampled under the band-pass prior
(:func:`pmctx.vonmises.spectral.spectral_posterior`) given all other folds, and each
held-out observation is scored by the posterior predictive density
``log mean_s VonMises(z_i; o_i^(s), kappa_obs^(s))``
(:func:`pmctx.vonmises.select.heldout_log_predictive`), one row per ``(spacing, width)``.

Without given spacings the search does not trust the data's own estimate
(:func:`pmctx.vonmises.spectral.estimate_spacing`, the peak of the radial power spectrum of the
observed unit vectors): maps whose power is not a thin ring put that peak far from the column
spacing (by a factor of about 2.5 on a difference-of-Gaussians map: ``docs/benchmarks.md``). A
first stage ranks :data:`COARSE_RATIOS` times the estimate (steps of 2^(1/3), from 2.5 times
below it to 1.6 times above) at every width of :data:`WIDTHS` by linear prediction of the
held-out pixels (:func:`pmctx.vonmises.spectral_kriging.linear_prediction_score`: deterministic
and cheap), then the posterior is fitted at :data:`RATIOS` times the winning spacing at every
width; those rows are what stacking weighs.

The first stage does not score posterior fits, because short chains rank badly: the held-out
density of a short chain is biased low (Jensen: ``log mean_s p_s`` over few effective draws
falls short of ``log E p``; the field's HMC draws are autocorrelated, and ``kappa_obs``,
started at 2, relaxes over a hundred or more moves), and the bias is larger at small spacings
and wide rings, so short fits can centre the refinement on the wrong spacing; linear prediction
has no such bias (the figures: ``docs/benchmarks.md``). The same bias remains within the
refinement, so the rows of stacking weight at least :data:`RESCORE_WEIGHT` are scored again
with :data:`RESCORE_FACTOR` times the kept draws, which is what the choice between the two
priors (:func:`pmctx.models.vonmises_select.reconstruct_cv`) compares.

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
['spacing', 'width', 'score', 'delta', 'se_diff', 'kappa_obs', 'draws']
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from pmctx.validation import as_rng, check_int, check_positive
from pmctx.vonmises.average import stacking_weights
from pmctx.vonmises.select import heldout_log_predictive
from pmctx.vonmises.spectral import (
    FLOOR,
    RING_WIDTH,
    estimate_spacing,
    ring_spectrum,
    spectral_posterior,
    torus_for,
)
from pmctx.vonmises.spectral_kriging import linear_prediction_score

__all__ = [
    "COARSE_RATIOS",
    "RATIOS",
    "RESCORE_FACTOR",
    "RESCORE_WEIGHT",
    "WIDTHS",
    "SpacingCV",
    "cross_validate_spacing",
    "spacing_grid",
    "torus_for",
]

#: First stage (linear prediction): these multiples of the data's estimated spacing.
COARSE_RATIOS = (0.397, 0.5, 0.63, 0.794, 1.0, 1.26, 1.587)
#: Refinement (posterior fits): these multiples of the first stage's best spacing.
RATIOS = (0.8, 1.0, 1.25)
#: Relative ring widths weighed by the search (:func:`~pmctx.vonmises.spectral.ring_spectrum`).
WIDTHS = (RING_WIDTH, 0.5)
#: Rows of at least this stacking weight are scored again with longer chains ...
RESCORE_WEIGHT = 0.1
#: ... of this many times the kept draws per fold.
RESCORE_FACTOR = 4


@dataclass(frozen=True)
class SpacingCV:
    """Outcome of :func:`cross_validate_spacing`.

    Parameters
    ----------
    curve : pandas.DataFrame
        One row per grid point: ``spacing``, ``width``, ``score`` (mean held-out log
        predictive density per observed pixel), ``delta`` (score minus the best),
        ``se_diff`` (paired standard error of that difference), ``kappa_obs`` (posterior
        mean, averaged over folds).
    pointwise : numpy.ndarray (K, n_observed)
        Held-out log predictive density of every observed pixel at every grid point.
    estimate : float or None
        The data's estimated spacing when the search started from it.
    search : pandas.DataFrame or None
        The first stage of a search: ``spacing``, ``width``, ``cosine`` (mean held-out
        ``cos(z - prediction)`` of linear prediction) and ``signal_share``.
    """

    curve: pd.DataFrame
    pointwise: np.ndarray
    estimate: float | None
    search: pd.DataFrame | None = None


def spacing_grid(z, observed, ratios=RATIOS, estimate=None) -> tuple[list[float], float]:
    """Spacings ``ratio * estimate`` around an estimate, within 2 pixels and the map's side.

    A spacing beyond the map's shorter side cannot be told apart from a smooth gradient,
    and one below 2 pixels is beyond the Nyquist limit; duplicates after clipping are
    dropped (order kept).

    Parameters
    ----------
    z : numpy.ndarray (M, N)
        Observed doubled angles.
    observed : numpy.ndarray of bool (M, N)
        Where ``z`` is observed.
    ratios : sequence of float, default RATIOS
        Multiples of the estimate.
    estimate : float, optional
        The centre (default :func:`~pmctx.vonmises.spectral.estimate_spacing` of the data).

    Returns
    -------
    spacings : list of float
        The grid.
    estimate : float
        :func:`~pmctx.vonmises.spectral.estimate_spacing` of the data.
    """
    if estimate is None:
        estimate = estimate_spacing(z, observed)
    high = float(max(2, min(np.shape(z))))
    spacings = [min(high, max(2.0, round(float(r) * estimate, 3))) for r in ratios]
    return list(dict.fromkeys(spacings)), float(estimate)


def cross_validate_spacing(
    z,
    observed,
    *,
    spacings=None,
    width=None,
    floor: float = FLOOR,
    kappa_obs=None,
    n_folds: int = 3,
    draws: int = 40,
    tune: int = 60,
    estimate=None,
    rescore_draws=None,
    random_seed=None,
) -> SpacingCV:
    """Held-out-pixel cross-validation of the band-pass prior's spacing and ring width.

    Parameters
    ----------
    z : numpy.ndarray (M, N)
        Observed doubled angles (any value where not observed).
    observed : numpy.ndarray of bool (M, N)
        Where ``z`` is observed.
    spacings : sequence of float, optional
        Spacings to score (pixels, each >= 2), each at every width. Default: the two-stage
        search of the module docstring (:data:`COARSE_RATIOS` times the data's estimate
        ranked by linear prediction, then posterior fits at :data:`RATIOS` times the best
        of those at every width).
    width : float or sequence of float, optional
        Relative ring width(s) of :func:`~pmctx.vonmises.spectral.ring_spectrum`
        (default :data:`WIDTHS` for the search, ``RING_WIDTH`` with given spacings).
    floor : float, default FLOOR
        White floor of the spectrum.
    kappa_obs : float, optional
        Fixed observation concentration (default: learned in every fit).
    n_folds : int, default 3
        Folds of observed pixels (a random split shared by every grid point).
    draws, tune : int
        Kept and discarded draws of each fold's fit.
    estimate : float, optional
        Where the search starts (default the data's
        :func:`~pmctx.vonmises.spectral.estimate_spacing`); ignored with given spacings.
    rescore_draws : int, optional
        Kept draws per fold when the rows of stacking weight at least
        :data:`RESCORE_WEIGHT` are scored again (module docstring; default
        :data:`RESCORE_FACTOR` times ``draws``; 0 or at most ``draws``: no rescoring).
        With one row, that row is rescored.
    random_seed : int or numpy.random.Generator, optional
        Random seed or generator.

    Returns
    -------
    SpacingCV
        Rows in the order scored (given spacings: spacing-major, width-minor); the curve's
        ``draws`` column holds the kept draws per fold behind each row's score.
    """
    z = np.asarray(z, dtype=np.float64)
    observed = np.asarray(observed, dtype=bool)
    n_folds = check_int(n_folds, "n_folds", minimum=2)
    if observed.sum() < n_folds:
        raise ValueError(
            f"n_folds ({n_folds}) must be at most the number of observed pixels "
            f"({int(observed.sum())}); pass fewer folds or observe more pixels."
        )
    search = spacings is None
    if width is None:
        width = WIDTHS if search else RING_WIDTH
    widths = [check_positive(b, "width") for b in np.atleast_1d(width)]
    if not widths:
        raise ValueError("width must hold at least one value; pass e.g. 0.25 or (0.25, 0.5).")
    draws = check_int(draws, "draws", minimum=1)
    rescore_draws = check_int(
        RESCORE_FACTOR * draws if rescore_draws is None else rescore_draws,
        "rescore_draws",
        minimum=0,
    )
    rng = as_rng(random_seed)
    obs_index = np.flatnonzero(observed)
    fold_of = rng.permutation(obs_index.size) % n_folds
    score = _Scorer(z, observed, obs_index, fold_of, floor, kappa_obs, rng)
    if search:
        coarse, estimate = spacing_grid(z, observed, COARSE_RATIOS, estimate=estimate)
        ranked = _linear_prediction_search(z, observed, fold_of, coarse, widths, floor)
        best = float(ranked["spacing"].iloc[int(np.argmax(ranked["cosine"]))])
        for spacing in spacing_grid(z, observed, RATIOS, estimate=best)[0]:
            for b in widths:
                score(spacing, b, draws, tune)
    else:
        estimate = ranked = None
        for spacing in np.atleast_1d(spacings):
            for b in widths:
                score(check_positive(spacing, "spacing"), b, draws, tune)
    if rescore_draws > draws:
        weights = stacking_weights(np.asarray(score.pointwise))
        for g in np.flatnonzero(weights >= min(RESCORE_WEIGHT, weights.max())):
            score(*score.grid[g], rescore_draws, tune)
    pointwise = np.asarray(score.pointwise)
    mean = pointwise.mean(axis=1)
    best = int(np.argmax(mean))
    diff = pointwise - pointwise[best]
    se = diff.std(axis=1, ddof=1) / np.sqrt(obs_index.size) if obs_index.size > 1 else 0 * mean
    curve = pd.DataFrame(
        {
            "spacing": [g[0] for g in score.grid],
            "width": [g[1] for g in score.grid],
            "score": mean,
            "delta": mean - mean[best],
            "se_diff": se,
            "kappa_obs": score.kappa_obs,
            "draws": score.draws,
        }
    )
    return SpacingCV(curve, pointwise, estimate, ranked)


def _linear_prediction_search(z, observed, fold_of, spacings, widths, floor) -> pd.DataFrame:
    """The first stage: every ``(spacing, width)`` ranked by held-out linear prediction."""
    rows = []
    for spacing in spacings:
        for width in widths:
            cosine, share = linear_prediction_score(
                z, observed, fold_of, spacing, width, floor=floor
            )
            rows.append((spacing, width, cosine, share))
    return pd.DataFrame(rows, columns=["spacing", "width", "cosine", "signal_share"])


class _Scorer:
    """Scores ``(spacing, width)`` grid points on shared folds; a longer run replaces a row."""

    def __init__(self, z, observed, obs_index, fold_of, floor, kappa_obs, rng):
        self.args = (z, observed, obs_index, fold_of, floor, kappa_obs, rng)
        self.grid, self.pointwise, self.kappa_obs, self.draws = [], [], [], []

    def __call__(self, spacing, width, draws, tune):
        key = (float(spacing), float(width))
        if key in self.grid and self.draws[self.grid.index(key)] >= draws:
            return
        row, k_mean = self._score(spacing, width, draws, tune)
        if key in self.grid:
            g = self.grid.index(key)
            self.pointwise[g], self.kappa_obs[g], self.draws[g] = row, k_mean, draws
        else:
            self.grid.append(key)
            self.pointwise.append(row)
            self.kappa_obs.append(k_mean)
            self.draws.append(draws)

    def _score(self, spacing, width, draws, tune):
        z, observed, obs_index, fold_of, floor, kappa_obs, rng = self.args
        spectrum = ring_spectrum(torus_for(z.shape, [spacing]), spacing, width, floor)
        row = np.empty(obs_index.size)
        k_means = []
        for fold in range(int(fold_of.max()) + 1):
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
            row[fold_of == fold] = heldout_log_predictive(z[test], o_test, k_draws)
            k_means.append(k_draws.mean())
        return row, float(np.mean(k_means))
