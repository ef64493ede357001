"""Observation families and links: pointwise log-likelihood and its first two derivatives in rho.

``loglik(y, rho)`` returns ``(ll, d1, w)`` with ``d1 = d ll / d rho`` and
``w = -d^2 ll / d rho^2`` (non-negative for every family here, which are log-concave in rho).

Examples
--------
>>> import numpy as np
>>> from pmctx.gum.families import loglik
>>> ll, d1, w = loglik("poisson", "log", np.array([2.0]), np.array([0.0]))
>>> float(d1[0]), float(w[0])
(1.0, 1.0)
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit, gammaln, log_ndtr

__all__ = ["DISPERSION", "FAMILIES", "loglik"]

#: family -> (default link, allowed links)
FAMILIES = {
    "bernoulli": ("logit", ("logit", "probit")),
    "poisson": ("log", ("log",)),
    "gaussian": ("identity", ("identity",)),
    "negative_binomial": ("log", ("log",)),
}

#: Families with a dispersion parameter (Gaussian noise sd, negative-binomial alpha).
DISPERSION = {"gaussian": "noise_sd", "negative_binomial": "alpha"}

_LOG_SQRT_2PI = 0.5 * np.log(2 * np.pi)


def loglik(
    family: str, link: str, y: np.ndarray, rho: np.ndarray, *, noise_sd: float = 1.0, weights=None
):
    """Pointwise log-likelihood, gradient and curvature in the predictor ``rho``.

    ``noise_sd`` is the family's dispersion parameter: the Gaussian noise sd, or the
    negative-binomial ``alpha`` (variance ``mu + mu^2 / alpha``). ``weights`` multiply every
    observation's log-likelihood (observation weights).

    Parameters
    ----------
    family : {"gaussian", "bernoulli", "poisson", "negative_binomial"}
        Response family.
    link : str
        Link function (``identity``, ``logit``, ``probit``, ``log``).
    y : numpy.ndarray (N,)
        Responses.
    rho : numpy.ndarray (N,)
        Predictor values.
    noise_sd : float, default 1.0
        Dispersion (Gaussian sd or negative-binomial alpha).
    weights : numpy.ndarray (N,), optional
        Observation weights.

    Returns
    -------
    tuple of numpy.ndarray
        Log-likelihood, its first derivative and its negative second derivative in ``rho``,
        each (N,).
    """
    out = _loglik(family, link, y, rho, noise_sd)
    if weights is None:
        return out
    return tuple(weights * part for part in out)


def _loglik(family, link, y, rho, noise_sd):
    if family == "poisson":
        rate = np.exp(rho)
        return y * rho - rate - gammaln(y + 1.0), y - rate, rate
    if family == "negative_binomial":
        alpha = noise_sd
        log_total = np.logaddexp(np.log(alpha), rho)  # log(alpha + mu)
        ll = (
            gammaln(y + alpha)
            - gammaln(alpha)
            - gammaln(y + 1.0)
            + alpha * (np.log(alpha) - log_total)
            + y * (rho - log_total)
        )
        frac = np.exp(rho - log_total)  # mu / (alpha + mu)
        return ll, y - (y + alpha) * frac, (y + alpha) * frac * (1.0 - frac)
    if family == "gaussian":
        resid = y - rho
        ll = -0.5 * (resid / noise_sd) ** 2 - np.log(noise_sd) - _LOG_SQRT_2PI
        return ll, resid / noise_sd**2, np.full_like(rho, 1.0 / noise_sd**2)
    if family == "bernoulli" and link == "logit":
        p = expit(rho)
        return y * rho - np.logaddexp(0.0, rho), y - p, p * (1.0 - p)
    if family == "bernoulli" and link == "probit":
        # sign trick: log Phi(s rho) with s = +1 for y = 1 and -1 for y = 0
        s = 2.0 * y - 1.0
        t = s * rho
        log_cdf = log_ndtr(t)
        mills = np.exp(-0.5 * t**2 - _LOG_SQRT_2PI - log_cdf)  # phi(t)/Phi(t), stable
        return log_cdf, s * mills, mills * (t + mills)
    raise ValueError(f"Unsupported family/link {family!r}/{link!r}.")
