"""Laplace approximation of a GUM: joint Newton MAP, Hessian covariance, log evidence.

The free vector ``u`` (non-centred function coordinates, offsets, intercept) has a standard
normal prior, so the log joint is ``psi(u) = sum_n log p(y_n | rho_n(u)) - |u|^2 / 2 + const``.
The MAP is found by damped Newton on all free parameters at once (the seed's alternating
per-factor updates are the block-coordinate version of the same fixed point): the exact
Hessian when it is positive definite, the Gauss-Newton/Fisher matrix ``J^T W J + I`` (always
positive definite) otherwise, with a backtracking line search. With ``H = -grad grad psi`` the
Laplace log evidence is

``log p(y) ~= log p(y | u*) - |u*|^2 / 2 - 1/2 log|H|``,

which for a single GP is the ERRATA-corrected eq. 15 of seed 002,
``-1/2 theta^T K^-1 theta + log p(y | theta) - 1/2 log|I + K W|`` (Sylvester's identity,
``H = I + Q^T W Q``). pymc-extras' ``fit_laplace`` gives MAP + Hessian draws but no evidence
and no cheap refits under changing hyperparameters, which the hyperparameter search needs.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from scipy.linalg import cho_factor, cho_solve, solve_triangular
from threadpoolctl import ThreadpoolController

from pmctx.exceptions import ConvergenceWarning
from pmctx.gum.curvature import derivatives
from pmctx.gum.design import GumDesign
from pmctx.gum.streams import stream
from pmctx.validation import as_rng

__all__ = ["LaplaceResult", "laplace_fit", "log_joint"]

_CONTROLLER: list = []


def _single_threaded_blas():
    # Inspecting the loaded BLAS libraries costs milliseconds: do it once per process.
    if not _CONTROLLER:
        _CONTROLLER.append(ThreadpoolController())
    return _CONTROLLER[0].limit(limits=1, user_api="blas")


@dataclass
class LaplaceResult:
    """MAP ``u_map``, negative Hessian ``hessian``, its Cholesky, and the log evidence.

    Parameters
    ----------
    u_map : numpy.ndarray (D,)
        The mode of the free vector.
    hessian : numpy.ndarray (D, D)
        Negative Hessian of the log joint at the mode.
    chol : numpy.ndarray (D, D)
        Its lower Cholesky factor.
    log_evidence : float
        Laplace log marginal likelihood.
    log_lik : float
        Log-likelihood at the mode.
    n_iter : int
        Newton iterations.
    converged : bool
        Whether the Newton decrement fell below the tolerance.
    exact_hessian : bool
        Whether ``hessian`` is the exact one (else Gauss-Newton).
    """

    u_map: np.ndarray
    hessian: np.ndarray
    chol: np.ndarray
    log_evidence: float
    log_lik: float
    n_iter: int
    converged: bool
    exact_hessian: bool

    @property
    def cov(self) -> np.ndarray:
        """Posterior covariance of ``u`` (inverse of ``hessian``)."""
        inv_chol = solve_triangular(self.chol, np.eye(len(self.u_map)), lower=True)
        return inv_chol.T @ inv_chol

    def draws(self, n: int, random_seed=None) -> np.ndarray:
        """Draws of ``u`` from ``N(u_map, hessian^-1)``, shape (n, D).

        Parameters
        ----------
        n : int
            Number of draws.
        random_seed : int, numpy.random.Generator or None, optional
            Seed or generator of the draws.

        Returns
        -------
        numpy.ndarray (n, D)
            The draws.
        """
        eps = as_rng(random_seed).standard_normal((n, len(self.u_map)))
        return self.u_map + solve_triangular(self.chol, eps.T, lower=True, trans="T").T


def _noise(design: GumDesign) -> float:
    return 1.0 if design.noise_sd is None else float(design.noise_sd)


def log_joint(design: GumDesign, u: np.ndarray) -> float:
    """``psi(u)``: log-likelihood plus standard-normal log prior (without its constant).

    Parameters
    ----------
    design : GumDesign
        The model's design.
    u : numpy.ndarray (D,)
        Free vector.

    Returns
    -------
    float
        The log joint, or ``-inf`` where it is not finite.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        rho = design.predictor(u)
        ll, _, _ = design.loglik(rho)
        value = float(ll.sum() - 0.5 * u @ u)
    return value if np.isfinite(value) else -np.inf


def _pieces(design: GumDesign, u: np.ndarray):
    values = design.factor_values(u)
    rho = np.zeros(design.n_obs)
    for i, row in enumerate(values):
        rho += (np.prod(row, axis=0) * design.masks[i]).sum(axis=1)
    if design.intercept:
        rho += design.intercept_sd * u[design.slices["intercept"].start]
    ll, d1, w = design.loglik(rho)
    grad, fisher, exact = derivatives(design, u, values, d1, w)
    return ll, grad, fisher, exact


def _cholesky(matrix):
    try:
        return np.linalg.cholesky(matrix)
    except np.linalg.LinAlgError:
        return None


def laplace_fit(design: GumDesign, **kwargs) -> LaplaceResult:
    """Laplace approximation of the posterior of ``design``'s free parameters.

    Parameters
    ----------
    design : GumDesign
        The model's numeric design.
    **kwargs
        Newton options:

        - ``u0`` (ndarray, optional): starting point (default: small random values, which
          break the saddle at zero of products of functions);
        - ``max_iter`` (int, default 200): Newton iterations;
        - ``tol`` (float, default 1e-8): convergence when the Newton decrement
          ``g^T H^-1 g / 2`` falls below ``tol``;
        - ``random_seed`` (int or Generator, default 0): seed of the random starting points
          (start ``s`` of an int seed ``random_seed + s``);
        - ``n_starts`` (int, default 4): random restarts when ``u0`` is not given; the MAP
          with the highest log joint wins. Products of functions have several local modes
          (e.g. a sign-flipped first factor whose offset the intercept absorbs), so a single
          Newton run is not enough.

    Returns
    -------
    LaplaceResult
        The best mode over the starts, its negative Hessian and the log evidence.
    """
    n_starts = kwargs.pop("n_starts", 4)
    random_seed = kwargs.pop("random_seed", 0)
    # The matrices are small (free parameters x free parameters): BLAS threads only contend.
    with _single_threaded_blas():
        if kwargs.get("u0") is not None or n_starts <= 1:
            return _laplace_fit(design, rng=stream(random_seed), **kwargs)
        fits = [
            _laplace_fit(design, rng=stream(random_seed, s), warn=False, **kwargs)
            for s in range(n_starts)
        ]
    best = max(fits, key=lambda fit: log_joint(design, fit.u_map))
    # A start that stalls away from the mode is what the other starts are for: warn only when
    # the mode returned was not converged.
    if not best.converged:
        _warn_not_converged(best.n_iter, stacklevel=3)
    return best


def _warn_not_converged(max_iter: int, stacklevel: int = 4) -> None:
    warnings.warn(
        f"Laplace Newton iterations did not converge in {max_iter} iterations.",
        ConvergenceWarning,
        stacklevel=stacklevel,
    )


def _laplace_fit(
    design: GumDesign,
    *,
    u0: np.ndarray | None = None,
    max_iter: int = 200,
    tol: float = 1e-8,
    rng: np.random.Generator,
    warn: bool = True,
) -> LaplaceResult:
    D = design.n_free
    u = 0.1 * rng.standard_normal(D) if u0 is None else np.array(u0, dtype=float)
    if u0 is None:
        # keep the random start where the likelihood is tame (weak priors have large scales)
        for _ in range(20):
            with np.errstate(over="ignore", invalid="ignore"):
                rho = design.predictor(u)
            if np.all(np.abs(rho - np.median(rho)) < 5.0):
                break
            u = 0.3 * u
    psi = log_joint(design, u)
    converged, n_iter = False, 0
    for n_iter in range(1, max_iter + 1):  # noqa: B007 - n_iter is reported
        ll, grad, fisher, exact = _pieces(design, u)
        chol = _cholesky(exact)
        matrix = exact if chol is not None else fisher
        factor = cho_factor(matrix, lower=True)
        step = cho_solve(factor, grad)
        decrement = 0.5 * grad @ step
        if decrement < tol:
            converged = True
            break
        t = 1.0
        while t > 1e-10:
            candidate = u + t * step
            new_psi = log_joint(design, candidate)
            if np.isfinite(new_psi) and new_psi >= psi + 1e-4 * t * grad @ step:
                break
            t *= 0.5
        else:
            break
        u, psi = candidate, new_psi
    ll, grad, fisher, exact = _pieces(design, u)
    chol = _cholesky(exact)
    exact_ok = chol is not None
    hessian = exact if exact_ok else fisher
    if not exact_ok:
        chol = np.linalg.cholesky(fisher)
    if warn and not converged:
        _warn_not_converged(max_iter)
    log_lik = float(ll.sum())
    log_evidence = log_lik - 0.5 * u @ u - float(np.log(np.diag(chol)).sum())
    return LaplaceResult(u, hessian, chol, log_evidence, log_lik, n_iter, converged, exact_ok)
