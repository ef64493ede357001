"""Conditional updates of the IBP hyperparameters (pure numpy; used by ``IBPHyperGibbs``).

Default priors (``HYPER_PRIORS``) and why:

* ``sigma_n^2 ~ InvGamma(2, 0.1)``: conjugate to the Gaussian forces; prior mean 0.1 (noise
  s.d. ~0.3 in the force units), mode 0.033, heavy right tail, so a few hundred force values
  dominate it. Users rarely know their noise level; fixing it decides how many features the
  forces can support.
* ``sigma_A^2 ~ InvGamma(2, 1)``: conjugate to the Gaussian force basis; prior mean 1 (force
  features of order one), weak (two pseudo-observations).
* ``alpha ~ Gamma(2, 1)``: conjugate given ``pi`` (:class:`IBPAlphaGibbs`); a priori about
  ``alpha * H_N`` features, 2 on average per unit ``H_N``.
* ``phi ~ Beta(1, 1)``: conjugate to the Bernoulli basis images; uniform.
* ``lambda ~ Beta(5, 1)`` and ``eps ~ Beta(1, 20)``: the noisy-OR is identifiable only when a
  cause usually shows (lambda near 1) and spontaneous pixels are rare (eps small); these
  encode that weakly. No conjugate form exists, so they are slice-sampled (stepping out, on
  the logit scale) on their exact conditional given ``Z``, ``Y`` and ``X``, which depends on
  the data only through the histogram of (number of active causes, pixel value), O(K_max)
  per density evaluation.

They are weak: on 6x6 bar cues with 2-D forces (N=100) the posterior means come out at the
generating values (phi 0.170 for a true pixel density of 1/6, lambda 0.893 for 0.9, eps 0.046
for 0.05, sigma_n 0.293 for 0.3). Under them the posterior often keeps one extra feature owned
by a single trial (the IBP expects about ``alpha`` such features): chains started at the truth
and at ``Z = 0`` agree on how often, so it is the target, not slow mixing. The number of
features shared by two or more trials (sampler stats ``n_active - n_singletons``) is what the
data pin down. Evidence and numbers: docs/guides/ibp_defaults.md.
"""

from __future__ import annotations

import math

import numpy as np

from pmctx.slice import slice_sample

__all__ = [
    "HYPER_NAMES",
    "HYPER_PRIORS",
    "noisy_or_count_histogram",
    "noisy_or_loglik_from_counts",
    "sample_basis_var",
    "sample_noise_var",
    "sample_phi",
    "slice_sample_logit",
    "update_hyper",
]

#: The hyperparameters of the IBP visuo-motor model, in the order the steps and starts use.
HYPER_NAMES = ("alpha", "sigma_n", "sigma_A", "phi", "lam", "eps")

HYPER_PRIORS = {
    "sigma_n2": (2.0, 0.1),  # InvGamma(shape, scale) of the force noise variance
    "sigma_A2": (2.0, 1.0),  # InvGamma(shape, scale) of the force basis variance
    "alpha": (2.0, 1.0),  # Gamma(shape, rate)
    "phi": (1.0, 1.0),  # Beta
    "lam": (5.0, 1.0),  # Beta
    "eps": (1.0, 20.0),  # Beta
}


def _inv_gamma(shape, scale, rng):
    return scale / rng.gamma(shape, 1.0)


def sample_noise_var(F, Z, A, prior, rng):
    """``sigma_n^2 | F, Z, A ~ InvGamma(a + N D / 2, b + ||F - Z A||^2 / 2)``.

    Parameters
    ----------
    F : array_like (N, D)
        Forces.
    Z : array_like (N, K)
        Ownership.
    A : array_like (K, D)
        Force bases.

    prior : tuple of float
        ``(a, b)`` of the conjugate prior.
    rng : numpy.random.Generator
        Random generator.

    Returns
    -------
    float
        A draw of ``sigma_n^2``.
    """
    resid = np.asarray(F) - np.asarray(Z) @ np.asarray(A)
    sq = float(np.sum(resid * resid))
    return _inv_gamma(prior[0] + 0.5 * resid.size, prior[1] + 0.5 * sq, rng)


def sample_basis_var(A, prior, rng):
    """``sigma_A^2 | A ~ InvGamma(a + K_max D / 2, b + ||A||^2 / 2)`` (all K_max rows).

    Parameters
    ----------
    A : array_like (K_max, D)
        Force bases.

    prior : tuple of float
        ``(a, b)`` of the conjugate prior.
    rng : numpy.random.Generator
        Random generator.

    Returns
    -------
    float
        A draw of ``sigma_A^2``.
    """
    A = np.asarray(A)
    return _inv_gamma(prior[0] + 0.5 * A.size, prior[1] + 0.5 * float(np.sum(A * A)), rng)


def sample_phi(Y, prior, rng):
    """``phi | Y ~ Beta(a + sum Y, b + K_max T - sum Y)`` (all K_max rows).

    Parameters
    ----------
    Y : array_like (K_max, T)
        Cue images.

    prior : tuple of float
        ``(a, b)`` of the conjugate prior.
    rng : numpy.random.Generator
        Random generator.

    Returns
    -------
    float
        A draw of ``phi``.

    Examples
    --------
    >>> 0 < sample_phi(np.ones((2, 3)), (1.0, 1.0), np.random.default_rng(0)) < 1
    True
    """
    Y = np.asarray(Y)
    on = float(Y.sum())
    return float(rng.beta(prior[0] + on, prior[1] + Y.size - on))


def noisy_or_count_histogram(Z, Y, X):
    """``(n0, n1)``: how many cue entries with ``c`` active causes are 0 and 1.

    Parameters
    ----------
    Z : array_like (N, K)
        Ownership.
    Y : array_like (K, T)
        Cue images.
    X : array_like (N, T)
        Binary cues.

    Returns
    -------
    n0 : numpy.ndarray
        Off entries per number of active causes.
    n1 : numpy.ndarray
        On entries per number of active causes.
    """
    counts = (np.asarray(Z) @ np.asarray(Y)).ravel()
    x = np.asarray(X).ravel().astype(bool)
    size = int(counts.max(initial=0)) + 1
    return (
        np.bincount(counts[~x], minlength=size).astype(np.float64),
        np.bincount(counts[x], minlength=size).astype(np.float64),
    )


def noisy_or_loglik_from_counts(n0, n1, lam, eps):
    """Noisy-OR log-likelihood of all cues from the count histogram, in log space.

    Parameters
    ----------
    n0, n1 : numpy.ndarray
        Histograms from :func:`noisy_or_count_histogram`.
    lam : float
        Noisy-OR strength.
    eps : float
        Noisy-OR leak.

    Returns
    -------
    float
        The log-likelihood of all cues.
    """
    c = np.arange(n0.size)
    log_q = c * math.log1p(-lam) + math.log1p(-eps)
    log_p1 = np.where(log_q > -math.log(2.0), np.log(-np.expm1(log_q)), np.log1p(-np.exp(log_q)))
    return float(n0 @ log_q + n1 @ log_p1)


def slice_sample_logit(value, log_density, rng, *, width=1.0, max_steps=50):
    """One slice-sampling update of a probability ``value`` on the logit scale.

    ``log_density(p)`` is the unnormalised log density of ``p`` on (0, 1); the Jacobian
    ``p (1 - p)`` of the logit is added here. Stepping out and shrinkage as in Neal (2003),
    which leave the target exactly invariant.

    Parameters
    ----------
    value : float
        Current probability in (0, 1).
    log_density : callable
        Unnormalised log density of the probability.
    rng : numpy.random.Generator
        Random generator.
    width : float, default 1.0
        Initial bracket width on the logit scale.
    max_steps : int, default 50
        Maximum stepping-out steps.

    Returns
    -------
    float
        The new probability.
    """

    def logf(u):
        p = 1.0 / (1.0 + math.exp(-u))
        if not 0.0 < p < 1.0:
            return -math.inf
        return log_density(p) + math.log(p) + math.log1p(-p)

    u0 = math.log(value) - math.log1p(-value)
    u1 = slice_sample(logf, u0, rng, width=width, max_steps=max_steps)
    return 1.0 / (1.0 + math.exp(-u1))


def update_hyper(values, learned, Z, A, Y, F, X, priors, rng, *, pi_logit=None) -> dict:
    """One update of every learned hyperparameter, in place on ``values``; returns it.

    The updates and their order are those of the model's steps: ``alpha | pi`` (conjugate,
    :class:`pmctx.steps.ibp_gibbs.IBPAlphaGibbs`; needs ``pi_logit``), then ``sigma_n^2``,
    ``sigma_A^2``, ``phi`` (conjugate) and ``lam``, ``eps`` (slice sampling)
    (:class:`pmctx.steps.ibp_gibbs.IBPHyperGibbs`). ``values`` maps ``alpha, sigma_n,
    sigma_A, phi, lam, eps`` to numbers; ``learned`` names the ones to update.

    Parameters
    ----------
    values : dict
        Current values of all six hyperparameters; updated in place.
    learned : collection of str
        Names of the hyperparameters to update (the others stay fixed).
    Z, A, Y : ndarray
        Current latent state; ``A`` (``Y``) with 0 columns skips the force (cue) updates.
    F, X : ndarray
        Forces and cues.
    priors : dict
        As ``HYPER_PRIORS``.
    rng : numpy.random.Generator
    pi_logit : ndarray, optional
        Feature probabilities on the logit scale; needed when ``alpha`` is learned.

    Returns
    -------
    dict
        ``values``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> values = dict(alpha=1.0, sigma_n=0.5, sigma_A=1.0, phi=0.5, lam=0.9, eps=0.05)
    >>> Z, A, Y = np.ones((4, 2), int), np.ones((2, 1)), np.ones((2, 3), int)
    >>> F, X = np.full((4, 1), 2.0), np.ones((4, 3), int)
    >>> out = update_hyper(values, ("sigma_n", "phi"), Z, A, Y, F, X, HYPER_PRIORS, rng)
    >>> out["lam"], 0.0 < out["sigma_n"] < 1.0
    (0.9, True)
    """
    Z, A, Y = np.asarray(Z), np.asarray(A), np.asarray(Y)
    if "alpha" in learned:
        k_max = Z.shape[1]
        log_pi = -np.logaddexp(0.0, -np.asarray(pi_logit, dtype=np.float64))
        shape, rate = priors["alpha"]
        values["alpha"] = float(rng.gamma(shape + k_max, 1.0 / (rate - log_pi.sum() / k_max)))
    if "sigma_n" in learned and A.shape[1] > 0:
        values["sigma_n"] = math.sqrt(sample_noise_var(F, Z, A, priors["sigma_n2"], rng))
    if "sigma_A" in learned and A.shape[1] > 0:
        values["sigma_A"] = math.sqrt(sample_basis_var(A, priors["sigma_A2"], rng))
    if "phi" in learned and Y.shape[1] > 0:
        values["phi"] = sample_phi(Y, priors["phi"], rng)
    if Y.shape[1] > 0 and ("lam" in learned or "eps" in learned):
        n0, n1 = noisy_or_count_histogram(Z, Y, X)
        for name in ("lam", "eps"):
            if name not in learned:
                continue
            a, b = priors[name]

            def log_density(p, name=name, a=a, b=b):
                other = {**values, name: p}
                prior = (a - 1.0) * np.log(p) + (b - 1.0) * np.log1p(-p)
                return prior + noisy_or_loglik_from_counts(n0, n1, other["lam"], other["eps"])

            values[name] = slice_sample_logit(values[name], log_density, rng)
    return values
