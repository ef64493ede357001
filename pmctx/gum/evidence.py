"""Gradient of the Laplace log evidence with respect to log hyperparameters.

In the non-centred coordinates ``u`` (standard-normal prior) the Laplace log evidence is
``E(eta) = psi(u*, eta) - 1/2 log|H(u*, eta)|`` with ``psi`` the log joint, ``u*`` its mode
and ``H`` its negative Hessian (:mod:`pmctx.gum.laplace`). Its total derivative, by the
envelope theorem and implicit differentiation of ``grad psi(u*) = 0``, is

``dE/deta = d psi/d eta - 1/2 tr(H^-1 dH/d eta) - 1/2 D_du log|H|``,
``du = H^-1 d grad psi / d eta``,

where the partial derivatives hold ``u`` fixed and ``D_du`` is the directional derivative
along the mode's shift ``du`` (the third-derivative term of GPML eq. 5.22). For a
hyperparameter of a function's prior covariance ``K`` (lengthscale, variance, period, the sd
of a random effect) the partials are analytic in the centred coordinates
``w = L u`` (``L L^T = P K P^T``): with ``S = L^-1 (P dK/d log eta P^T) L^-T``,

``dE/d log eta = 1/2 u*^T S u* - 1/2 tr S + 1/2 tr(H^-1 S) - 1/2 D_du log|H|``,
``du = H^-1 S u*``

(``dK`` analytic for the lengthscale, a central difference of the small ``m x m`` kernel for
the period). The dispersion (Gaussian noise sd, negative-binomial alpha) enters the
likelihood instead; its partials at fixed ``u`` are central differences (O(N) each). The
directional derivative ``D_du log|H|`` is a central difference of ``log|H|`` along ``du`` at
fixed hyperparameters: two Hessians, which :mod:`pmctx.gum.curvature` builds in O(N).
Every term is evaluated at the mode already found, so one gradient costs two to four
Hessian evaluations and no Newton search.

Examples
--------
>>> import numpy as np
>>> from pmctx.gum import gum
>>> from pmctx.gum.evidence import log_evidence_gradient
>>> rng = np.random.default_rng(0)
>>> data = {"x": rng.uniform(0, 2, 40)}
>>> data["y"] = rng.poisson(np.exp(np.sin(3 * data["x"])))
>>> g = gum("y ~ f(x, lengthscale=0.5)", data, family="poisson")
>>> result = g.fit_laplace()
>>> grad = log_evidence_gradient(g.design, result, [("f_x", "lengthscale")])
>>> grad.shape
(1,)
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import cho_solve, solve_triangular

from pmctx.gum.grouped import grouped_cov
from pmctx.gum.laplace import _pieces
from pmctx.gum.terms import GP

__all__ = ["cov_derivative", "log_evidence_gradient"]

_DIRECTIONAL_STEP = 1e-4


def cov_derivative(fn, key: str) -> np.ndarray:
    """``d K / d log(key)`` of a function's prior covariance (m x m, with its jitter).

    Parameters
    ----------
    fn : pmctx.gum.design.FunctionDesign
        A function with a prior covariance.
    key : {"variance", "sd", "lengthscale", "period"}
        The hyperparameter.

    Returns
    -------
    numpy.ndarray (m, m)
        Derivative of the prior covariance in the log hyperparameter.
    """
    K = fn.prior_cov()
    if key in ("variance", "sd"):
        return K * (1.0 if key == "variance" else 2.0)
    if not isinstance(fn.leaf, GP):
        raise ValueError(f"{fn.name!r} has no hyperparameter {key!r}.")
    if key == "period":
        return _central_difference(fn, key)
    if key != "lengthscale":
        raise ValueError(f"{fn.name!r} has no hyperparameter {key!r}.")
    dK = _lengthscale_derivative(fn)
    return dK if fn.levels is None else grouped_cov(dK, fn.n_levels)


def _lengthscale_derivative(fn) -> np.ndarray:
    """``d K / d log(lengthscale)`` on one level's support."""
    ell, variance = fn.hyper["lengthscale"], fn.hyper["variance"]
    r = np.abs(fn.support[:, None] - fn.support[None, :])
    kind = fn.leaf.kernel
    if kind == "se":
        return variance * np.exp(-0.5 * (r / ell) ** 2) * (r / ell) ** 2
    if kind == "periodic":
        s2 = np.sin(np.pi * r / fn.hyper["period"]) ** 2
        return variance * np.exp(-2.0 * s2 / ell**2) * 4.0 * s2 / ell**2
    s = np.sqrt(3.0 if kind == "matern32" else 5.0) * r / ell
    if kind == "matern32":
        return variance * s**2 * np.exp(-s)
    return variance * s**2 * (1.0 + s) / 3.0 * np.exp(-s)  # matern52


def _central_difference(fn, key: str, step: float = 1e-5) -> np.ndarray:
    value = fn.hyper[key]
    try:
        fn.hyper[key] = value * np.exp(step)
        up = fn.prior_cov()
        fn.hyper[key] = value * np.exp(-step)
        down = fn.prior_cov()
    finally:
        fn.hyper[key] = value
    return (up - down) / (2.0 * step)


def _psi_grad_logdet(design, u: np.ndarray, exact: bool):
    """Log joint, its gradient and log|H| at ``u`` (exact Hessian, or Fisher as the fit)."""
    ll, grad, fisher, hessian = _pieces(design, u)
    matrix = hessian if exact else fisher
    sign, logdet = np.linalg.slogdet(matrix)
    if sign <= 0:
        logdet = np.nan
    return float(ll.sum() - 0.5 * u @ u), grad, logdet


def _directional_logdet(design, u, direction, exact) -> float:
    size = np.linalg.norm(direction)
    if size == 0:
        return 0.0
    h = _DIRECTIONAL_STEP / size
    up = _psi_grad_logdet(design, u + h * direction, exact)[2]
    down = _psi_grad_logdet(design, u - h * direction, exact)[2]
    return (up - down) / (2.0 * h)


def _dispersion_gradient(design, result, hessian_inv_apply, step=1e-4) -> float:
    """Partials at fixed ``u`` by central differences in log(dispersion)."""
    u, original = result.u_map, design.noise_sd
    parts = []
    try:
        for sign in (1.0, -1.0):
            design.noise_sd = original * np.exp(sign * step)
            parts.append(_psi_grad_logdet(design, u, result.exact_hessian))
    finally:
        design.noise_sd = original
    d_psi = (parts[0][0] - parts[1][0]) / (2 * step)
    d_grad = (parts[0][1] - parts[1][1]) / (2 * step)
    d_logdet = (parts[0][2] - parts[1][2]) / (2 * step)
    shift = hessian_inv_apply(d_grad)
    return (
        d_psi - 0.5 * d_logdet - 0.5 * _directional_logdet(design, u, shift, result.exact_hessian)
    )


def log_evidence_gradient(design, result, pairs) -> np.ndarray:
    """Gradient of ``result.log_evidence`` with respect to the log hyperparameters ``pairs``.

    Parameters
    ----------
    design : GumDesign
        At the hyperparameters ``result`` was fitted under.
    result : LaplaceResult
        The Laplace fit (mode and Hessian) at the current hyperparameters.
    pairs : list of (function, key)
        As :func:`pmctx.gum.hyper.free_hyperparameters` lists them (``("noise_sd",
        "noise_sd")`` for the dispersion).

    Returns
    -------
    ndarray of shape (len(pairs),)
    """
    u, chol = result.u_map, result.chol
    hessian_inv = cho_solve((chol, True), np.eye(len(u)))

    def hessian_inv_apply(vector):
        return cho_solve((chol, True), vector)

    gradient = np.zeros(len(pairs))
    for index, (name, key) in enumerate(pairs):
        if name == "noise_sd":
            gradient[index] = _dispersion_gradient(design, result, hessian_inv_apply)
            continue
        fn, slot = design.functions[name], design.slices[name]
        if fn.n_free == 0:
            continue
        dK_free = fn.P @ cov_derivative(fn, key) @ fn.P.T
        S = solve_triangular(fn.L, solve_triangular(fn.L, dK_free, lower=True).T, lower=True)
        S = 0.5 * (S + S.T)
        u_f = u[slot]
        shift = np.zeros(len(u))
        shift[slot] = S @ u_f
        shift = hessian_inv_apply(shift)
        gradient[index] = (
            0.5 * u_f @ S @ u_f
            - 0.5 * np.trace(S)
            + 0.5 * np.sum(hessian_inv[slot, slot] * S)
            - 0.5 * _directional_logdet(design, u, shift, result.exact_hessian)
        )
    return gradient
