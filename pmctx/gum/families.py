"""Observation families and links: pointwise log-likelihood and its first two derivatives in rho.

``loglik(y, rho)`` returns ``(ll, d1, w)`` with ``d1 = d ll / d rho`` and
``w = -d^2 ll / d rho^2`` (non-negative for every family here, which are log-concave in rho).
:func:`mean_response` is the inverse link and :func:`response_draws` draws responses.

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
from scipy.special import expit, gammaln, log_ndtr, ndtr

from pmctx.validation import as_rng

__all__ = ["DISPERSION", "FAMILIES", "loglik", "mean_response", "response_draws"]

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


def mean_response(family: str, link: str, rho: np.ndarray) -> np.ndarray:
    """``E[y | rho]`` (the inverse link).

    Parameters
    ----------
    family : str
        Response family.
    link : str
        Link function.
    rho : numpy.ndarray
        Predictor values.

    Returns
    -------
    numpy.ndarray
        Mean response, same shape.

    Examples
    --------
    >>> mean_response("poisson", "log", np.zeros(2))
    array([1., 1.])
    """
    if family in ("poisson", "negative_binomial"):
        return np.exp(rho)
    if family == "bernoulli":
        return expit(rho) if link == "logit" else ndtr(rho)
    return rho


def response_draws(family, link, rho, random_seed=None, *, noise_sd=None, alpha=None) -> np.ndarray:
    """One response draw per predictor draw.

    Parameters
    ----------
    family : str
        Response family.
    link : str
        Link function.
    rho : numpy.ndarray (chain, draw, n)
        Predictor draws.
    random_seed : int, numpy.random.Generator or None, optional
        Seed or generator of the draws.
    noise_sd : float or numpy.ndarray, optional
        Gaussian sd (or negative-binomial alpha) per draw.
    alpha : float or numpy.ndarray, optional
        Negative-binomial dispersion (default ``noise_sd``).

    Returns
    -------
    numpy.ndarray
        Response draws, same shape as ``rho``.
    """
    mean = mean_response(family, link, rho)
    rng = as_rng(random_seed)
    if family == "bernoulli":
        return (rng.uniform(size=rho.shape) < mean).astype(np.int64)
    if family == "poisson":
        return rng.poisson(mean)
    if family == "negative_binomial":
        alpha = noise_sd if alpha is None else alpha  # the family's dispersion parameter
        alpha = np.broadcast_to(np.asarray(alpha, float)[..., None], rho.shape)
        return rng.poisson(rng.gamma(alpha, mean / alpha))
    noise = np.broadcast_to(np.asarray(noise_sd, float)[..., None], rho.shape)
    return mean + noise * rng.standard_normal(rho.shape)
