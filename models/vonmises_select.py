"""Orientation-map reconstruction with ``kappa`` and the rank chosen from the data.

:func:`reconstruct_cv` runs held-out-pixel cross-validation over a ``(kappa, rank)`` grid
(:func:`pmctx.vonmises.select.cross_validate`, Rao-Blackwellised held-out densities by
default), turns the held-out densities into weights over the grid
(:func:`grid_weights`: stacking, pseudo-BMA+, or one grid point by a pick rule), samples
the map at every grid point of non-negligible weight (augmented sampler, ``kappa_obs``
learned by its exact slice update, start from the smoothed data) and pools the draws by
weight (:func:`pmctx.vonmises.average.cv_average`). The result is a ``DataTree`` whose
``cv`` group holds the CV curve and the weights.

By default (``spacings="auto"``) a second prior is weighed against the grid on the same
held-out pixels: the band-pass prior with a column spacing
(:mod:`pmctx.models.vonmises_spectral`), its spacing and ring width searched by
:func:`pmctx.vonmises.spectral_cv.cross_validate_spacing`, the prior chosen by
:func:`pmctx.vonmises.average.choose_prior` and stacked within it. Real orientation maps
have a column spacing that a nearest-neighbour prior does not know: on band-pass maps the
default's error at missing pixels is lower than a complex GP's and normalized convolution's
in every condition and on every map, with 90% intervals close to nominal, and the
nearest-neighbour grid alone (``spacings=None``) is worse than both
(``benchmarks/bench_vonmises_realistic.py``; ``benchmarks/results/vonmises_realistic.json``
and ``vonmises_realistic_128.json``).

The default ``method="stacking"`` comes from ``benchmarks/study_vonmises_kappa.py``
(``benchmarks/results/vonmises_kappa_study.json``): its 90% intervals at missing pixels
cover close to nominal, as pseudo-BMA+'s do, at the same error; CV's single best kappa
under-covers, and the one-SE rule towards smaller kappa and the elbow over-cover with
larger errors.

Examples
--------
>>> import numpy as np
>>> from pmctx.models.vonmises_select import reconstruct_cv
>>> rng = np.random.default_rng(0)
>>> theta = np.mod(rng.vonmises(np.zeros((8, 8)), 4.0), 2 * np.pi) / 2
>>> idata = reconstruct_cv(theta, kappas=[1.0, 4.0], ranks=[2], cv_sweeps=12, draws=20,
...                        tune=10, spacings=None, random_seed=0)
>>> idata.posterior["theta"].shape, float(idata.cv["weight"].sum().round(6))
((1, 20, 8, 8), 1.0)
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from pmctx.validation import as_rng, check_choice, check_int
from pmctx.vonmises.augmented import augmented_sweep
from pmctx.vonmises.average import (
    PICK_RULES,
    choose_prior,
    cv_average,
    pick_index,
    pseudo_bma_weights,
    stacking_weights,
)
from pmctx.vonmises.hyper import kappa_obs_statistics, sample_kappa_obs
from pmctx.vonmises.inputs import observed_doubled_angles
from pmctx.vonmises.outputs import pooled_map_tree
from pmctx.vonmises.potentials import natural_field
from pmctx.vonmises.select import cross_validate
from pmctx.vonmises.spectral import ring_spectrum, spectral_posterior
from pmctx.vonmises.spectral_cv import cross_validate_spacing, torus_for
from pmctx.vonmises.start import smoothed_start

__all__ = ["KAPPAS", "METHODS", "grid_posterior", "grid_weights", "reconstruct_cv"]

KAPPAS = (1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0)
METHODS = ("stacking", "pseudo_bma", *PICK_RULES)


def grid_weights(cv, method: str = "stacking", *, random_seed=None) -> np.ndarray:
    """Weights over the grid of a cross-validation result.

    Parameters
    ----------
    cv : pmctx.vonmises.select.CrossValidation
        The result of :func:`~pmctx.vonmises.select.cross_validate`.
    method : {"stacking", "pseudo_bma", "best", "one_se", "elbow"}, default "stacking"
        Averaging rule, or a pick rule of :func:`~pmctx.vonmises.average.pick_index`
        (weight one on the chosen point).
    random_seed : int or numpy.random.Generator, optional
        Seed of the Bayesian bootstrap (``"pseudo_bma"``).

    Returns
    -------
    numpy.ndarray
        One weight per row of ``cv.curve``, summing to one.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> import pandas as pd
    >>> cv = SimpleNamespace(curve=pd.DataFrame({"kappa": [1.0, 2.0], "rank": [5, 5]}),
    ...                      pointwise=np.log([[0.5, 0.1], [0.1, 0.5]]))
    >>> grid_weights(cv).round(3).tolist(), grid_weights(cv, "best").tolist()
    ([0.5, 0.5], [1.0, 0.0])
    """
    method = check_choice(method, "method", list(METHODS))
    if method == "stacking":
        return stacking_weights(cv.pointwise)
    if method == "pseudo_bma":
        return pseudo_bma_weights(cv.pointwise, random_seed=random_seed)
    weights = np.zeros(len(cv.curve))
    weights[pick_index(cv.pointwise, cv.curve["kappa"], cv.curve["rank"], method)] = 1.0
    return weights


def grid_posterior(
    z,
    observed,
    kappa,
    rank,
    *,
    draws=200,
    tune=100,
    kappa_obs=None,
    signal=None,
    random_seed=None,
):
    """Posterior draws of the whole map at one ``(kappa, rank)`` (``kappa_obs`` learned).

    Parameters
    ----------
    z : numpy.ndarray (M, N)
        Observed doubled angles (any value where not observed).
    observed : numpy.ndarray of bool (M, N)
        Where ``z`` is observed.
    kappa : float
        Smoothing concentration.
    rank : int
        Rank of the edge potential.
    draws, tune : int
        Kept sweeps and burn-in sweeps.
    kappa_obs : float, optional
        Fixed observation concentration (default: learned, starting at 2).
    signal : numpy.ndarray (M, N), optional
        Relative signal strength per pixel.
    random_seed : int or numpy.random.Generator, optional
        Random seed or generator.

    Returns
    -------
    o_draws : numpy.ndarray (draws, M, N)
        Doubled-angle map draws.
    kappa_obs_draws : numpy.ndarray (draws,)
        Draws of ``kappa_obs``.

    Examples
    --------
    >>> z = np.zeros((4, 4))
    >>> o, k = grid_posterior(z, z == 0, 2.0, 3, draws=5, tune=2, random_seed=0)
    >>> o.shape, k.shape
    ((5, 4, 4), (5,))
    """
    rng = as_rng(random_seed)
    learn = kappa_obs is None
    k_obs = 2.0 if learn else float(kappa_obs)
    o = smoothed_start(z, observed)
    o_draws, k_draws = [], []
    for sweep in range(tune + draws):
        field = natural_field(z, observed, k_obs, signal=signal)
        o = augmented_sweep(o, field, kappa, rank, rng)
        if learn:
            k_obs = sample_kappa_obs(kappa_obs_statistics(o, z, observed, signal), k_obs, rng)
        if sweep >= tune:
            o_draws.append(o.copy())
            k_draws.append(k_obs)
    return np.asarray(o_draws), np.asarray(k_draws)


def reconstruct_cv(
    theta_obs,
    *,
    mask=None,
    kappas=KAPPAS,
    ranks=(5,),
    method: str = "stacking",
    kappa_obs=None,
    signal=None,
    n_folds: int = 3,
    cv_sweeps: int = 60,
    heldout: str = "rao_blackwell",
    draws: int = 200,
    tune: int = 100,
    min_weight: float = 0.01,
    spacings="auto",
    random_seed=None,
):
    """Reconstruct a map with ``(kappa, rank)`` weighted or chosen by held-out pixels.

    Parameters
    ----------
    theta_obs : array_like, shape (M, N)
        Observed orientations in ``[0, pi]``; NaN marks a missing pixel.
    mask : array_like of 0/1, optional
        1 where observed (default: not NaN).
    kappas, ranks : sequences
        The grid (default ``kappa`` in :data:`KAPPAS`, rank 5).
    method : {"stacking", "pseudo_bma", "best", "one_se", "elbow"}, default "stacking"
        How the grid is used (:func:`grid_weights`).
    kappa_obs : float, optional
        Fixed observation concentration on doubled angles (default: learned).
    signal : array_like, shape (M, N), optional
        Relative signal strength per pixel.
    n_folds, cv_sweeps : int
        Folds and sweeps per fold fit of the cross-validation.
    heldout : {"rao_blackwell", "draws"}, default "rao_blackwell"
        Held-out density of :func:`~pmctx.vonmises.select.cross_validate`.
    draws, tune : int
        Pooled draws, and burn-in sweeps of each grid point's fit.
    min_weight : float, default 0.01
        Grid points below this weight are dropped (the rest renormalised) before fitting.
    spacings : "auto", "cv", None or sequence of float, default "auto"
        Also weigh the band-pass prior with a column spacing
        (:mod:`pmctx.models.vonmises_spectral`) against the grid, by the same held-out
        pixels (its own folds, :func:`~pmctx.vonmises.spectral_cv.cross_validate_spacing`,
        each fold fit ``cv_sweeps`` discarded and ``2 cv_sweeps / 3`` kept draws, the rows
        of stacking weight at least 0.1 scored again with 4 times the kept draws): ``"cv"`` searches
        spacing and ring width (a grid from 2.5 times below the data's estimated spacing to
        1.6 times above ranked by linear prediction, then posterior fits around its best at
        ring widths 0.25 and 0.5); a sequence
        fixes the spacings in pixels (ring width 0.25). ``method`` must then be
        "stacking" (:func:`~pmctx.vonmises.average.choose_prior`: the band-pass prior
        unless the nearest-neighbour mixture's held-out score leads by more than
        :data:`~pmctx.vonmises.average.PRIOR_MARGIN` paired standard errors, then the
        chosen prior's grid stacked), "pseudo_bma" or "best" (over the joint grid), and
        ``signal`` is not supported. None: the nearest-neighbour prior alone. ``"auto"``:
        ``"cv"`` unless ``signal`` is given or ``method`` is "one_se" or "elbow", None then.
    random_seed : int or numpy.random.Generator, optional
        Random seed or generator (as in :func:`pymc.sample`).

    Returns
    -------
    xarray.DataTree
        ``posterior``: ``o``, ``theta`` (1 chain, ``draws``), ``kappa_obs``, and ``kappa`` and
        ``rank`` of the grid point each draw came from; ``log_likelihood``: ``z``, the von
        Mises log density of every observed pixel per draw (``obs_pixel``, for ``az.loo``);
        ``cv``: the CV curve over ``grid`` with ``weight``; ``constant_data``: ``obs_mask``.
        ``cv.attrs`` holds ``method``, ``heldout`` and the weighted ``kappa``; with
        ``spacings`` also ``spectral_weight``, the posterior's ``spacing`` and ``width``, and
        (stacking) the chosen ``prior`` with ``prior_diff`` and ``prior_se``
        (:func:`~pmctx.vonmises.average.choose_prior`).

    Examples
    --------
    >>> idata = reconstruct_cv(np.full((6, 6), 0.5), kappas=[2.0], ranks=[3], cv_sweeps=9,
    ...                        draws=5, tune=3, spacings=None, random_seed=1)
    >>> idata.cv["weight"].values.tolist(), idata.posterior["rank"].values.ravel()[:2].tolist()
    ([1.0], [3, 3])
    """
    import xarray as xr

    method = check_choice(method, "method", list(METHODS))
    draws = check_int(draws, "draws", minimum=1)
    z, observed = observed_doubled_angles(theta_obs, mask)
    signal = None if signal is None else np.asarray(signal, dtype=np.float64)
    rng = as_rng(random_seed)
    cv = cross_validate(
        np.where(observed, z, np.nan),
        kappas=kappas,
        ranks=ranks,
        kappa_obs=kappa_obs,
        signal=signal,
        n_folds=n_folds,
        n_sweeps=cv_sweeps,
        heldout=heldout,
        random_seed=rng,
    )
    if isinstance(spacings, str) and spacings == "auto":
        spacings = None if signal is not None or method in ("one_se", "elbow") else "cv"
    spectral, choice = None, {}
    if spacings is None:
        weights = grid_weights(cv, method, random_seed=rng)
    else:
        spectral, weights, choice = _with_spectral(
            cv, z, observed, spacings, method, kappa_obs, signal, n_folds, cv_sweeps, rng
        )
    fit_weights = np.where(weights >= min(min_weight, weights.max()), weights, 0.0)
    fits = [
        grid_posterior(
            z,
            observed,
            kappa,
            rank,
            draws=draws,
            tune=tune,
            kappa_obs=kappa_obs,
            signal=signal,
            random_seed=rng,
        )
        if w > 0
        else None
        for w, kappa, rank in zip(fit_weights, cv.curve["kappa"], cv.curve["rank"])
    ]
    if spectral is not None:
        fits += [
            spectral_posterior(
                z,
                observed,
                ring_spectrum(torus_for(z.shape, [spacing]), spacing, width),
                draws=draws,
                tune=tune,
                kappa_obs=kappa_obs,
                random_seed=rng,
            )
            if w > 0
            else None
            for w, spacing, width in zip(
                fit_weights[len(cv.curve) :], spectral.curve["spacing"], spectral.curve["width"]
            )
        ]
    # Pool draw indices, so each map keeps its own kappa_obs draw.
    index, source = cv_average(
        [None if f is None else np.arange(len(f[0])) for f in fits],
        fit_weights,
        draws,
        random_seed=rng,
    )
    o = np.stack([fits[k][0][i] for k, i in zip(source, index)])
    k_obs = np.array([fits[k][1][i] for k, i in zip(source, index)])
    curve = cv.curve
    if spectral is not None:
        curve = pd.concat(
            [curve.assign(prior="mrf"), spectral.curve.assign(prior="spectral")],
            ignore_index=True,
        )
        curve["prior"] = curve["prior"].astype(str)
    curve = curve.assign(weight=weights)
    grid = {"grid": np.arange(len(curve))}
    nn = curve["kappa"].notna().to_numpy()
    attrs = {
        "method": method,
        "heldout": heldout,
        "weighted_kappa": float(np.dot(weights[nn], curve["kappa"][nn]) / weights[nn].sum())
        if weights[nn].sum() > 0
        else float("nan"),
    }
    if spectral is not None:
        attrs["spectral_weight"] = float(weights[~nn].sum())
        attrs.update(choice)
    cv_group = xr.Dataset(
        {name: ("grid", curve[name].to_numpy()) for name in curve.columns},
        coords=grid,
        attrs=attrs,
    )
    posterior = {
        "kappa": curve["kappa"].to_numpy()[source],
        "rank": curve["rank"].to_numpy()[source],
    }
    if spectral is not None:
        posterior["spacing"] = curve["spacing"].to_numpy()[source]
        posterior["width"] = curve["width"].to_numpy()[source]
    idata = pooled_map_tree(o, k_obs, z, observed, signal, **posterior)
    idata["cv"] = cv_group
    return idata


def _with_spectral(cv, z, observed, spacings, method, kappa_obs, signal, n_folds, sweeps, rng):
    """The band-pass prior's CV, weights over the joint grid (MRF rows first), choice attrs.

    Each fold fit of the band-pass prior discards ``sweeps`` draws and keeps ``2 sweeps / 3``
    (the defaults of :func:`~pmctx.vonmises.spectral_cv.cross_validate_spacing` at the
    default ``cv_sweeps``).
    """
    if method not in ("stacking", "pseudo_bma", "best"):
        raise ValueError(
            f"method={method!r} orders the grid by kappa and rank only; with spacings use "
            "'stacking', 'pseudo_bma' or 'best'."
        )
    if signal is not None:
        raise ValueError(
            "spacings (the band-pass prior) does not support a per-pixel signal; pass "
            "signal=None or spacings=None."
        )
    if isinstance(spacings, str) and spacings != "cv":
        raise ValueError(
            f"spacings must be 'auto', 'cv', None or a sequence of pixels, got {spacings!r}."
        )
    spectral = cross_validate_spacing(
        z,
        observed,
        spacings=None if isinstance(spacings, str) else spacings,
        kappa_obs=kappa_obs,
        n_folds=n_folds,
        draws=max(1, 2 * sweeps // 3),
        tune=sweeps,
        random_seed=rng,
    )
    pointwise = np.vstack([cv.pointwise, spectral.pointwise])
    if method == "stacking":  # choose the prior (choose_prior), stack within it
        prior, weights, diff, se = choose_prior(cv.pointwise, spectral.pointwise)
        return spectral, weights, {"prior": prior, "prior_diff": diff, "prior_se": se}
    if method == "pseudo_bma":
        return spectral, pseudo_bma_weights(pointwise, random_seed=rng), {}
    weights = np.zeros(len(pointwise))
    weights[int(np.argmax(pointwise.mean(axis=1)))] = 1.0
    return spectral, weights, {}
