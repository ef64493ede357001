"""Prior draws of the CRP latent-cause model and the data they generate (for SBC), and the
per-subject fit of alpha from conditioned responses as a DataTree.

Two targets:

* ``"causes"`` (default): the offline partition model of
  :func:`pmctx.models.crp_conditioning.build_model` (``K`` causes with Dirichlet(alpha/K)
  weights, Beta(eta, eta) feature probabilities, Bernoulli features); the truth is the
  number of occupied causes ``n_occupied``.
* ``"alpha"``: a subject with ``alpha`` drawn uniformly from a grid, ``bias ~ N(0, 2)`` and
  ``slope ~ N(0, 10)`` responding ``Bernoulli(sigmoid(bias + slope (V_t - 0.5)))`` to a
  shipped design, ``V_t`` from the particle filter; the truth is ``alpha``, which
  :func:`fit_alpha_posterior` infers.

Examples
--------
>>> data, truth = simulate(0)
>>> data["features"].shape, sorted(truth)
((8, 3), ['n_occupied'])
>>> data, truth = simulate(0, target="alpha", n_particles=50)
>>> sorted(data), sorted(truth)
(['alphas', 'features', 'responses'], ['alpha'])
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit, logsumexp

from pmctx.validation import as_float_array, check_choice, check_int, check_positive

__all__ = ["ALPHA_GRID", "fit_alpha_posterior", "invariants", "simulate"]

#: Default alpha grid (a uniform prior over it), as ``fit_alpha``'s default.
ALPHA_GRID = (0.01, 0.1, 1.0, 10.0)
#: Prior sds of (bias, slope), as :func:`pmctx.conditioning.behaviour.response_evidence`.
RESPONSE_PRIOR_SD = (2.0, 10.0)


def _simulate_causes(rng, n_trials, n_features, max_causes, alpha, concentration):
    K = check_int(max_causes, "max_causes", minimum=1)
    alpha = check_positive(alpha, "alpha")
    eta = check_positive(concentration, "concentration")
    # Dirichlet(alpha / K) through log-gammas: tiny shapes underflow plain gamma draws.
    log_g = np.log(rng.random(K)) * K / alpha + np.log(rng.gamma(alpha / K + 1.0, size=K))
    weights = np.exp(log_g - logsumexp(log_g))
    z = rng.choice(K, size=check_int(n_trials, "n_trials", minimum=1), p=weights)
    theta = rng.beta(eta, eta, size=(K, check_int(n_features, "n_features", minimum=1)))
    features = (rng.random((z.size, theta.shape[1])) < theta[z]).astype(float)
    data = {"features": features, "alpha": alpha, "max_causes": K}
    return data, {"n_occupied": int(np.unique(z).size)}


def _simulate_alpha(rng, design, alphas, n_particles):
    from pmctx.conditioning import particle_filter, shipped_design

    alphas = as_float_array(alphas, "alphas", ndim=1)
    alpha = float(rng.choice(alphas))
    design = shipped_design(design, n_acquisition=8, n_extinction=8, n_test=4)
    V = particle_filter(design, alpha=alpha, n_particles=n_particles, random_seed=rng).V
    bias, slope = rng.normal(0.0, RESPONSE_PRIOR_SD)
    responses = (rng.random(V.shape) < expit(bias + slope * (V - 0.5))).astype(float)
    data = {"features": design.to_array(), "responses": responses, "alphas": alphas}
    return data, {"alpha": alpha}


def simulate(
    random_seed=None,
    *,
    target: str = "causes",
    n_trials: int = 8,
    n_features: int = 3,
    max_causes: int = 4,
    alpha: float = 1.0,
    concentration: float = 1.0,
    design: str = "renewal_aba",
    alphas=ALPHA_GRID,
    n_particles: int = 500,
):
    """One prior draw and its data: ``(data, truth)`` (see the module docstring).

    Parameters
    ----------
    random_seed : int or numpy.random.Generator, optional
        Random seed or generator.
    target : {"causes", "alpha"}, default "causes"
        Simulate a cause partition and features, or a subject's alpha and responses.
    n_trials : int, default 8
        Trials (``"causes"``).
    n_features : int, default 3
        Features (``"causes"``).
    max_causes : int, default 4
        Largest number of causes (``"causes"``).
    alpha : float, default 1.0
        CRP concentration (``"causes"``).
    concentration : float, default 1.0
        Beta pseudo-count of the feature probabilities (``"causes"``).
    design : str, default "renewal_aba"
        Shipped design (``"alpha"``).
    alphas : array_like, default ALPHA_GRID
        Alpha grid, the prior's support (``"alpha"``).
    n_particles : int, default 500
        Particles of the filter (``"alpha"``).

    Returns
    -------
    data : dict
        The simulated data.
    truth : dict
        The true label-invariant quantities.
    """
    rng = np.random.default_rng(random_seed)
    if check_choice(target, "target", ["causes", "alpha"]) == "causes":
        return _simulate_causes(rng, n_trials, n_features, max_causes, alpha, concentration)
    return _simulate_alpha(rng, design, alphas, check_int(n_particles, "n_particles", minimum=1))


def fit_alpha_posterior(
    data: dict,
    *,
    random_seed=None,
    alphas=None,
    response_models=("logistic",),
    n_particles: int = 500,
    draws: int = 1000,
    **options,
):
    """Posterior of a subject's alpha on a grid as a DataTree.

    Wraps :func:`pmctx.conditioning.behaviour.fit_alpha` (particle-filter ``V_t`` per alpha,
    response parameters integrated out by importance sampling). Returns ``draws`` draws of
    ``alpha`` from the grid posterior (uniform prior), the grid and its posterior
    probabilities in ``constant_data``, the log likelihood of each response at each draw
    (from the draw's alpha) and ``attrs["log_evidence"]`` (log mean marginal likelihood over
    the grid) per response model.

    Parameters
    ----------
    data : dict
        ``responses``, ``features`` and optionally ``alphas``.
    random_seed : int, optional
        Seed of the filter runs and the draws.
    alphas : array_like, optional
        Alpha grid (default ``data["alphas"]`` or :data:`ALPHA_GRID`).
    response_models : tuple of str, default ("logistic",)
        Response models fitted (the first gives the draws).
    n_particles : int, default 500
        Particles of the filter.
    draws : int, default 1000
        Draws of alpha.
    **options
        Passed to :func:`pmctx.conditioning.behaviour.fit_alpha`.

    Returns
    -------
    xarray.DataTree
        Posterior ``alpha``, ``log_likelihood`` and ``constant_data`` with the grid.
    """
    from pmctx.conditioning.behaviour import fit_alpha
    from pmctx.io import to_inference_data

    rng = np.random.default_rng(random_seed)
    grid = data.get("alphas", ALPHA_GRID) if alphas is None else alphas
    fit = fit_alpha(
        data["responses"],
        data["features"],
        alphas=grid,
        response_models=response_models,
        n_particles=n_particles,
        rng=rng,
        **options,
    )
    lml = fit.log_marginal_likelihood
    lml = lml if lml.ndim == 2 else lml[:, None]
    post = fit.posterior_alpha
    pick = rng.choice(len(fit.alphas), size=check_int(draws, "draws", minimum=1), p=post)
    model = fit.response_models[0]
    pointwise = np.stack([fit.idata[f"{model}, alpha={a:g}"].log_likelihood["responses"]
                          .values[0] for a in fit.alphas])  # fmt: skip
    which = rng.integers(pointwise.shape[1], size=pick.size)
    attrs = {
        "inference": "alpha grid",
        "log_evidence": float(logsumexp(lml[:, 0]) - np.log(len(lml))),
    }
    for k, m in enumerate(fit.response_models):
        attrs[f"log_evidence_{m}"] = float(logsumexp(lml[:, k]) - np.log(len(lml)))
    return to_inference_data(
        {"alpha": fit.alphas[pick][None]},
        log_likelihood={"responses": pointwise[pick, which][None]},
        constant_data={"alpha_grid": fit.alphas, "posterior_alpha": post},
        dims={"responses": ["response"], "alpha_grid": ["grid"], "posterior_alpha": ["grid"]},
        attrs=attrs,
    )


def invariants(idata) -> dict:
    """Posterior draws of ``n_occupied`` (partition fits) or ``alpha`` (alpha fits).

    Parameters
    ----------
    idata : xarray.DataTree
        A fit of simulated data.

    Returns
    -------
    dict
        ``{"alpha": draws}`` or ``{"n_occupied": draws}``.
    """
    if "alpha" in idata.posterior:
        return {"alpha": idata.posterior["alpha"].values.reshape(-1)}
    return {"n_occupied": idata.sample_stats["n_occupied"].values.reshape(-1)}
