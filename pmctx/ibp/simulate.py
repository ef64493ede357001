"""Prior draws of the truncated IBP visuo-motor model and the data they generate (for SBC).

The draw follows :func:`pmctx.models.ibp.build_model` exactly (``K_max`` columns,
``pi_k ~ Beta(alpha / K_max, 1)``, ``z_ik ~ Bernoulli(pi_k)``, ``A ~ N(0, sigma_A^2)``,
``F = Z A + N(0, sigma_n^2)``, optional noisy-OR cues ``X`` from ``Y ~ Bernoulli(phi)``), with
``alpha ~ Gamma(2, 1)`` and ``sigma_n ~ HalfNormal(1)`` when given as ``"prior"``, the
priors the model then declares. The truth holds label-invariant quantities only.

Examples
--------
>>> data, truth = simulate(0, n_trials=10)
>>> data["F"].shape, sorted(truth)
((10, 2), ['alpha', 'n_active', 'sigma_n'])
"""

from __future__ import annotations

import numpy as np

from pmctx.ibp.conditionals import noisy_or_log_p
from pmctx.validation import check_int, check_positive, check_probability

__all__ = ["ALPHA_PRIOR", "SIGMA_PRIOR_SD", "invariants", "simulate"]

#: Gamma(shape, rate) prior of alpha="prior" (as pmctx.steps.ibp_gibbs.ALPHA_PRIOR).
ALPHA_PRIOR = (2.0, 1.0)
#: HalfNormal scale of sigma_n="prior" (as pmctx.models.ibp).
SIGMA_PRIOR_SD = 1.0


def simulate(
    random_seed=None,
    *,
    n_trials: int = 12,
    n_dims: int = 2,
    n_pixels: int = 0,
    K_max: int = 4,
    alpha="prior",
    sigma_n="prior",
    sigma_A: float = 1.0,
    phi: float = 0.5,
    lam: float = 0.9,
    eps: float = 0.05,
):
    """One prior draw and its data: ``(data, truth)``.

    ``data`` holds ``F`` (and ``X`` when ``n_pixels > 0``), ``K_max`` and every
    hyperparameter as the fit must be told it (a number, or ``"prior"``), so that
    ``resolve_fit("ibp")(data)`` fits the model the data came from. ``truth`` holds
    ``n_active`` and the hyperparameters drawn from their priors.

    Parameters
    ----------
    random_seed : int or numpy.random.Generator, optional
        Random seed or generator.
    n_trials : int, default 12
        Trials.
    n_dims : int, default 2
        Force dimensions.
    n_pixels : int, default 0
        Cue pixels (0: no cues).
    K_max : int, default 4
        Truncation level.
    alpha, sigma_n : float or "prior", default "prior"
        Fixed values, or ``"prior"`` to draw them from their priors.
    sigma_A : float, default 1.0
        Prior sd of the force bases.
    phi, lam, eps : float, default 0.5, 0.9 and 0.05
        Cue-model parameters.

    Returns
    -------
    data : dict
        Data and fit options.
    truth : dict
        ``n_active`` and the drawn hyperparameters.
    """
    rng = np.random.default_rng(random_seed)
    n = check_int(n_trials, "n_trials", minimum=1)
    K = check_int(K_max, "K_max", minimum=1)
    D = check_int(n_dims, "n_dims", minimum=0)
    T = check_int(n_pixels, "n_pixels", minimum=0)
    if D == 0 and T == 0:
        raise ValueError("Simulate forces (n_dims > 0), cues (n_pixels > 0) or both.")
    truth = {}
    if alpha == "prior":
        a = rng.gamma(ALPHA_PRIOR[0], 1.0 / ALPHA_PRIOR[1])
        truth["alpha"] = a
    else:
        a = check_positive(alpha, "alpha")
    if sigma_n == "prior":
        s_n = abs(rng.normal(0.0, SIGMA_PRIOR_SD))
        truth["sigma_n"] = s_n
    else:
        s_n = check_positive(sigma_n, "sigma_n")
    pi = rng.beta(a / K, 1.0, size=K)
    Z = (rng.random((n, K)) < pi).astype(np.int64)
    truth["n_active"] = int(Z.any(axis=0).sum())
    data = {"K_max": K, "alpha": alpha, "sigma_A": sigma_A}
    if D:
        A = rng.normal(0.0, check_positive(sigma_A, "sigma_A"), size=(K, D))
        data["F"] = Z @ A + s_n * rng.normal(size=(n, D))
        data["sigma_n"] = sigma_n
    if T:
        Y = (rng.random((K, T)) < check_probability(phi, "phi")).astype(np.int64)
        log_q, _ = noisy_or_log_p(Z @ Y, lam, eps)
        data["X"] = (rng.random(log_q.shape) >= np.exp(log_q)).astype(np.int64)
        data.update(phi=phi, lam=lam, eps=eps)
    return data, dict(sorted(truth.items()))


def invariants(idata) -> dict:
    """Posterior draws (flattened over chains) of the quantities :func:`simulate` ranks.

    Parameters
    ----------
    idata : xarray.DataTree
        An IBP fit.

    Returns
    -------
    dict
        Draws of ``alpha``, ``n_active`` and ``sigma_n`` (those present).
    """
    post = idata.posterior
    return {
        name: post[name].values.reshape(-1)
        for name in ("alpha", "n_active", "sigma_n")
        if name in post
    }
