"""Compiled elliptical slice sampling of a complex field observed through its phase.

The pure kernel behind :mod:`pmctx.vonmises.spectral`. The state is a complex field ``w``
(flattened, any length ``n``) with a zero-mean Gaussian prior; the observations are doubled
angles ``z_i`` at the pixels ``obs`` with the von Mises likelihood::

    log L(w) = kappa_obs sum_i cos(z_i - arg w_i)
             = kappa_obs sum_i (Re w_i cos z_i + Im w_i sin z_i) / |w_i|.

One elliptical slice update (Murray, Adams & MacKay 2010) takes a fresh prior draw ``v``,
a level ``log L(w) + log u`` (``u ~ U(0, 1)``) and an angle ``t ~ U(0, 2 pi)``, and shrinks
the bracket ``[t - 2 pi, t]`` towards ``0`` until ``w cos t + v sin t`` lies above the
level; the move leaves ``prior x likelihood`` invariant for any likelihood. Only the
observed pixels enter the level test, so a shrink step costs ``O(len(obs))``; the accepted
move updates the whole field once.

Random numbers come from NumPy's generator inside the compiled function, seeded per call
from the caller's ``numpy.random.Generator`` (so runs repeat given ``random_seed``).
"""

from __future__ import annotations

import math

import numba
import numpy as np

__all__ = ["ess_updates", "phase_log_likelihood"]

_TWO_PI = 2.0 * math.pi


@numba.njit(cache=True)
def _cos_sum(w_obs, cos_z, sin_z):
    total = 0.0
    for i in range(w_obs.shape[0]):
        x = w_obs[i].real
        y = w_obs[i].imag
        r = math.sqrt(x * x + y * y)
        if r > 0.0:  # arg 0 is undefined (a null set under the prior): cos taken as 0
            total += (x * cos_z[i] + y * sin_z[i]) / r
    return total


@numba.njit(cache=True)
def _ess_kernel(w, proposals, obs, cos_z, sin_z, kappa, seed):
    np.random.seed(seed)  # noqa: NPY002 (numba's own generator)
    n_obs = obs.shape[0]
    w_obs = np.empty(n_obs, dtype=np.complex128)
    trial = np.empty(n_obs, dtype=np.complex128)
    for i in range(n_obs):
        w_obs[i] = w[obs[i]]
    current = kappa * _cos_sum(w_obs, cos_z, sin_z)
    shrinks = 0
    for b in range(proposals.shape[0]):
        v = proposals[b]
        level = current + math.log(np.random.random())  # noqa: NPY002
        t = np.random.random() * _TWO_PI  # noqa: NPY002
        low, high = t - _TWO_PI, t
        while True:
            c, s = math.cos(t), math.sin(t)
            for i in range(n_obs):
                trial[i] = w_obs[i] * c + v[obs[i]] * s
            value = kappa * _cos_sum(trial, cos_z, sin_z)
            if value > level:
                break
            shrinks += 1
            if t < 0.0:
                low = t
            else:
                high = t
            t = low + (high - low) * np.random.random()  # noqa: NPY002
        for j in range(w.shape[0]):
            w[j] = w[j] * c + v[j] * s
        for i in range(n_obs):
            w_obs[i] = trial[i]
        current = value
    return current, shrinks


def phase_log_likelihood(w, obs, z, kappa_obs: float) -> float:
    """``kappa_obs sum_i cos(z_i - arg w_i)`` over the observed pixels (flat indices).

    Parameters
    ----------
    w : numpy.ndarray of complex (n,)
        The field, flattened.
    obs : numpy.ndarray of int (m,)
        Flat indices of the observed pixels.
    z : numpy.ndarray (m,)
        Observed doubled angles there.
    kappa_obs : float
        Observation concentration.

    Returns
    -------
    float
        The log likelihood without its normaliser ``-m log(2 pi I0(kappa_obs))``.

    Examples
    --------
    >>> import numpy as np
    >>> phase_log_likelihood(np.array([1j, 2.0]), np.array([0, 1]), np.zeros(2), 3.0)
    3.0
    """
    w_obs = np.ascontiguousarray(np.asarray(w, dtype=np.complex128)[obs])
    z = np.asarray(z, dtype=np.float64)
    return float(kappa_obs * _cos_sum(w_obs, np.cos(z), np.sin(z)))


def ess_updates(w, proposals, obs, z, kappa_obs: float, rng) -> tuple[float, int]:
    """Elliptical slice updates of ``w`` in place, one per row of ``proposals``.

    Parameters
    ----------
    w : numpy.ndarray of complex128 (n,)
        The current field (flattened, C-contiguous); updated in place.
    proposals : numpy.ndarray of complex128 (k, n)
        Independent draws from ``w``'s Gaussian prior, one per update.
    obs : numpy.ndarray of int64 (m,)
        Flat indices of the observed pixels.
    z : numpy.ndarray (m,)
        Observed doubled angles there.
    kappa_obs : float
        Observation concentration.
    rng : numpy.random.Generator
        Source of the kernel's seed.

    Returns
    -------
    log_likelihood : float
        ``kappa_obs sum_i cos(z_i - arg w_i)`` at the final state.
    shrinks : int
        Rejected angles over the ``k`` updates (their cost in likelihood evaluations).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> w = np.ones(3, dtype=np.complex128)
    >>> v = rng.normal(size=(4, 3)) + 1j * rng.normal(size=(4, 3))
    >>> ll, _ = ess_updates(w, v, np.array([0, 2]), np.zeros(2), 2.0, rng)
    >>> bool(np.isclose(ll, phase_log_likelihood(w, np.array([0, 2]), np.zeros(2), 2.0)))
    True
    """
    z = np.asarray(z, dtype=np.float64)
    seed = int(rng.integers(0, 2**31 - 1))
    current, shrinks = _ess_kernel(
        w,
        np.ascontiguousarray(proposals, dtype=np.complex128),
        np.ascontiguousarray(obs, dtype=np.int64),
        np.cos(z),
        np.sin(z),
        float(kappa_obs),
        seed,
    )
    return float(current), int(shrinks)
