"""Orientation-map reconstruction under a band-pass prior with a column spacing.

Real orientation maps have a preferred column spacing; the nearest-neighbour von Mises map
(:mod:`pmctx.models.vonmises_map`) has no notion of one. :func:`reconstruct_spectral`
instead models the doubled orientation as the phase of a complex Gaussian field whose power
sits on a ring at one over the spacing (:mod:`pmctx.vonmises.spectral`), observed with the
same von Mises noise (``kappa_obs`` learned by its exact slice update), sampled exactly
(HMC in whitened frequency coordinates). The spacing is given, or weighed by held-out
pixels (:func:`pmctx.vonmises.spectral_cv.cross_validate_spacing` on a grid around the
data's own estimate, stacking weights from :func:`pmctx.vonmises.average.stacking_weights`,
draws pooled by :func:`pmctx.vonmises.average.cv_average`).

Examples
--------
>>> import numpy as np
>>> from pmctx.models.vonmises_spectral import reconstruct_spectral
>>> rng = np.random.default_rng(0)
>>> y, x = np.indices((10, 10))
>>> theta = np.mod(rng.vonmises(2 * np.pi * x / 6.0, 4.0), 2 * np.pi) / 2
>>> idata = reconstruct_spectral(theta, spacing=6.0, draws=5, tune=5, random_seed=0)
>>> idata.posterior["theta"].shape, idata.log_likelihood["z"].shape
((1, 5, 10, 10), (1, 5, 100))
"""

from __future__ import annotations

import numpy as np

from pmctx.validation import as_rng, check_int, check_positive
from pmctx.vonmises.average import cv_average, stacking_weights
from pmctx.vonmises.hyper import KAPPA_OBS_PRIOR
from pmctx.vonmises.inputs import observed_doubled_angles
from pmctx.vonmises.outputs import pooled_map_tree
from pmctx.vonmises.spectral import (
    FLOOR,
    RING_WIDTH,
    ring_spectrum,
    spectral_posterior,
    spectral_start,
)
from pmctx.vonmises.spectral_cv import cross_validate_spacing, torus_for
from pmctx.vonmises.spectral_hmc import whiten

__all__ = ["build_spectral_model", "reconstruct_spectral", "sample_spectral_model"]


def build_spectral_model(
    theta_obs,
    *,
    spacing: float,
    mask=None,
    width: float = RING_WIDTH,
    floor: float = FLOOR,
    kappa_obs="prior",
):
    """The band-pass orientation model as a ``pm.Model`` at one column spacing.

    White noise ``nu`` (``(2, P, Q)``, each entry ``N(0, 1/2)``) on the padded torus is
    filtered by ``sqrt(S)`` (real FFTs) into the real and imaginary parts of ``w``; the
    map's doubled angles are ``o = arg w`` on the map's window, ``theta = o mod 2 pi / 2``,
    and the observed doubled angles ``z ~ VonMises(o, kappa_obs)``.

    Parameters
    ----------
    theta_obs : array_like, shape (M, N)
        Observed orientations in ``[0, pi]``; NaN marks a missing pixel.
    spacing : float
        Column spacing in pixels (>= 2).
    mask : array_like of 0/1, optional
        1 where observed (default: not NaN).
    width, floor : float
        Ring width and white floor of the spectrum.
    kappa_obs : float or "prior", default "prior"
        Fixed observation concentration, or ``"prior"`` for
        ``Gamma(KAPPA_OBS_PRIOR)`` (updated by
        :class:`~pmctx.steps.vonmises.KappaObsSlice`).

    Returns
    -------
    pm.Model
        With ``nu``, ``o``, ``theta``, ``kappa_obs``, ``z`` and the data ``z_filled``,
        ``obs_mask``, ``spectrum``.

    Examples
    --------
    >>> model = build_spectral_model(np.full((4, 4), 0.5), spacing=3.0)
    >>> sorted(v.name for v in model.free_RVs)
    ['kappa_obs', 'nu']
    """
    import pymc as pm
    import pytensor.tensor as pt
    from pytensor.tensor import fft as pfft

    spacings = _spacing_argument(spacing)
    if spacings is None or len(spacings) != 1:
        raise ValueError(f"spacing must be one number of pixels here, got {spacing!r}.")
    z, observed = observed_doubled_angles(theta_obs, mask)
    torus = torus_for(z.shape, spacings)
    spectrum = ring_spectrum(torus, spacings[0], width, floor)
    half = np.sqrt(spectrum[:, : torus[1] // 2 + 1])[None, :, :, None]
    m, n = z.shape
    coords = {"row": np.arange(m), "col": np.arange(n)}
    with pm.Model(coords=coords) as model:
        z_filled = pm.Data("z_filled", z, dims=("row", "col"))
        obs_mask = pm.Data("obs_mask", observed.astype(np.int64), dims=("row", "col"))
        pm.Data("spectrum", spectrum)
        nu = pm.Normal("nu", 0.0, np.sqrt(0.5), shape=(2, *torus))
        parts = pfft.irfft(pfft.rfft(nu) * half, is_odd=bool(torus[1] % 2))
        o = pm.Deterministic("o", pt.arctan2(parts[1], parts[0])[:m, :n], dims=("row", "col"))
        pm.Deterministic("theta", pt.mod(o, 2.0 * np.pi) / 2.0, dims=("row", "col"))
        if isinstance(kappa_obs, str) and kappa_obs == "prior":
            k_obs = pm.Gamma("kappa_obs", alpha=KAPPA_OBS_PRIOR[0], beta=KAPPA_OBS_PRIOR[1])
        else:
            k_obs = pm.Data("kappa_obs", check_positive(kappa_obs, "kappa_obs"))
        rows, cols = np.nonzero(observed)
        pm.VonMises("z", mu=o[rows, cols], kappa=k_obs, observed=z_filled[rows, cols])
    del obs_mask
    return model


def sample_spectral_model(model, *, draws=200, tune=100, chains=1, random_seed=None):
    """``pm.sample`` of a :func:`build_spectral_model` with pmctx's exact steps.

    :class:`~pmctx.steps.vonmises_spectral.SpectralFieldHMC` moves ``nu``;
    :class:`~pmctx.steps.vonmises.KappaObsSlice` updates a ``kappa_obs`` with a prior.

    Parameters
    ----------
    model : pm.Model
        From :func:`build_spectral_model`.
    draws, tune, chains : int
        As in :func:`pymc.sample` (one core).
    random_seed : int, optional
        Random seed.

    Returns
    -------
    xarray.DataTree
        ``pm.sample``'s result (``o``, ``theta``, ``kappa_obs``, ``nu``).

    Examples
    --------
    Compiling the model takes several seconds (run in
    ``tests/steps/test_vonmises_spectral_step.py``):

    >>> model = build_spectral_model(np.full((4, 4), 0.5), spacing=3.0)
    >>> idata = sample_spectral_model(model, draws=3, tune=2, random_seed=0)  # doctest: +SKIP
    >>> idata.posterior["theta"].shape  # doctest: +SKIP
    (1, 3, 4, 4)
    """
    import pymc as pm
    import scipy.fft

    from pmctx.steps.vonmises import KappaObsSlice
    from pmctx.steps.vonmises_spectral import SpectralFieldHMC

    data = {name: model[name].get_value() for name in ("z_filled", "obs_mask", "spectrum")}
    spectrum = data["spectrum"]
    # nu = 0 (the prior's initial point) has no phase: start from the smoothed data instead.
    field = spectral_start(data["z_filled"], data["obs_mask"].astype(bool), spectrum)
    noise = scipy.fft.ifft2(whiten(field, np.sqrt(spectrum)), norm="ortho")
    with model:
        steps = [SpectralFieldHMC()]
        if model["kappa_obs"] in model.free_RVs:
            steps.append(KappaObsSlice(angles="o"))
        return pm.sample(
            draws=draws,
            tune=tune,
            chains=chains,
            cores=1,
            step=steps,
            random_seed=random_seed,
            initvals={"nu": np.stack([noise.real, noise.imag])},
            progressbar=False,
            compute_convergence_checks=False,
        )


def _spacing_argument(spacing):
    if isinstance(spacing, str):
        if spacing != "cv":
            raise ValueError(
                f"spacing must be a number of pixels, a sequence of them, None or 'cv'; got "
                f"{spacing!r}. Pass 'cv' (or None) to choose it by held-out pixels."
            )
        return None
    if spacing is None:
        return None
    values = [check_positive(s, "spacing") for s in np.atleast_1d(spacing)]
    if not values:
        raise ValueError("spacing must hold at least one value; pass e.g. 12.0 or 'cv'.")
    if min(values) < 2.0:
        raise ValueError(
            f"spacing must be at least 2 pixels (the Nyquist limit), got {min(values)}. "
            "Pass the column spacing in pixels."
        )
    return values


def reconstruct_spectral(
    theta_obs,
    *,
    mask=None,
    spacing="cv",
    width=None,
    floor: float = FLOOR,
    kappa_obs=None,
    draws: int = 200,
    tune: int = 100,
    n_folds: int = 3,
    cv_draws: int = 40,
    cv_tune: int = 60,
    min_weight: float = 0.01,
    random_seed=None,
):
    """Reconstruct an orientation map under the band-pass (column-spacing) prior.

    Parameters
    ----------
    theta_obs : array_like, shape (M, N)
        Observed orientations in ``[0, pi]``; NaN marks a missing pixel.
    mask : array_like of 0/1, optional
        1 where observed (default: not NaN).
    spacing : float, sequence of float, None or "cv", default "cv"
        Column spacing in pixels (>= 2). One value fixes it; several are weighed by
        held-out pixels; ``"cv"`` or None weighs the two-stage search of
        :func:`~pmctx.vonmises.spectral_cv.cross_validate_spacing` (a grid from 2.5 times
        below the data's estimate to 1.6 times above ranked by linear prediction, then
        posterior fits around its best).
    width : float or sequence of float, optional
        Relative width(s) of the spectral ring (:func:`~pmctx.vonmises.spectral.ring_spectrum`),
        weighed by the same held-out pixels when several. Default: both of
        :data:`~pmctx.vonmises.spectral_cv.WIDTHS` with a cross-validated spacing,
        :data:`~pmctx.vonmises.spectral.RING_WIDTH` at one fixed spacing.
    floor : float, default FLOOR
        White floor of the spectrum.
    kappa_obs : float, optional
        Fixed observation concentration on doubled angles (default: learned).
    draws, tune : int
        Pooled draws, and discarded draws of each grid point's fit.
    n_folds, cv_draws, cv_tune : int
        Folds, and kept / discarded draws per fold fit, of the cross-validation.
    min_weight : float, default 0.01
        Grid points below this weight are not fitted (the rest renormalised).
    random_seed : int or numpy.random.Generator, optional
        Random seed or generator.

    Returns
    -------
    xarray.DataTree
        ``posterior``: ``o`` (doubled angles) and ``theta`` (``row``, ``col``; 1 chain),
        ``kappa_obs``, ``spacing`` and ``width`` (of each draw's fit); ``log_likelihood``:
        ``z``, the von Mises log density of every observed pixel per draw (``obs_pixel``);
        ``constant_data``: ``obs_mask``; with more than one grid point, ``cv``: the CV
        curve (``spacing``, ``width``, ...) with ``weight`` (``attrs``: ``estimate``, the
        data's estimated spacing, ``weighted_spacing`` and ``weighted_width``); after a
        search also its first stage along ``search`` (``search_spacing``, ``search_width``,
        ``search_cosine``, ``search_signal_share``) and ``attrs["search_best"]``, the
        spacing it ranked first.
    """
    import xarray as xr

    spacings = _spacing_argument(spacing)
    draws = check_int(draws, "draws", minimum=1)
    tune = check_int(tune, "tune", minimum=0)
    z, observed = observed_doubled_angles(theta_obs, mask)
    rng = as_rng(random_seed)
    cv = None
    widths = [RING_WIDTH] if width is None else np.atleast_1d(width).tolist()
    if spacings is None or len(spacings) > 1 or len(widths) > 1:
        cv = cross_validate_spacing(
            z,
            observed,
            spacings=spacings,
            width=width,
            floor=floor,
            kappa_obs=kappa_obs,
            n_folds=n_folds,
            draws=cv_draws,
            tune=cv_tune,
            random_seed=rng,
        )
        spacings, widths = cv.curve["spacing"].tolist(), cv.curve["width"].tolist()
        weights = stacking_weights(cv.pointwise)
    else:
        weights = np.ones(1)
    fit_weights = np.where(weights >= min(min_weight, weights.max()), weights, 0.0)
    fits = [
        spectral_posterior(
            z,
            observed,
            ring_spectrum(torus_for(z.shape, [s]), s, b, floor),
            draws=draws,
            tune=tune,
            kappa_obs=kappa_obs,
            random_seed=rng,
        )
        if w > 0
        else None
        for w, s, b in zip(fit_weights, spacings, widths)
    ]
    index, source = cv_average(
        [None if f is None else np.arange(len(f[0])) for f in fits],
        fit_weights,
        draws,
        random_seed=rng,
    )
    o = np.stack([fits[k][0][i] for k, i in zip(source, index)])
    k_obs = np.array([fits[k][1][i] for k, i in zip(source, index)])
    idata = pooled_map_tree(
        o,
        k_obs,
        z,
        observed,
        spacing=np.asarray(spacings, dtype=np.float64)[source],
        width=np.asarray(widths, dtype=np.float64)[source],
    )
    if cv is not None:
        curve = cv.curve.assign(weight=weights)
        attrs = {
            "weighted_spacing": float(np.dot(weights, curve["spacing"])),
            "weighted_width": float(np.dot(weights, curve["width"])),
        }
        if cv.estimate is not None:
            attrs["estimate"] = float(cv.estimate)
        data = {name: ("grid", curve[name].to_numpy()) for name in curve.columns}
        coords = {"grid": np.arange(len(curve))}
        if cv.search is not None:
            ranked = cv.search
            attrs["search_best"] = float(ranked["spacing"].iloc[int(np.argmax(ranked["cosine"]))])
            data.update({f"search_{n}": ("search", ranked[n].to_numpy()) for n in ranked.columns})
            coords["search"] = np.arange(len(ranked))
        idata["cv"] = xr.Dataset(data, coords=coords, attrs=attrs)
    return idata
