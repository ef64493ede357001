"""Choosing the smoothness ``kappa`` and the rank by held-out-pixel cross-validation.

The map prior's normaliser depends on ``kappa`` and ``R`` and is intractable on a loopy
grid, so the evidence is unavailable; instead the observed pixels are split into folds, the
map is sampled given all other folds (the augmented sampler, with ``kappa_obs`` learned by
its exact slice update unless given), and each held-out observation is scored by the
model's own posterior predictive density,

    log p(z_i | z_train) ~= log mean_s VonMises(z_i; o_i^(s), s_i kappa_obs^(s)),

averaged over all observed pixels (each held out once). :func:`cross_validate` returns the
whole CV curve over a grid of ``(kappa, rank)`` with paired standard errors against the best
pair, and picks the best pair; ``rule="one_se"`` instead picks the smoothest, lowest-rank
pair whose score is within one paired standard error of the best (ranks above the true one
fit the data equally well, so the plain maximum picks among them at random).

Examples
--------
>>> import numpy as np
>>> from pmctx.vonmises.select import cross_validate
>>> rng = np.random.default_rng(0)
>>> z = rng.vonmises(np.zeros((8, 8)), 4.0)
>>> result = cross_validate(z, kappas=[1.0, 4.0], ranks=[2], n_sweeps=20, random_seed=0)
>>> result.curve.shape, result.best_rank
((2, 6), 2)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.special import logsumexp

from pmctx.numerics import logsumexp_rows
from pmctx.validation import as_rng
from pmctx.vonmises.augmented import augmented_sweep
from pmctx.vonmises.hyper import kappa_obs_statistics, log_i0, sample_kappa_obs
from pmctx.vonmises.pointwise import _OFFSETS, node_conditional_terms
from pmctx.vonmises.potentials import (
    LOG_2PI,
    log_circle_normaliser,
    mode_vectors,
    natural_field,
    neighbour_terms,
)
from pmctx.vonmises.start import smoothed_start

__all__ = [
    "AUTO_KAPPAS",
    "AUTO_MIN_OBSERVED",
    "CrossValidation",
    "choose_kappa",
    "cross_validate",
    "heldout_log_predictive",
    "heldout_log_predictive_rb",
    "observation_log_density",
]

HELDOUT = ("rao_blackwell", "draws")

#: The smoothing concentrations ``reconstruct(kappa="auto")`` scores by held-out pixels.
AUTO_KAPPAS = (2.0, 3.0, 4.0, 5.0, 6.0, 8.0)
#: Fewest observed pixels for which ``kappa="auto"`` cross-validates; below, it takes
#: :data:`FALLBACK_KAPPA` (three folds of a few dozen pixels cannot tell the grid apart).
AUTO_MIN_OBSERVED = 100
#: ``kappa`` of the seed's maps (Smith 2012, Fig. 6), taken when a map is too small to score.
FALLBACK_KAPPA = 5.0


@dataclass(frozen=True)
class CrossValidation:
    """Outcome of :func:`cross_validate`.

    ``curve`` has one row per ``(kappa, rank)``: ``score`` (mean held-out log predictive
    density per observed pixel), ``se_diff`` (paired standard error of its difference to the
    best pair), ``delta`` (score minus the best score) and ``kappa_obs`` (posterior mean,
    averaged over folds). ``pointwise`` holds the per-pixel log predictive densities.

    Parameters
    ----------
    curve : pandas.DataFrame
        One row per ``(kappa, rank)``.
    best_kappa : float
        The selected ``kappa``.
    best_rank : int
        The selected rank.
    pointwise : numpy.ndarray
        Per-pixel log predictive densities.
    """

    curve: pd.DataFrame
    best_kappa: float
    best_rank: int
    pointwise: np.ndarray


def observation_log_density(z, o_draws, kappa_obs_draws, signal=None) -> np.ndarray:
    """``log VonMises(z_i; o_i^(s), s_i kappa_obs^(s))`` of every draw and pixel.

    Parameters
    ----------
    z : numpy.ndarray (n,)
        Observed doubled angles.
    o_draws : numpy.ndarray (S, n)
        Posterior draws of the angles there.
    kappa_obs_draws : numpy.ndarray (S,)
        Posterior draws of ``kappa_obs``.
    signal : numpy.ndarray (n,), optional
        Relative signal strength.

    Returns
    -------
    numpy.ndarray (S, n)
        The pointwise log-likelihood (a fit's ``log_likelihood`` group).

    Examples
    --------
    >>> import numpy as np
    >>> float(observation_log_density(np.zeros(1), np.zeros((1, 1)), np.array([0.0]))[0, 0])
    -1.8378770664093453
    """
    strength = np.ones(o_draws.shape[1]) if signal is None else np.asarray(signal, np.float64)
    conc = np.asarray(kappa_obs_draws, np.float64)[:, None] * strength
    return conc * np.cos(z - o_draws) - LOG_2PI - log_i0(conc)


def heldout_log_predictive(z, o_draws, kappa_obs_draws, signal=None):
    """``log mean_s VonMises(z_i; o_i^(s), s_i kappa_obs^(s))`` for each held-out pixel.

    ``z`` ``(n,)``, ``o_draws`` ``(S, n)``, ``kappa_obs_draws`` ``(S,)``; ``signal`` ``(n,)``.

    Parameters
    ----------
    z : numpy.ndarray (n,)
        Held-out observations.
    o_draws : numpy.ndarray (S, n)
        Posterior draws of the angles there.
    kappa_obs_draws : numpy.ndarray (S,)
        Posterior draws of ``kappa_obs``.
    signal : numpy.ndarray (n,), optional
        Relative signal strength.

    Returns
    -------
    numpy.ndarray (n,)
        Log predictive density of each pixel.
    """
    log_dens = observation_log_density(z, o_draws, kappa_obs_draws, signal)
    return logsumexp(log_dens, axis=0) - np.log(o_draws.shape[0])


def heldout_log_predictive_rb(z, rows, cols, map_draws, kappa, rank, kappa_obs_draws, signal=None):
    """Rao-Blackwellised held-out density: the exact conditional predictive, averaged.

    Given a map draw, a held-out pixel's angle has the exact conditional ``p(o_i | o_nbrs)``
    (a mixture of von Mises terms ``w_c exp(v_c . o)``, its observation being held out), and
    ``int VonMises(z; o, k) w_c exp(v_c . o) do = w_c 2 pi I0(|v_c + k u(z)|) / (2 pi I0(k))``
    with ``u(z) = (cos z, sin z)``. The density averages this over the draws instead of
    scoring the sampled angle itself (same expectation, smaller variance).

    Parameters
    ----------
    z : numpy.ndarray (n,)
        Held-out observations at ``(rows, cols)``.
    rows, cols : numpy.ndarray of int (n,)
        The held-out pixels.
    map_draws : numpy.ndarray (S, M, N)
        Posterior draws of the whole map (fit without the held-out pixels).
    kappa : float
        Smoothing concentration of the fit.
    rank : int
        Rank of the fit.
    kappa_obs_draws : numpy.ndarray (S,)
        Posterior draws of ``kappa_obs``.
    signal : numpy.ndarray (n,), optional
        Relative signal strength at the held-out pixels.

    Returns
    -------
    numpy.ndarray (n,)
        Log predictive density of each held-out pixel.
    """
    z = np.asarray(z, dtype=np.float64)
    rows, cols = np.asarray(rows), np.asarray(cols)
    strength = np.ones(z.shape) if signal is None else np.asarray(signal, np.float64)
    modes = mode_vectors(rank)
    unit = np.stack([np.cos(z), np.sin(z)], axis=-1)
    map_draws = np.asarray(map_draws, dtype=np.float64)
    # The terms' natural vectors do not depend on the draw (only their weights do), and the
    # (R + 1)^4 combinations of one pixel share a few distinct vectors (sums of 4 mode
    # vectors: 126 for rank 5, 1001 for rank 10, against 1296 and 14641 terms). So the
    # normalisers are computed once per distinct vector (the same numbers, gathered back),
    # not once per term and draw.
    _, vecs = node_conditional_terms(
        map_draws[0], rows, cols, np.zeros((*map_draws.shape[1:], 2)), kappa, modes
    )
    # (Viewed as complex numbers: np.unique sorts those much faster than rows of two floats.)
    distinct, which = np.unique(
        np.ascontiguousarray(vecs).view(np.complex128)[..., 0], return_inverse=True
    )
    distinct = distinct.view(np.float64).reshape(-1, 2)
    denom_terms = log_circle_normaliser(np.linalg.norm(distinct, axis=-1))[which]
    out = np.empty((len(map_draws), z.size))
    for s, (o, k_obs) in enumerate(zip(map_draws, np.asarray(kappa_obs_draws, np.float64))):
        log_w = _node_log_weights(o, rows, cols, kappa, modes)
        conc = k_obs * strength
        base = distinct[None, :, :]
        joint = base + (conc[:, None] * unit)[:, None, :]
        numer_terms = np.take_along_axis(
            log_circle_normaliser(np.linalg.norm(joint, axis=-1)), which, axis=1
        )
        numer = logsumexp_rows(log_w + numer_terms)
        denom = logsumexp_rows(log_w + denom_terms)
        out[s] = numer - denom - log_circle_normaliser(conc)
    return logsumexp(out, axis=0) - np.log(len(map_draws))


def _node_log_weights(o, rows, cols, kappa, modes):
    # The log weights of node_conditional_terms alone (the same sums in the same order).
    n_rows, n_cols = o.shape
    log_w = np.zeros((len(rows), 1))
    for dr, dc in _OFFSETS:
        r, c = rows + dr, cols + dc
        present = (r >= 0) & (r < n_rows) & (c >= 0) & (c < n_cols)
        o_n = o[np.clip(r, 0, n_rows - 1), np.clip(c, 0, n_cols - 1)]
        lw_n, _ = neighbour_terms(o_n, present, kappa, modes)
        log_w = (log_w[:, :, None] + lw_n[:, None, :]).reshape(len(rows), -1)
    return log_w


def _fit_fold(z, train, test, kappa, rank, kappa_obs, signal, n_sweeps, burn, rng, full=False):
    learn = kappa_obs is None
    k_obs = 2.0 if learn else float(kappa_obs)
    # Smoothed training data, not random angles: see pmctx.vonmises.start for why.
    o = smoothed_start(z, train)
    o_draws, k_draws = [], []
    for sweep in range(n_sweeps):
        field = natural_field(z, train, k_obs, signal=signal)
        o = augmented_sweep(o, field, kappa, rank, rng)
        if learn:
            stats = kappa_obs_statistics(o, z, train, signal)
            k_obs = sample_kappa_obs(stats, k_obs, rng)
        if sweep >= burn:
            o_draws.append(o.copy() if full else o[test])
            k_draws.append(k_obs)
    return np.asarray(o_draws), np.asarray(k_draws)


def cross_validate(
    z,
    mask=None,
    *,
    kappas,
    ranks,
    kappa_obs=None,
    signal=None,
    n_folds: int = 3,
    n_sweeps: int = 150,
    burn: int | None = None,
    rule: str = "best",
    heldout: str = "draws",
    rb_draws: int = 20,
    random_seed=None,
) -> CrossValidation:
    """Held-out-pixel cross-validation of ``(kappa, rank)`` for an orientation map.

    Parameters
    ----------
    z : array_like, shape (M, N)
        Observed doubled angles (NaN = missing).
    mask : array_like of 0/1, optional
        1 where observed (default: not NaN).
    kappas, ranks : sequences
        Grid of smoothness concentrations and ranks to score.
    kappa_obs : float, optional
        Observation concentration; default ``None`` learns it in every fit.
    signal : array_like, shape (M, N), optional
        Relative signal strength per pixel.
    n_folds : int, default 3
        Folds of observed pixels (random split, the same for every grid point).
    n_sweeps, burn : int
        Augmented sweeps per fit and how many to discard (default a third).
    rule : {"best", "one_se"}
        ``"best"``: the highest score; ``"one_se"``: the lowest rank, then the highest
        ``kappa``, among pairs within one paired standard error of the best (for the rule
        that favours the smallest ``kappa`` see :func:`pmctx.vonmises.average.pick_index`).
    heldout : {"draws", "rao_blackwell"}, default "draws"
        ``"draws"`` scores each held-out pixel by the mean of ``VonMises(z_i; o_i^(s),
        kappa_obs^(s))`` over the sampled angles; ``"rao_blackwell"`` by the mean of its
        exact conditional predictive given the neighbours of each draw
        (:func:`heldout_log_predictive_rb`).
    rb_draws : int, default 20
        Map draws (evenly spaced after burn-in) used by ``"rao_blackwell"``.
    random_seed : int or numpy.random.Generator, optional

    Returns
    -------
    CrossValidation
    """
    z = np.asarray(z, dtype=np.float64)
    observed = ~np.isnan(z) if mask is None else np.asarray(mask).astype(bool)
    if rule not in ("best", "one_se"):
        raise ValueError(f"rule must be 'best' or 'one_se', got {rule!r}.")
    if heldout not in HELDOUT:
        raise ValueError(f"heldout must be one of {HELDOUT}, got {heldout!r}.")
    if n_folds < 2 or observed.sum() < n_folds:
        raise ValueError(
            f"n_folds must be >= 2 and at most the number of observed pixels "
            f"({int(observed.sum())}); got {n_folds}."
        )
    z = np.where(observed, z, 0.0)
    signal = None if signal is None else np.asarray(signal, dtype=np.float64)
    burn = n_sweeps // 3 if burn is None else int(burn)
    rng = as_rng(random_seed)
    obs_index = np.flatnonzero(observed)
    fold_of = rng.permutation(obs_index.size) % n_folds
    grid = [(float(k), int(r)) for k in kappas for r in ranks]
    pointwise = np.empty((len(grid), obs_index.size))
    mean_kappa_obs = np.empty(len(grid))
    for g, (kappa, rank) in enumerate(grid):
        k_means = []
        for fold in range(n_folds):
            test = np.zeros(z.shape, dtype=bool)
            test.flat[obs_index[fold_of == fold]] = True
            train = observed & ~test
            rb = heldout == "rao_blackwell"
            o_draws, k_draws = _fit_fold(
                z, train, test, kappa, rank, kappa_obs, signal, n_sweeps, burn, rng, rb
            )
            s_test = None if signal is None else signal[test]
            if rb:
                keep = np.unique(np.linspace(0, len(o_draws) - 1, rb_draws).round().astype(int))
                rows, cols = np.nonzero(test)
                pointwise[g, fold_of == fold] = heldout_log_predictive_rb(
                    z[test], rows, cols, o_draws[keep], kappa, rank, k_draws[keep], s_test
                )
            else:
                pointwise[g, fold_of == fold] = heldout_log_predictive(
                    z[test], o_draws, k_draws, s_test
                )
            k_means.append(k_draws.mean())
        mean_kappa_obs[g] = np.mean(k_means)
    score = pointwise.mean(axis=1)
    best = int(np.argmax(score))
    diff = pointwise - pointwise[best]
    se = diff.std(axis=1, ddof=1) / np.sqrt(obs_index.size)
    curve = pd.DataFrame(
        {
            "kappa": [k for k, _ in grid],
            "rank": [r for _, r in grid],
            "score": score,
            "delta": score - score[best],
            "se_diff": se,
            "kappa_obs": mean_kappa_obs,
        }
    )
    pick = best
    if rule == "one_se":
        ok = curve[curve["delta"] >= -curve["se_diff"].where(curve["se_diff"] > 0, 0.0)]
        ok = ok.sort_values(["rank", "kappa"], ascending=[True, False])
        pick = int(ok.index[0])
    return CrossValidation(curve, grid[pick][0], grid[pick][1], pointwise)


def choose_kappa(z, mask=None, *, rank: int, kappa_obs=None, random_seed=None):
    """The ``kappa`` of :data:`AUTO_KAPPAS` whose fits best predict held-out pixels.

    What ``reconstruct(kappa="auto")`` runs: :func:`cross_validate` (three folds, 150 sweeps
    per fit, ``rule="best"``) at the given rank. Why a data-chosen ``kappa``: a ``kappa``
    above what the data favour gives a posterior with several pinwheel layouts that chains
    leave only every few thousand sweeps (on a 128 x 128 band-pass map at ``kappa = 5``
    chains kept different layouts through 3,000 draws; docs/guides/model_notes.md).

    Parameters
    ----------
    z : array_like, shape (M, N)
        Observed doubled angles (NaN = missing).
    mask : array_like of 0/1, optional
        1 where observed (default: not NaN).
    rank : int
        Rank of the edge potential.
    kappa_obs : float, optional
        Observation concentration; ``None`` learns it in every fit.
    random_seed : int or numpy.random.Generator, optional
        Seeds the folds and the fits.

    Returns
    -------
    kappa : float
        The chosen ``kappa``; :data:`FALLBACK_KAPPA` when fewer than
        :data:`AUTO_MIN_OBSERVED` pixels are observed.
    result : CrossValidation or None
        The scores (None when the map was too small to score).

    Examples
    --------
    >>> import numpy as np
    >>> choose_kappa(np.zeros((4, 4)), rank=3)
    (5.0, None)
    """
    z = np.asarray(z, dtype=np.float64)
    observed = ~np.isnan(z) if mask is None else np.asarray(mask).astype(bool) & ~np.isnan(z)
    if observed.sum() < AUTO_MIN_OBSERVED:
        return FALLBACK_KAPPA, None
    result = cross_validate(
        z, observed, kappas=AUTO_KAPPAS, ranks=[rank], kappa_obs=kappa_obs,
        random_seed=random_seed,
    )  # fmt: skip
    return result.best_kappa, result
