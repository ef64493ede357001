"""Angular time series of the von Mises chain smoother (:mod:`pmctx.models.vonmises_chain`).

:func:`smoothing_marginals` gives the exact ``p(x_t | y)`` for fixed concentrations by
forward-backward (:func:`pmctx.vonmises.chain.chain_marginals`) and
:func:`posterior_marginals` averages them over posterior draws of learned concentrations;
:func:`simulate` draws a series exactly from the chain prior
(:func:`pmctx.vonmises.chain.sample_chain`) with noisy observations, :func:`simulate_data`
packs one for the registry, and :func:`sbc_simulate` / :func:`sbc_quantities` are the
truths and posterior draws that simulation-based calibration ranks.

Examples
--------
>>> x, y = simulate(40, kappa=4.0, kappa_obs=3.0, rank=6, missing=0.3, random_seed=0)
>>> angles, density = smoothing_marginals(y, kappa=4.0, kappa_obs=3.0, rank=6)
>>> density.shape
(40, 128)
"""

from __future__ import annotations

import numpy as np

from pmctx.validation import as_rng, check_int, check_positive
from pmctx.vonmises.chain import chain_marginals, sample_chain
from pmctx.vonmises.inputs import check_series
from pmctx.vonmises.maps import circular_moments
from pmctx.vonmises.potentials import natural_field, wrap_angle

__all__ = [
    "posterior_marginals",
    "sbc_quantities",
    "sbc_simulate",
    "simulate",
    "simulate_data",
    "smoothing_marginals",
]


def smoothing_marginals(
    y, *, kappa: float, kappa_obs: float, rank: int, mask=None, signal=None, n_angles: int = 128
):
    """Exact ``p(x_t | y)`` for fixed concentrations: ``(angles, density (T, n_angles))``.

    Parameters
    ----------
    y : array_like, shape (T,)
        Observed angles in radians; NaN marks a missing sample.
    kappa : float
        Smoothing concentration of the chain potential (> 0).
    kappa_obs : float
        Observation concentration (> 0).
    rank : int
        Rank ``R`` of the potential (>= 1).
    mask : array_like of 0/1, shape (T,), optional
        1 where observed (default: where ``y`` is not NaN).
    signal : array_like, shape (T,), optional
        Relative signal strength per sample (> 0; default 1).
    n_angles : int, default 128
        Number of grid angles on which the densities are evaluated.

    Returns
    -------
    angles : numpy.ndarray, shape (n_angles,)
        Grid of angles in ``[-pi, pi)``.
    density : numpy.ndarray, shape (T, n_angles)
        ``p(x_t | y)`` on the grid, per time step.

    Examples
    --------
    >>> y = np.array([0.5, np.nan, 0.7, 0.6])
    >>> angles, density = smoothing_marginals(y, kappa=4.0, kappa_obs=3.0, rank=3, n_angles=64)
    >>> density.shape, bool(np.allclose(density.sum(axis=1) * (angles[1] - angles[0]), 1.0))
    ((4, 64), True)
    """
    z_filled, mask, signal = check_series(y, mask, signal)
    kappa = check_positive(kappa, "kappa")
    field = natural_field(z_filled, mask, check_positive(kappa_obs, "kappa_obs"), signal=signal)
    angles, density, _ = chain_marginals(
        field, kappa, check_int(rank, "rank", minimum=1), n_angles=n_angles
    )
    return angles, density


def posterior_marginals(idata, y, *, rank: int, mask=None, signal=None, n_angles=128, n_draws=50):
    """Smoothing densities averaged over posterior draws of the learned concentrations.

    Rao-Blackwellised: each of ``n_draws`` evenly spaced draws of ``(kappa, kappa_obs)``
    gives exact marginals, which are averaged. Returns ``(angles, density, mean, sd)`` with
    the circular mean and circular sd of ``x_t`` from the posterior draws.

    Parameters
    ----------
    idata : xarray.DataTree
        A fit from :func:`pmctx.models.vonmises_chain.smooth` with learned ``kappa`` and
        ``kappa_obs`` (``"prior"``).
    y : array_like, shape (T,)
        The observed angles the model was fitted to (NaN where missing).
    rank : int
        Rank ``R`` of the fitted model.
    mask, signal : array_like, optional
        As in :func:`pmctx.models.vonmises_chain.build_model`.
    n_angles : int, default 128
        Number of grid angles.
    n_draws : int, default 50
        Number of evenly spaced posterior draws averaged over.

    Returns
    -------
    angles : numpy.ndarray, shape (n_angles,)
        Grid of angles in ``[-pi, pi)``.
    density : numpy.ndarray, shape (T, n_angles)
        Rao-Blackwellised posterior density of ``x_t`` on the grid.
    mean : numpy.ndarray, shape (T,)
        Circular posterior mean of ``x_t``.
    sd : numpy.ndarray, shape (T,)
        Circular posterior standard deviation of ``x_t``.

    Examples
    --------
    >>> import arviz as az
    >>> x, y = simulate(20, kappa=4.0, kappa_obs=3.0, rank=3, random_seed=0)
    >>> idata = az.from_dict({"posterior": {"x": np.tile(x, (1, 4, 1)),
    ...                                 "kappa": np.full((1, 4), 4.0),
    ...                                 "kappa_obs": np.full((1, 4), 3.0)}})
    >>> angles, density, mean, sd = posterior_marginals(idata, y, rank=3, n_angles=64)
    >>> density.shape, mean.shape
    ((20, 64), (20,))
    """
    post = idata.posterior
    kappas = post["kappa"].values.ravel() if "kappa" in post else None
    kappa_obs = post["kappa_obs"].values.ravel() if "kappa_obs" in post else None
    if kappas is None or kappa_obs is None:
        raise ValueError("posterior_marginals needs draws of kappa and kappa_obs (use 'prior').")
    pick = np.linspace(0, kappas.size - 1, min(n_draws, kappas.size)).astype(int)
    total = 0.0
    for i in pick:
        angles, density = smoothing_marginals(
            y,
            kappa=kappas[i],
            kappa_obs=kappa_obs[i],
            rank=rank,
            mask=mask,
            signal=signal,
            n_angles=n_angles,
        )
        total = total + density
    x = post["x"].values.reshape(-1, post["x"].shape[-1])
    resultant = np.mean(np.exp(1j * x), axis=0)
    mean = np.angle(resultant)
    _, sd = circular_moments(x / 2.0, axis=0)
    return angles, total / pick.size, mean, 2.0 * sd


def simulate(
    length: int, *, kappa: float, kappa_obs: float, rank: int, missing=0.0, random_seed=None
):
    """Exact draw from the chain prior and noisy observations: ``(x, y)``, NaN where missing.

    Parameters
    ----------
    length : int
        Number of time steps ``T`` (>= 2).
    kappa, kappa_obs, rank
        Smoothing and observation concentrations (> 0) and the potential's rank (>= 1), as
        in :func:`smoothing_marginals`.
    missing : float, default 0.0
        Probability that an observation is missing (NaN).
    random_seed : int or numpy.random.Generator, optional
        Random seed or generator.

    Returns
    -------
    x : numpy.ndarray, shape (T,)
        True angles in ``[-pi, pi)``.
    y : numpy.ndarray, shape (T,)
        Noisy observations in ``[-pi, pi)``, NaN where missing.

    Examples
    --------
    >>> x, y = simulate(50, kappa=4.0, kappa_obs=3.0, rank=5, missing=0.5, random_seed=0)
    >>> x.shape, 0 < int(np.isnan(y).sum()) < 50
    ((50,), True)
    """
    rng = as_rng(random_seed)
    length = check_int(length, "length", minimum=2)
    x, _ = sample_chain(np.zeros((length, 2)), check_positive(kappa, "kappa"), rank, rng)
    y = wrap_angle(rng.vonmises(x, check_positive(kappa_obs, "kappa_obs")))
    y[rng.random(length) < missing] = np.nan
    return x, y


def simulate_data(
    random_seed=None, *, length: int = 100, kappa=4.0, kappa_obs=3.0, rank=5, missing=0.2
):
    """A prior draw and its data for the registry (SBC, posterior predictive checks).

    Returns ``(data, truth)``: ``data`` holds ``y`` (NaN where missing) and the options
    ``kappa``, ``kappa_obs``, ``rank``; ``truth`` the angles ``x`` and their ``smoothness``
    (mean cosine of successive differences).

    Parameters
    ----------
    random_seed : int or numpy.random.Generator, optional
        Random seed or generator.
    length : int, default 100
        Number of time steps.
    kappa, kappa_obs : float, default 4.0 and 3.0
        Smoothing and observation concentrations.
    rank : int, default 5
        Rank of the potential.
    missing : float, default 0.2
        Probability that an observation is missing.

    Returns
    -------
    data : dict
        ``y`` and the options ``kappa``, ``kappa_obs``, ``rank``.
    truth : dict
        ``x`` and ``smoothness``.

    Examples
    --------
    >>> data, truth = simulate_data(np.random.default_rng(0), length=12)
    >>> data["y"].shape, sorted(truth)
    ((12,), ['smoothness', 'x'])
    """
    x, y = simulate(
        length,
        kappa=kappa,
        kappa_obs=kappa_obs,
        rank=rank,
        missing=missing,
        random_seed=random_seed,
    )
    data = {"y": y, "kappa": kappa, "kappa_obs": kappa_obs, "rank": rank}
    return data, {"x": x, "smoothness": float(np.mean(np.cos(np.diff(x))))}


def _middle(x) -> np.ndarray:
    return x[..., x.shape[-1] // 2]


def sbc_simulate(random_seed=None, **options):
    """:func:`simulate_data` with scalar truths for SBC: the middle angle's cosine and sine
    (circular, so not ranked as an angle) and the smoothness.

    Parameters
    ----------
    random_seed : int or numpy.random.Generator, optional
        Random seed or generator.
    **options
        Options of :func:`simulate_data`.

    Returns
    -------
    data : dict
        As :func:`simulate_data` returns it.
    truth : dict
        ``cos_x``, ``sin_x`` and ``smoothness``.

    Examples
    --------
    >>> data, truth = sbc_simulate(0, length=12)
    >>> sorted(truth)
    ['cos_x', 'sin_x', 'smoothness']
    """
    data, truth = simulate_data(random_seed, **options)
    middle = _middle(truth["x"])
    return data, {"cos_x": float(np.cos(middle)), "sin_x": float(np.sin(middle)),
                  "smoothness": truth["smoothness"]}  # fmt: skip


def sbc_quantities(idata) -> dict:
    """Posterior draws (flattened over chains) of the truths :func:`sbc_simulate` ranks.

    Parameters
    ----------
    idata : xarray.DataTree
        A fit with posterior ``x``.

    Returns
    -------
    dict
        ``cos_x``, ``sin_x`` and ``smoothness`` draws.

    Examples
    --------
    >>> import arviz as az
    >>> idata = az.from_dict({"posterior": {"x": np.zeros((2, 3, 5))}})
    >>> draws = sbc_quantities(idata)
    >>> draws["cos_x"].shape, float(draws["smoothness"].mean())
    ((6,), 1.0)
    """
    x = idata.posterior["x"].values
    x = x.reshape(-1, x.shape[-1])
    middle = _middle(x)
    smoothness = np.cos(np.diff(x, axis=-1)).mean(-1)
    return {"cos_x": np.cos(middle), "sin_x": np.sin(middle), "smoothness": smoothness}
