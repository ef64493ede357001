"""Prediction for new trials of the IBP visuo-motor model: forces from cues, cues from forces.

For each posterior draw (``pi, A, Y`` and the hyperparameters) a new trial's ownership
``z`` is inferred from what was observed on it, by exact enumeration over the draw's active
features (columns some training trial owns; an inactive column has ``pi_k`` near zero and an
``A``/``Y`` row drawn from its prior, so it is left off):

``P(z | x) ∝ prod_k pi_k^z_k (1 - pi_k)^(1 - z_k) P(x | z, Y)`` (noisy-OR), then
``E[F | x] = sum_z P(z | x) z A``; likewise ``P(z | f) ∝ P(z | pi) N(f; z A, sigma_n^2 I)``
and ``P(x_t = 1 | f) = sum_z P(z | f) (1 - (1 - lam)^(z . y_t) (1 - eps))``.

Averaging over draws gives the posterior predictive mean; the per-draw values keep the
posterior uncertainty.

Examples
--------
>>> from pmctx.ibp.data import visuomotor_data
>>> from pmctx.models.ibp import sample
>>> data = visuomotor_data(30, random_seed=0)
>>> idata = sample(data.F[:20], data.X[:20], K_max=10, draws=40, tune=40, chains=1,
...                random_seed=0, sigma_n=0.3, check_convergence=False)
>>> pred = predict(idata, X=data.X[20:])
>>> pred["F"].dims
('chain', 'draw', 'trial', 'force_dim')
"""

from __future__ import annotations

import itertools

import numpy as np
import xarray as xr
from scipy.special import log1p, logsumexp

from pmctx.validation import as_binary_array, as_float_array, check_int

__all__ = ["predict"]

#: Most active features enumerated exactly per draw (2^12 ownership patterns).
MAX_ENUMERATED = 12


def _hyper(idata, name: str, chain: int, draw: int) -> float:
    if name in idata.posterior:
        return float(idata.posterior[name].values[chain, draw])
    return float(idata.constant_data[name].values)


def _log1mexp(x):
    return np.where(x > -0.693, np.log(-np.expm1(x)), log1p(-np.exp(x)))


def _patterns(active: np.ndarray, pi: np.ndarray, k_max: int) -> np.ndarray:
    """All ownership patterns over the active columns, as rows of length K."""
    if active.size > MAX_ENUMERATED:  # keep the most probable columns
        active = active[np.argsort(-pi[active])[:MAX_ENUMERATED]]
    combos = np.array(list(itertools.product((0, 1), repeat=active.size)), dtype=float)
    patterns = np.zeros((combos.shape[0], k_max))
    patterns[:, active] = combos
    return patterns


def predict(idata, *, X=None, F=None, max_draws: int = 500) -> xr.Dataset:
    """Predict forces of new trials from their cues and/or cues from their forces.

    Parameters
    ----------
    idata : xarray.DataTree
        A fit of :func:`pmctx.models.ibp.sample` with both forces and cues.
    X : array_like (n_new, T), optional
        Binary cues of new trials: predicts their forces ``F`` (posterior mean per draw).
    F : array_like (n_new, D), optional
        Forces of new trials: predicts their cue probabilities ``X_prob``.
    max_draws : int, default 500
        Thin the posterior to at most this many draws (evenly spaced over each chain).

    Returns
    -------
    xarray.Dataset
        ``F`` (chain, draw, trial, force_dim) and/or ``X_prob`` (chain, draw, trial, pixel).
    """
    post = idata.posterior
    if X is None and F is None:
        raise ValueError("Pass the new trials' cues X (to predict forces), forces F, or both.")
    for needed, why in (("A", "forces"), ("Y", "cues")):
        if needed not in post:
            raise ValueError(
                f"predict needs a fit with {why} (posterior variable {needed!r}); refit with "
                "both F and X."
            )
    k_max = post.sizes["feature"]
    X = None if X is None else as_binary_array(X, "X", ndim=2, shape=(None, post.sizes["pixel"]))
    F = None if F is None else as_float_array(F, "F", ndim=2, shape=(None, post.sizes["force_dim"]))
    max_draws = check_int(max_draws, "max_draws", minimum=1)
    n_chains, n_draws = post.sizes["chain"], post.sizes["draw"]
    keep = np.unique(np.linspace(0, n_draws - 1, min(n_draws, max(1, max_draws // n_chains))))
    keep = keep.astype(int)
    Z, pi = post["Z"].values, post["pi"].values
    A, Y = post["A"].values, post["Y"].values
    out_f, out_x = [], []
    for c in range(n_chains):
        f_chain, x_chain = [], []
        for d in keep:
            lam, eps = _hyper(idata, "lam", c, d), _hyper(idata, "eps", c, d)
            sigma_n = _hyper(idata, "sigma_n", c, d)
            p = np.clip(pi[c, d], 1e-12, 1 - 1e-12)
            active = np.flatnonzero(Z[c, d].sum(axis=0) > 0)
            patterns = _patterns(active, p, k_max)
            log_prior = patterns @ np.log(p) + (1 - patterns) @ np.log1p(-p)
            log_q = (patterns @ Y[c, d]) * np.log1p(-lam) + np.log1p(-eps)  # log P(x=0)
            means = patterns @ A[c, d]  # (patterns, D)
            if X is not None:
                loglik = X @ _log1mexp(log_q).T + (1 - X) @ log_q.T  # (n_new, patterns)
                logw = loglik + log_prior
                w = np.exp(logw - logsumexp(logw, axis=1, keepdims=True))
                f_chain.append(w @ means)
            if F is not None:
                sq = ((F[:, None, :] - means[None]) ** 2).sum(axis=-1)
                logw = log_prior - 0.5 * sq / sigma_n**2
                w = np.exp(logw - logsumexp(logw, axis=1, keepdims=True))
                x_chain.append(w @ -np.expm1(log_q))
        out_f.append(f_chain)
        out_x.append(x_chain)
    coords = {"chain": post["chain"].values, "draw": post["draw"].values[keep]}
    data = {}
    if X is not None:
        data["F"] = (("chain", "draw", "trial", "force_dim"), np.array(out_f))
    if F is not None:
        data["X_prob"] = (("chain", "draw", "trial", "pixel"), np.array(out_x))
    return xr.Dataset(data, coords=coords)
