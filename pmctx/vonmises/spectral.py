"""A band-pass Gaussian-field prior for orientation maps, sampled exactly.

Real orientation maps have a preferred column spacing ``L``: their power sits on a ring of
radius ``1 / L`` in spatial frequency. This prior says so directly. A latent complex field
``w`` lives on a torus padded beyond the map (so the prior does not assume the map itself
is periodic), with a stationary circular complex Gaussian prior of spectral density::

    S(k) = exp(-(|k| - 1/L)^2 / (2 (b / L)^2)) / mean + floor,

``b`` the relative ring width, the ring normalised to mean one (so ``E|w_x|^2 = 1 + floor``)
and ``floor`` a small white part (a nugget: pixel-scale roughness). The doubled orientation
is ``o = arg w`` (``theta = o / 2``); observed doubled angles follow the same model as the
von Mises map, ``z_i ~ VonMises(arg w_i, kappa_obs)``. Only ``arg w`` enters the
likelihood, so the field's amplitude needs no hyperparameter.

Prior draws are FFT filters of white noise, ``w = sqrt(n) ifft2(sqrt(S) eta)`` with ``eta``
white circular complex noise (``E|eta|^2 = 1``), whose covariance is
``E[w_x conj(w_y)] = ifft2(S)[x - y]`` (:func:`spectral_covariance`). The posterior is
sampled exactly by HMC in whitened Fourier coordinates (:mod:`pmctx.vonmises.spectral_hmc`),
alternated with the exact slice update of ``kappa_obs``
(:func:`pmctx.vonmises.hyper.sample_kappa_obs`; its sufficient statistic is
``sum_i cos(z_i - arg w_i)``). HMC with one move per draw gives the most effective draws
per CPU second (``benchmarks/bench_vonmises_spectral_mixing.py``,
``benchmarks/results/vonmises_spectral_mixing.json``).

Examples
--------
>>> import numpy as np
>>> from pmctx.vonmises.spectral import ring_spectrum, spectral_posterior
>>> rng = np.random.default_rng(0)
>>> z = rng.vonmises(np.zeros((12, 12)), 4.0)
>>> spectrum = ring_spectrum((36, 36), spacing=8.0)
>>> o, k = spectral_posterior(z, z == z, spectrum, draws=5, tune=5, random_seed=0)
>>> o.shape, k.shape
((5, 12, 12), (5,))
"""

from __future__ import annotations

import numpy as np
import scipy.fft
from scipy.fft import next_fast_len

from pmctx.validation import as_rng, check_int, check_positive
from pmctx.vonmises.hyper import KAPPA_OBS_PRIOR, kappa_obs_statistics, sample_kappa_obs
from pmctx.vonmises.spectral_hmc import hmc_move, potential_and_gradient, whiten

__all__ = [
    "FLOOR",
    "MIN_PAD",
    "RING_WIDTH",
    "estimate_spacing",
    "padded_shape",
    "prior_draws",
    "ring_spectrum",
    "spectral_covariance",
    "spectral_posterior",
    "spectral_start",
    "torus_for",
]

#: Default relative ring width ``b`` (ring standard deviation ``b / L`` in frequency).
RING_WIDTH = 0.25
#: Default white floor of the spectrum, relative to the ring's mean (a 0.1% nugget).
FLOOR = 1e-3
#: HMC: acceptance rate the step size is tuned to, trajectory length (in units where every
#: frequency oscillates with period about 2 pi), the most leapfrog steps per move, and the
#: mean curvature ``E[1 / |w|^2]`` of the observation term assumed by the mass.
TARGET_ACCEPT = 0.6
TRAJECTORY = 0.5
MAX_LEAPFROG = 64
CURVATURE = 1.0
#: Padding beyond the map: at least this many pixels, and at least the largest spacing.
MIN_PAD = 24


def padded_shape(shape, pad: int) -> tuple[int, int]:
    """The torus a map of ``shape`` lives on: each side ``+ pad``, rounded up to a fast FFT size.

    Parameters
    ----------
    shape : tuple of int
        The map's ``(M, N)``.
    pad : int
        Pixels added to each side (at least the largest column spacing considered).

    Returns
    -------
    tuple of int
        ``(P, Q)`` with ``P >= M + pad``, ``Q >= N + pad``.

    Examples
    --------
    >>> padded_shape((64, 64), 24)
    (88, 88)
    """
    pad = check_int(pad, "pad", minimum=0)
    return tuple(int(next_fast_len(int(s) + pad)) for s in shape)


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


def ring_spectrum(shape, spacing: float, width: float = RING_WIDTH, floor: float = FLOOR):
    """Spectral density ``S(k)`` of the band-pass prior on a torus of ``shape`` (FFT order).

    Parameters
    ----------
    shape : tuple of int
        The torus ``(P, Q)``.
    spacing : float
        Column spacing ``L`` in pixels (ring radius ``1 / L``), > 0.
    width : float, default RING_WIDTH
        Relative ring width ``b`` (> 0).
    floor : float, default FLOOR
        White floor added to the ring normalised to mean one (>= 0).

    Returns
    -------
    numpy.ndarray (P, Q)
        ``S`` with ``mean(S) = 1 + floor``.

    Examples
    --------
    >>> float(ring_spectrum((16, 16), 4.0, floor=0.0).mean())
    1.0
    """
    spacing = check_positive(spacing, "spacing")
    width = check_positive(width, "width")
    floor = check_positive(floor, "floor", allow_zero=True)
    if len(shape) != 2 or min(shape) < 1:
        raise ValueError(f"shape must be two positive sizes (P, Q), got {tuple(shape)}.")
    if spacing < 2.0:
        raise ValueError(
            f"spacing must be at least 2 pixels (the Nyquist limit), got {spacing}. "
            "Pass the column spacing in pixels."
        )
    fy, fx = np.fft.fftfreq(shape[0]), np.fft.fftfreq(shape[1])
    radius = np.hypot(fy[:, None], fx[None, :])
    ring = np.exp(-((radius - 1.0 / spacing) ** 2) / (2.0 * (width / spacing) ** 2))
    return ring / ring.mean() + floor


def spectral_covariance(spectrum) -> np.ndarray:
    """``E[w_x conj(w_y)]`` as a function of the offset ``x - y`` (torus, FFT order).

    Parameters
    ----------
    spectrum : numpy.ndarray (P, Q)
        Spectral density from :func:`ring_spectrum`.

    Returns
    -------
    numpy.ndarray of complex (P, Q)
        ``ifft2(S)``: the covariance at every offset (the pseudo-covariance is zero).
    """
    return np.fft.ifft2(np.asarray(spectrum, dtype=np.float64))


def prior_draws(spectrum, n: int, rng) -> np.ndarray:
    """``n`` independent prior fields ``sqrt(P Q) ifft2(sqrt(S) eta)``, shape ``(n, P, Q)``.

    Parameters
    ----------
    spectrum : numpy.ndarray (P, Q)
        Spectral density.
    n : int
        Number of draws.
    rng : numpy.random.Generator
        Random generator.

    Returns
    -------
    numpy.ndarray of complex128 (n, P, Q)
        Circular complex Gaussian fields with covariance :func:`spectral_covariance`.
    """
    spectrum = np.asarray(spectrum, dtype=np.float64)
    shape = (n, *spectrum.shape)
    eta = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    scale = np.sqrt(spectrum * (spectrum.size / 2.0))  # E|eta|^2 = 2 above
    return np.fft.ifft2(eta * scale, axes=(-2, -1))


def _fft(x):
    return scipy.fft.fft2(x, axes=(-2, -1), norm="ortho")


def _ifft(x):
    return scipy.fft.ifft2(x, axes=(-2, -1), norm="ortho")


def spectral_start(z, observed, spectrum) -> np.ndarray:
    """A starting field: the observed unit vectors filtered by ``S``, at the prior's scale.

    Parameters
    ----------
    z : numpy.ndarray (M, N)
        Observed doubled angles (any value where not observed).
    observed : numpy.ndarray of bool (M, N)
        Where ``z`` is observed.
    spectrum : numpy.ndarray (P, Q)
        Spectral density of the padded torus (``P >= M``, ``Q >= N``).

    Returns
    -------
    numpy.ndarray of complex128 (P, Q)
        Field whose mean ``|w|^2`` is the prior's ``mean(S)``.
    """
    unit = np.zeros(spectrum.shape, dtype=np.complex128)
    m, n = z.shape
    unit[:m, :n] = np.where(observed, np.exp(1j * np.where(observed, z, 0.0)), 0.0)
    w = np.fft.ifft2(np.fft.fft2(unit) * spectrum)
    power = np.mean(np.abs(w) ** 2)
    if power <= 0:
        return prior_draws(spectrum, 1, np.random.default_rng(0))[0]
    return w * np.sqrt(np.mean(spectrum) / power)


def estimate_spacing(z, observed, *, oversample: int = 4) -> float:
    """Column spacing at the peak of the radial power spectrum of the observed unit vectors.

    The zero-filled ``exp(i z)`` (missing pixels 0) is zero-padded ``oversample`` times for
    a finer frequency grid; its power, averaged in rings of width one original frequency
    bin, peaks near ``1 / L`` (observation noise and the random mask add a flat floor).

    Parameters
    ----------
    z : numpy.ndarray (M, N)
        Observed doubled angles (any value where not observed).
    observed : numpy.ndarray of bool (M, N)
        Where ``z`` is observed.
    oversample : int, default 4
        Zero-padding factor.

    Returns
    -------
    float
        The spacing ``1 / k_peak`` in pixels, between 2 and the map's shorter side.

    Examples
    --------
    >>> import numpy as np
    >>> y, x = np.indices((48, 48))
    >>> round(estimate_spacing(2 * np.pi * x / 12.0, np.ones((48, 48), bool)), 1)
    12.0
    """
    z = np.asarray(z, dtype=np.float64)
    observed = np.asarray(observed, dtype=bool)
    if not observed.any():
        raise ValueError("estimate_spacing needs at least one observed pixel; got none.")
    unit = np.where(observed, np.exp(1j * np.where(observed, z, 0.0)), 0.0)
    unit = unit - observed * unit[observed].mean()  # no DC leak from a mean orientation
    size = oversample * max(z.shape)
    power = np.abs(np.fft.fft2(unit, s=(size, size))) ** 2
    f = np.fft.fftfreq(size)
    radius = np.hypot(f[:, None], f[None, :])
    low, high = 1.0 / min(z.shape), 0.5
    step = 1.0 / (2 * max(z.shape))
    centres = np.arange(low, high, step / oversample)
    best, best_power = centres[0], -np.inf
    for c in centres:
        ring = np.abs(radius - c) < step
        value = power[ring].mean()
        if value > best_power:
            best, best_power = c, value
    return float(1.0 / best)


def spectral_posterior(
    z,
    observed,
    spectrum,
    *,
    draws: int = 200,
    tune: int = 100,
    moves_per_draw: int = 1,
    kappa_obs=None,
    kappa_obs_prior=KAPPA_OBS_PRIOR,
    keep=None,
    random_seed=None,
):
    """Posterior draws of the map under the band-pass prior (one chain).

    Each draw follows ``moves_per_draw`` exact moves of the field (HMC in whitened
    frequency coordinates, :mod:`pmctx.vonmises.spectral_hmc`) and one exact slice update of
    ``kappa_obs`` (unless it is fixed); the first ``tune`` draws are discarded, and during
    them HMC adapts its step size towards an acceptance rate of :data:`TARGET_ACCEPT`.
    The chain starts from :func:`spectral_start` (``kappa_obs`` from 2).

    Parameters
    ----------
    z : numpy.ndarray (M, N)
        Observed doubled angles (any value where not observed).
    observed : numpy.ndarray of bool (M, N)
        Where ``z`` is observed.
    spectrum : numpy.ndarray (P, Q)
        Spectral density of the padded torus (:func:`ring_spectrum`), ``P >= M``, ``Q >= N``.
    draws, tune : int
        Kept and discarded draws.
    moves_per_draw : int, default 1
        HMC moves of the field between stored draws.
    kappa_obs : float, optional
        Fixed observation concentration (default: learned).
    kappa_obs_prior : tuple of float, default KAPPA_OBS_PRIOR
        Gamma ``(shape, rate)`` prior of a learned ``kappa_obs``.
    keep : numpy.ndarray of bool (M, N), optional
        Store only these pixels (flattened, ``(draws, keep.sum())``); default the whole map.
    random_seed : int or numpy.random.Generator, optional
        Random seed or generator.

    Returns
    -------
    o_draws : numpy.ndarray (draws, M, N) or (draws, keep.sum())
        Doubled-angle draws ``arg w`` in ``(-pi, pi]``.
    kappa_obs_draws : numpy.ndarray (draws,)
        Draws (or the fixed value) of ``kappa_obs``.
    """
    z = np.asarray(z, dtype=np.float64)
    observed = np.asarray(observed, dtype=bool)
    spectrum = np.asarray(spectrum, dtype=np.float64)
    m, n = z.shape
    if spectrum.shape[0] < m or spectrum.shape[1] < n:
        raise ValueError(
            f"spectrum's torus {spectrum.shape} must be at least the map's shape {z.shape}; "
            "build it with ring_spectrum(padded_shape(shape, pad), spacing)."
        )
    draws = check_int(draws, "draws", minimum=1)
    tune = check_int(tune, "tune", minimum=0)
    moves = check_int(moves_per_draw, "moves_per_draw", minimum=1)
    rng = as_rng(random_seed)
    learn = kappa_obs is None
    k_obs = 2.0 if learn else check_positive(kappa_obs, "kappa_obs")
    rows, cols = np.nonzero(observed)
    obs = rows * spectrum.shape[1] + cols
    z_obs = z[observed]
    cos_z, sin_z = np.cos(z_obs), np.sin(z_obs)
    window = np.zeros(spectrum.shape, dtype=bool)
    window[:m, :n] = True if keep is None else np.asarray(keep, dtype=bool)
    w = np.ascontiguousarray(spectral_start(z, observed, spectrum))
    root = np.sqrt(spectrum)
    args = (root, obs, cos_z, sin_z)
    state = potential_and_gradient(whiten(w, root), *args, k_obs)
    step, accept_mean = 0.1, 0.0
    o_draws = np.empty((draws, m, n) if keep is None else (draws, int(window.sum())))
    k_draws = np.empty(draws)
    for it in range(tune + draws):
        mass = 2.0 + spectrum * (CURVATURE * k_obs * obs.size / spectrum.size)
        for _ in range(moves):
            jitter = step * rng.uniform(0.9, 1.1)
            n_leap = int(min(MAX_LEAPFROG, np.ceil(TRAJECTORY / step)))
            state, prob = hmc_move(state, root, obs, cos_z, sin_z, k_obs, mass, jitter, n_leap, rng)
            if it < tune:  # Robbins-Monro on log step, towards TARGET_ACCEPT
                step *= float(np.exp((prob - TARGET_ACCEPT) / np.sqrt(it + 2.0)))
            accept_mean += prob
        field = state.field
        if learn:
            stats = kappa_obs_statistics(np.angle(field.reshape(-1)[obs]), z_obs)
            k_obs = sample_kappa_obs(stats, k_obs, rng, prior=kappa_obs_prior)
        if learn:
            state = potential_and_gradient(whiten(field, root), *args, k_obs)
        if it >= tune:
            o_draws[it - tune] = np.angle(field[:m, :n] if keep is None else field[window])
            k_draws[it - tune] = k_obs
    return o_draws, k_draws
