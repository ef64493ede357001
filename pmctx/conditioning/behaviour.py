"""Fitting the CRP concentration alpha to a subject's conditioned responses.

The latent-cause model predicts ``V_t`` (the US expectation) on every trial; a response model
links it to behaviour. Two response models are provided:

* ``"logistic"``: ``p_t = sigmoid(bias + slope * (V_t - 0.5))``;
* ``"constant"``: ``p_t = sigmoid(bias)`` (a null model that ignores ``V_t``).

Binary responses (0/1) are Bernoulli(p_t); graded responses in [0, 1] are
Beta(phi p_t, phi (1 - p_t)) with precision ``phi``. ``bias`` and ``slope`` get Normal priors
and are integrated out by importance sampling from a Laplace approximation, which gives the
log marginal likelihood of every (alpha, response model) pair, the posterior over an alpha grid
and posterior draws with pointwise log likelihoods for ``arviz.compare``.

Examples
--------
>>> from pmctx.conditioning import shipped_design, particle_filter
>>> from pmctx.conditioning.behaviour import fit_alpha, simulate_responses
>>> design = shipped_design("renewal_aba", n_acquisition=8, n_extinction=8, n_test=4)
>>> V = particle_filter(design, alpha=1.0, n_particles=200, random_seed=0).V
>>> y = simulate_responses(V, slope=8.0, rng=1)
>>> fit = fit_alpha(y, design, alphas=[0.01, 1.0], n_particles=100, rng=2)
>>> fit.log_marginal_likelihood.shape
(2,)
"""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
from scipy import optimize, stats
from scipy.special import expit, log_expit, logsumexp

from pmctx.conditioning.particle_filter import particle_filter
from pmctx.exceptions import PmctxWarning
from pmctx.validation import (
    as_float_array,
    as_rng,
    check_choice,
    check_int,
    check_positive,
)

__all__ = ["AlphaFit", "fit_alpha", "response_evidence", "simulate_responses"]

RESPONSE_MODELS = ("logistic", "constant")


def simulate_responses(V, *, slope=8.0, bias=0.0, rng=None) -> np.ndarray:
    """Binary responses ``Bernoulli(sigmoid(bias + slope (V - 0.5)))``.

    Parameters
    ----------
    V : array_like (trial,)
        US expectation on each trial, in [0, 1].
    slope : float, default 8.0
        Slope of the logistic link.
    bias : float, default 0.0
        Bias of the logistic link.
    rng : int or numpy.random.Generator, optional
        Random seed or generator.

    Returns
    -------
    numpy.ndarray (trial,)
        0/1 responses (int64).
    """
    V = as_float_array(V, "V", ndim=1)
    return (as_rng(rng).random(V.shape) < expit(bias + slope * (V - 0.5))).astype(np.int64)


def _check_responses(responses, n_trials, kind):
    y = as_float_array(responses, "responses", ndim=1, allow_nan=True)
    if y.shape[0] != n_trials:
        raise ValueError(
            f"responses must have one entry per trial ({n_trials}), got {y.shape[0]}. "
            "Use NaN for trials without a response."
        )
    seen = ~np.isnan(y)
    if not seen.any():
        raise ValueError("responses are all NaN; at least one trial needs a response.")
    if ((y[seen] < 0) | (y[seen] > 1)).any():
        raise ValueError(
            "responses must be binary (0/1) or probabilities in [0, 1], got values outside "
            f"[0, 1] such as {y[seen][(y[seen] < 0) | (y[seen] > 1)][:3].tolist()}."
        )
    check_choice(kind, "kind", ["auto", "binary", "probability"])
    binary = np.isin(y[seen], (0, 1)).all()
    if kind == "auto":
        kind = "binary" if binary else "probability"
    elif kind == "binary" and not binary:
        raise ValueError("kind='binary' needs 0/1 responses; use kind='probability'.")
    return y, seen, kind


def _pointwise(theta, V, y, kind, phi, model):
    """Log likelihood of each response for parameter rows ``theta`` (S, 2)."""
    bias = theta[:, :1]
    eta = bias + (theta[:, 1:2] * (V - 0.5) if model == "logistic" else 0.0)
    if kind == "binary":
        return y * log_expit(eta) + (1 - y) * log_expit(-eta)
    p = np.clip(expit(eta), 1e-9, 1 - 1e-9)
    yc = np.clip(y, 1e-6, 1 - 1e-6)
    return stats.beta.logpdf(yc, phi * p, phi * (1 - p))


def response_evidence(
    responses,
    V,
    *,
    response_model="logistic",
    kind="auto",
    phi=10.0,
    prior_sd=(2.0, 10.0),
    n_draws=2000,
    rng=None,
):
    """Log marginal likelihood of responses given ``V`` and posterior draws of (bias, slope).

    Parameters
    ----------
    responses : array_like (trial,)
        Binary (0/1) or graded ([0, 1]) responses; NaN where missing.
    V : array_like (trial,)
        The model's US expectation on each trial.
    response_model : {"logistic", "constant"}, default "logistic"
        Link from ``V`` to the response probability.
    kind : {"auto", "binary", "probability"}, default "auto"
        Bernoulli or Beta likelihood (``"auto"``: binary when every response is 0 or 1).
    phi : float, default 10.0
        Beta precision of graded responses.
    prior_sd : tuple of float, default (2.0, 10.0)
        Normal prior sds of ``bias`` and ``slope``.
    n_draws : int, default 2000
        Importance draws (>= 10).
    rng : int or numpy.random.Generator, optional
        Random seed or generator.

    Returns
    -------
    log_ml : float
    draws : ndarray (n_draws, 2)
        Posterior draws of (bias, slope) (importance resampled; slope is 0 for ``constant``).
    pointwise : ndarray (n_draws, n_responses)
        Log likelihood of each observed response at each draw.
    """
    V = as_float_array(V, "V", ndim=1)
    y, seen, kind = _check_responses(responses, V.shape[0], kind)
    check_choice(response_model, "response_model", RESPONSE_MODELS)
    phi = check_positive(phi, "phi")
    sd = np.array([check_positive(s, "prior_sd") for s in prior_sd])
    n_draws = check_int(n_draws, "n_draws", minimum=10)
    gen = as_rng(rng)
    V, y = V[seen], y[seen]
    dim = 2 if response_model == "logistic" else 1

    def full(theta):
        return np.column_stack([theta[:, :1], theta[:, 1:2] if dim == 2 else 0 * theta[:, :1]])

    def log_post(theta):
        theta = np.atleast_2d(theta)
        ll = _pointwise(full(theta), V, y, kind, phi, response_model).sum(axis=1)
        return ll + stats.norm.logpdf(theta, 0.0, sd[:dim]).sum(axis=1)

    opt = optimize.minimize(lambda th: -log_post(th)[0], np.zeros(dim), method="BFGS")
    cov = np.atleast_2d(opt.hess_inv) * 1.5**2  # widened proposal for heavier tails
    cov = 0.5 * (cov + cov.T) + 1e-9 * np.eye(dim)
    proposal = stats.multivariate_t(opt.x, cov, df=5, seed=gen)
    theta = np.atleast_2d(proposal.rvs(size=n_draws)).reshape(n_draws, dim)
    log_w = log_post(theta) - proposal.logpdf(theta)
    log_ml = float(logsumexp(log_w) - np.log(n_draws))
    w = np.exp(log_w - logsumexp(log_w))
    keep = gen.choice(n_draws, size=n_draws, p=w)
    draws = full(theta[keep])
    return log_ml, draws, _pointwise(draws, V, y, kind, phi, response_model)


@dataclasses.dataclass(frozen=True)
class AlphaFit:
    """Result of :func:`fit_alpha`.

    Attributes
    ----------
    alphas : ndarray (alpha,)
    response_models : tuple of str
    log_marginal_likelihood : ndarray (alpha,) or (alpha, response_model)
        Of the responses, per alpha (columns per response model when several).
    V : ndarray (alpha, trial)
        The particle filter's V_t for every alpha.
    idata : dict
        ``"<model>, alpha=<a>"`` -> DataTree with posterior (bias, slope) and a
        ``log_likelihood`` group, ready for ``arviz.compare``.
    """

    alphas: np.ndarray
    response_models: tuple
    log_marginal_likelihood: np.ndarray
    V: np.ndarray
    idata: dict

    @property
    def posterior_alpha(self) -> np.ndarray:
        """Posterior over the alpha grid (uniform prior) under the first response model."""
        lml = self.log_marginal_likelihood
        lml = lml if lml.ndim == 1 else lml[:, 0]
        return np.exp(lml - logsumexp(lml))

    @property
    def best_alpha(self) -> float:
        """The grid value of alpha with the highest posterior probability.

        Returns
        -------
        float
            ``alphas[argmax(posterior_alpha)]``.
        """
        return float(self.alphas[np.argmax(self.posterior_alpha)])

    def compare(self, ic: str = "loo"):
        """``arviz.compare`` over every fitted (response model, alpha) pair.

        Parameters
        ----------
        ic : {"loo"}, default "loo"
            Information criterion: PSIS-LOO, the one :func:`arviz.compare` computes (ArviZ 1
            has no WAIC).

        Returns
        -------
        pandas.DataFrame
            The :func:`arviz.compare` table, best first.
        """
        import arviz as az

        check_choice(ic, "ic", ["loo"])
        return az.compare(self.idata)


def fit_alpha(
    responses,
    features,
    *,
    alphas=(0.01, 0.1, 1.0, 10.0),
    response_models=("logistic",),
    kind="auto",
    n_particles=500,
    concentration=1.0,
    max_causes=None,
    stickiness=0.0,
    phi=10.0,
    n_draws=1000,
    rng=None,
) -> AlphaFit:
    """Compare alpha values (and response models) by the marginal likelihood of responses.

    Parameters
    ----------
    responses : array_like (trial,)
        Conditioned responses, binary or in [0, 1]; NaN where no response was recorded.
    features : Design or array_like (trial, feature)
        The experiment the subject went through (see
        :func:`~pmctx.conditioning.particle_filter`).
    alphas : sequence of float
        Grid of CRP concentrations (a uniform prior over the grid).
    response_models : sequence of {"logistic", "constant"}
    kind : {"auto", "binary", "probability"}
    n_particles, concentration, max_causes, stickiness
        Passed to the particle filter.
    phi : float
        Beta precision for graded responses.
    n_draws : int
        Importance draws per (alpha, model).
    rng : int or Generator

    Returns
    -------
    AlphaFit
        If interrupted (KeyboardInterrupt), the alphas finished so far, with a warning.
    """
    alphas = as_float_array(alphas, "alphas", ndim=1)
    if alphas.size == 0 or (alphas < 0).any():
        raise ValueError(f"alphas must be a non-empty grid of values >= 0, got {alphas}.")
    models = tuple(check_choice(m, "response model", RESPONSE_MODELS) for m in response_models)
    if not models:
        raise ValueError("response_models must name at least one model.")
    gen = as_rng(rng)
    from pmctx.io import to_inference_data

    lml_rows, V_rows, idatas = [], [], {}
    try:
        for a in alphas:
            V = particle_filter(
                features,
                alpha=a,
                n_particles=n_particles,
                concentration=concentration,
                max_causes=max_causes,
                stickiness=stickiness,
                random_seed=gen,
            ).V
            row = []
            for m in models:
                lml, draws, pw = response_evidence(
                    responses, V, response_model=m, kind=kind, phi=phi, n_draws=n_draws, rng=gen
                )
                row.append(lml)
                idatas[f"{m}, alpha={a:g}"] = to_inference_data(
                    {"bias": draws[None, :, 0], "slope": draws[None, :, 1]},
                    log_likelihood={"responses": pw[None]},
                    dims={"responses": ["response"]},
                )
            lml_rows.append(row)
            V_rows.append(V)
    except KeyboardInterrupt:
        if not lml_rows:
            raise
        warnings.warn(
            f"fit_alpha interrupted; returning the {len(lml_rows)} alpha value(s) finished.",
            PmctxWarning,
            stacklevel=2,
        )
    lml = np.array(lml_rows)
    if len(models) == 1:
        lml = lml[:, 0]
    return AlphaFit(alphas[: len(lml_rows)], models, lml, np.array(V_rows), idatas)
