"""Hamiltonian Monte Carlo of a band-pass complex field observed through its phase.

The kernel behind :func:`pmctx.vonmises.spectral.spectral_posterior`'s default sampler.
The field on the padded torus is ``w = F' (sqrt(S) u)`` (``F`` the unitary 2-D DFT, ``S``
the spectral density), so the whitened Fourier coefficients ``u`` have the prior density
``exp(-|u|^2)`` (real and imaginary parts ``N(0, 1/2)``). With observed doubled angles
``z_i`` at flat indices ``obs``, the potential is::

    U(u) = |u|^2 - kappa_obs sum_i cos(z_i - arg w_i),

whose gradient needs one FFT pair: ``grad U = 2 u - sqrt(S) F(g)`` with ``g`` the gradient
of the von Mises term in ``w`` at the observed pixels. A move is ``n_leap`` leapfrog steps
of size ``step`` with a mass diagonal in frequency, ``M_k = 2 + c S_k`` (``c`` the von
Mises term's curvature averaged over the torus, so that both the prior-dominated and the
data-dominated frequencies oscillate at about the same rate), accepted by the Metropolis
test on the Hamiltonian: exact for any step size. The step size is limited by the von Mises
term's curvature across ``w_i``, ``kappa_obs / |w_i|^2``, large wherever a pinwheel centre
sits near an observed pixel (a softened surrogate force, tried, did not help: moving a
pinwheel across a pixel really changes that pixel's log likelihood by up to
``2 kappa_obs``, so the surrogate's energy error made acceptance collapse).

(Elliptical slice sampling, exact too, needed about ten shrinks per update on a 64 x 64 map
at ``kappa_obs = 4`` and moved the angles about 1.5 degrees per ten updates: the likelihood
constrains hundreds of ring frequencies far more tightly than the prior does, which an
isotropic proposal cannot follow.)
"""

from __future__ import annotations

import numpy as np
import scipy.fft

__all__ = ["HMCState", "field_of", "hmc_move", "potential_and_gradient", "whiten"]


def _fft(x):
    return scipy.fft.fft2(x, axes=(-2, -1), norm="ortho")


def _ifft(x):
    return scipy.fft.ifft2(x, axes=(-2, -1), norm="ortho")


def field_of(u, root) -> np.ndarray:
    """The field ``w = F' (sqrt(S) u)`` of whitened coefficients ``u``.

    Parameters
    ----------
    u : numpy.ndarray of complex (P, Q)
        Whitened Fourier coefficients.
    root : numpy.ndarray (P, Q)
        ``sqrt(S)``.

    Returns
    -------
    numpy.ndarray of complex (P, Q)
        The field.
    """
    return _ifft(root * u)


def whiten(w, root) -> np.ndarray:
    """Whitened coefficients ``u`` of a field ``w`` (the inverse of :func:`field_of`).

    Parameters
    ----------
    w : numpy.ndarray of complex (P, Q)
        The field.
    root : numpy.ndarray (P, Q)
        ``sqrt(S)``, > 0 everywhere (a spectrum with a positive floor).

    Returns
    -------
    numpy.ndarray of complex (P, Q)
        ``F(w) / sqrt(S)``.

    Examples
    --------
    >>> import numpy as np
    >>> u = np.arange(4.0).reshape(2, 2) + 0j
    >>> bool(np.allclose(whiten(field_of(u, np.full((2, 2), 2.0)), np.full((2, 2), 2.0)), u))
    True
    """
    return _fft(w) / root


class HMCState:
    """Current coefficients with their potential and gradient (avoids recomputation).

    Parameters
    ----------
    u : numpy.ndarray of complex (P, Q)
        Whitened Fourier coefficients.
    potential : float
        ``U(u)``.
    gradient : numpy.ndarray of complex (P, Q)
        ``grad U(u)`` (real part: derivative in ``Re u``; imaginary: in ``Im u``).
    field : numpy.ndarray of complex (P, Q)
        ``w(u)``.
    """

    __slots__ = ("field", "gradient", "potential", "u")

    def __init__(self, u, potential, gradient, field):
        self.u, self.potential, self.gradient, self.field = u, potential, gradient, field


def potential_and_gradient(u, root, obs, cos_z, sin_z, kappa_obs) -> HMCState:
    """``U(u)`` and its gradient (see the module docstring).

    Parameters
    ----------
    u : numpy.ndarray of complex (P, Q)
        Whitened Fourier coefficients.
    root : numpy.ndarray (P, Q)
        ``sqrt(S)``.
    obs : numpy.ndarray of int (m,)
        Flat indices of the observed pixels.
    cos_z, sin_z : numpy.ndarray (m,)
        Cosine and sine of the observed doubled angles.
    kappa_obs : float
        Observation concentration.

    Returns
    -------
    HMCState
    """
    field = _ifft(root * u)
    flat = field.reshape(-1)
    w = flat[obs]
    radius2 = w.real**2 + w.imag**2
    radius = np.sqrt(radius2)
    along = w.real * cos_z + w.imag * sin_z  # Re(exp(-i z) w)
    loglik = kappa_obs * np.sum(along / radius)
    pull = np.zeros(flat.shape, dtype=np.complex128)  # d/dRe w + i d/dIm w of the term
    pull[obs] = kappa_obs * ((cos_z + 1j * sin_z) / radius - along * w / (radius2 * radius))
    gradient = 2.0 * u - root * _fft(pull.reshape(u.shape))
    potential = float(np.sum(u.real**2 + u.imag**2) - loglik)
    return HMCState(u, potential, gradient, field)


def hmc_move(state: HMCState, root, obs, cos_z, sin_z, kappa_obs, mass, step, n_leap, rng):
    """One HMC move (``n_leap`` leapfrog steps of size ``step``, Metropolis-accepted).

    Parameters
    ----------
    state : HMCState
        Current state, computed at ``kappa_obs``.
    root, obs, cos_z, sin_z, kappa_obs
        As in :func:`potential_and_gradient`.
    mass : numpy.ndarray (P, Q)
        Diagonal mass in frequency (the same for real and imaginary parts), > 0.
    step : float
        Leapfrog step size.
    n_leap : int
        Leapfrog steps.
    rng : numpy.random.Generator
        Random generator.

    Returns
    -------
    state : HMCState
        The new (or the old) state.
    accept_prob : float
        ``min(1, exp(-Delta H))`` of the proposal (0 when it was not finite).
    """
    shape = state.u.shape
    momentum = np.sqrt(mass) * (rng.standard_normal(shape) + 1j * rng.standard_normal(shape))
    h0 = state.potential + 0.5 * np.sum(np.abs(momentum) ** 2 / mass)
    args = (root, obs, cos_z, sin_z, kappa_obs)
    p = momentum - 0.5 * step * state.gradient
    new = state
    for leap in range(n_leap):
        new = potential_and_gradient(new.u + step * p / mass, *args)
        p = p - (step if leap < n_leap - 1 else 0.5 * step) * new.gradient
    h1 = new.potential + 0.5 * np.sum(np.abs(p) ** 2 / mass)
    log_ratio = h0 - h1
    if not np.isfinite(log_ratio):
        return state, 0.0
    accept_prob = float(min(1.0, np.exp(log_ratio)))
    if rng.random() < accept_prob:
        return new, accept_prob
    return state, accept_prob
