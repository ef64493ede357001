"""Hilbert-space GP (HSGP) prior factors of GUM functions, from PyMC's ``pm.gp.HSGP``.

The exact GUM prior of a GP function on its support grid is ``theta = theta0 + Q z`` with
``Q = P^T chol(P K P^T)`` (:mod:`pmctx.gum.design`). The HSGP approximation replaces ``K`` by
``B B^T`` with ``B = phi diag(sqrt_psd)`` -- the Laplacian eigenfunctions ``phi`` on the grid
and the square-root spectral density of the kernel, both from PyMC's
``pm.gp.HSGP.prior_linearized`` (``pm.gp.HSGPPeriodic`` for the periodic kernel) -- and keeps
the identifiability constraint by projecting: ``theta = theta0 + P^T P B z``. This is the
exact constrained prior of the approximate GP (``P^T P f`` is ``f`` minus its constrained
component, as in seed 002 Appendix A), with ``z ~ N(0, I)`` of the basis size.

Why and when (``approximation="auto"`` of :func:`pmctx.gum.gum` uses it when lengthscales are
sampled and the data have :data:`HSGP_MIN_OBS` rows or more, for NUTS and ADVI; Laplace stays
exact): a smooth function
needs fewer basis coefficients than grid points (seed 002 section 3.1: 26-30 instead of 47
free coordinates for ``l = 0.1`` on [0, 2]), and with sampled lengthscales the graph needs
no Cholesky of the grid covariance, only the spectral density. The basis size is the
smallest one (over a few boundary factors ``c``) whose covariance is within ``tol``
(relative to the variance, maximum over the grid) of the exact kernel.

PyMC's ``HSGPPeriodic`` returns the *squared* coefficients ``q_j^2`` of the periodic kernel
``exp(-2 sin^2(pi r / T) / l^2)`` (they sum to one) and its ``prior`` multiplies the basis
by them directly; the covariance of that prior is not the kernel's (max error 0.9 on the
section 3.1 grid). Here the basis is multiplied by ``sqrt(q_j^2)``, which reproduces our
periodic kernel to 5e-6 with 30 frequencies.

Examples
--------
>>> import numpy as np
>>> from pmctx.gum import gum
>>> from pmctx.gum.hsgp import hsgp_factor
>>> x = np.linspace(0, 2, 200)
>>> g = gum("y ~ f(x, lengthscale=0.3, max_points=40)", {"x": x, "y": np.sin(3 * x)})
>>> fn = g.design.functions["f_x"]
>>> Q = hsgp_factor(fn, 20)
>>> Q.shape
(40, 20)
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
from pytensor.compile.mode import Mode

from pmctx.gum.kernels import kernel_matrix
from pmctx.gum.terms import GP

__all__ = [
    "HSGP_C",
    "HSGP_CS",
    "HSGP_MIN_OBS",
    "HSGP_TOL",
    "choose_n_basis",
    "hsgp_factor",
    "uses_hsgp",
]

#: Rows from which ``approximation="auto"`` samples GP terms through HSGP when lengthscales are
#: sampled: the exact prior's log density and gradient cost grows with N faster than HSGP's,
#: and from this size on HSGP is several times cheaper (figures on the docs' benchmarks page).
#: With *fixed* lengthscales the exact factor is a constant matrix and HSGP gains nothing, so
#: "auto" keeps the exact prior there.
HSGP_MIN_OBS = 2000
#: Boundary factor ``L = c * half-range`` of the non-periodic HSGP (default of hsgp_factor).
HSGP_C = 1.5
#: Boundary factors tried by :func:`choose_n_basis`.
HSGP_CS = (1.2, 1.5, 2.0, 2.5, 3.0, 4.0)
#: Largest covariance error (relative to the variance) accepted when choosing the basis size:
#: at 1e-3 the posterior mean of a 400-row SE fit sat 0.19 posterior sd from the exact GP, at
#: 1e-4 0.02 sd (tests/gum/test_gum_hsgp.py).
HSGP_TOL = 1e-4

#: Numeric evaluation of constant graphs (bases at fixed lengthscales): Python linker without
#: graph rewrites, which would cost most of a compiled evaluation (same values to 1e-10).
_NUMERIC = Mode(linker="py", optimizer=None)


def _evaluate(outputs):
    return pytensor.function([], outputs, mode=_NUMERIC)()


_COVARIANCES = {
    "se": pm.gp.cov.ExpQuad,
    "matern32": pm.gp.cov.Matern32,
    "matern52": pm.gp.cov.Matern52,
}


def uses_hsgp(fn) -> bool:
    """Whether a function can take the HSGP prior: an ungrouped GP on a grid of at least 4 points.

    Parameters
    ----------
    fn : pmctx.gum.design.FunctionDesign
        A function of the design.

    Returns
    -------
    bool
        False for grouped GPs ``f(x|g)`` (they keep their exact block prior over levels).
    """
    return (
        isinstance(fn.leaf, GP)
        and getattr(fn, "edges", None) is None
        and getattr(fn, "levels", None) is None
        and fn.support.size >= 4
    )


def _basis(fn, n_basis: int, lengthscale, c: float):
    """``phi diag(sqrt_psd)`` (grid x coefficients), symbolic in ``lengthscale``."""
    X = pt.as_tensor(np.asarray(fn.support, float)[:, None])
    variance = fn.hyper["variance"]
    if fn.leaf.kernel == "periodic":
        cov = pm.gp.cov.Periodic(1, period=fn.hyper["period"], ls=lengthscale)
        approx = pm.gp.HSGPPeriodic(m=int(n_basis), scale=1.0, cov_func=cov)
        (phi_cos, phi_sin), q2 = approx.prior_linearized(X)
        q = np.sqrt(variance) * pt.sqrt(q2)  # amplitudes: PyMC's q2 are variances
        return pt.concatenate([phi_cos * q, phi_sin[:, 1:] * q[1:]], axis=1)
    cov = variance * _COVARIANCES[fn.leaf.kernel](1, ls=lengthscale)
    approx = pm.gp.HSGP(m=[int(n_basis)], c=float(c), cov_func=cov)
    phi, sqrt_psd = approx.prior_linearized(X)
    return phi * sqrt_psd


def hsgp_factor(fn, n_basis: int, *, lengthscale=None, c: float = HSGP_C):
    """Prior factor ``P^T P phi diag(sqrt_psd)`` of ``fn`` (grid x coefficients).

    Parameters
    ----------
    fn : FunctionDesign
        A GP function (see :func:`uses_hsgp`).
    n_basis : int
        Eigenfunctions (non-periodic) or frequencies (periodic: ``2 n_basis - 1`` coefficients).
    lengthscale : tensor, optional
        A symbolic lengthscale (sampled hyperparameter): the factor is then a tensor; default:
        the function's current lengthscale, and a numpy array is returned.
    c : float
        Boundary factor of the non-periodic approximation.

    Returns
    -------
    numpy.ndarray or pytensor.tensor.TensorVariable
        The factor (grid points x coefficients); a tensor when ``lengthscale`` is symbolic.
    """
    symbolic = lengthscale is not None
    ell = lengthscale if symbolic else fn.hyper["lengthscale"]
    B = _basis(fn, n_basis, ell, c)
    projector = fn.P.T @ fn.P
    Q = pt.dot(pt.as_tensor(projector), B)
    return Q if symbolic else _evaluate(Q)


def _kernel_on_grid(fn) -> np.ndarray:
    return kernel_matrix(
        fn.leaf.kernel,
        fn.support,
        fn.support,
        lengthscale=fn.hyper["lengthscale"],
        variance=fn.hyper["variance"],
        period=fn.hyper.get("period"),
    )


def _columns(fn, n_basis: int, c: float) -> list[int]:
    """Columns of the basis of size ``largest`` that form the basis of size ``n_basis``: the
    eigenfunctions (and PyMC's frequencies) do not depend on the basis size, so a smaller basis
    is a column subset of a larger one (periodic: cosines ``0..n-1`` then sines ``1..n-1``)."""
    if fn.leaf.kernel != "periodic":
        return list(range(n_basis))
    largest = _largest(fn)
    return list(range(n_basis)) + [largest + j - 1 for j in range(1, n_basis)]


def _largest(fn) -> int:
    m = fn.support.size
    return (m + 1) // 2 if fn.leaf.kernel == "periodic" else m - 1


def covariance_error(fn, n_basis: int, *, c: float = HSGP_C, basis=None) -> float:
    """Largest ``|B B^T - K|`` on the grid, relative to the variance (before constraints).

    Parameters
    ----------
    fn : FunctionDesign
        A GP function (see :func:`uses_hsgp`).
    n_basis : int
        Basis size (see :func:`hsgp_factor`).
    c : float
        Boundary factor of the non-periodic approximation.
    basis : numpy.ndarray, optional
        The basis of the largest size (:func:`choose_n_basis` evaluates it once per ``c``);
        default: evaluated here for ``n_basis``.

    Returns
    -------
    float
        The largest absolute covariance error over the grid, divided by the variance.
    """
    if basis is None:
        B = _evaluate(_basis(fn, n_basis, fn.hyper["lengthscale"], c))
    else:
        B = basis[:, _columns(fn, n_basis, c)]
    return float(np.abs(B @ B.T - _kernel_on_grid(fn)).max() / fn.hyper["variance"])


def choose_n_basis(fn, *, tol: float = HSGP_TOL) -> tuple[int, float] | None:
    """``(basis size, boundary factor c)`` with the fewest coefficients whose covariance is
    within ``tol`` of the kernel on the grid (c from :data:`HSGP_CS`: long lengthscales need a
    far boundary), or None when it would need as many coordinates as the exact grid prior.

    The basis is evaluated once per ``c`` at its largest size and smaller sizes are its
    leading columns; one compiled function evaluates all ``c``.

    Parameters
    ----------
    fn : FunctionDesign
        A GP function (see :func:`uses_hsgp`).
    tol : float
        Largest covariance error allowed (see :func:`covariance_error`).

    Returns
    -------
    tuple of (int, float), or None
        ``(n_basis, c)``, or None when HSGP would not save coordinates.
    """
    periodic = fn.leaf.kernel == "periodic"
    largest = _largest(fn)
    best = None
    cs = (1.0,) if periodic else HSGP_CS
    if largest < 4:
        return None
    # one compiled function for the largest basis of every c (a compile per size took ~1 s)
    ell = fn.hyper["lengthscale"]
    bases = _evaluate([_basis(fn, largest, ell, c) for c in cs])
    for c, basis in zip(cs, bases):
        if best is not None and best[0] <= 4:
            break
        for n_basis in range(4, largest + 1, 2):
            if best is not None and n_basis >= best[0]:
                break
            if covariance_error(fn, n_basis, c=c, basis=basis) <= tol:
                best = (n_basis, c)
                break
    if best is None:
        return None
    coefficients = 2 * best[0] - 1 if periodic else best[0]
    return best if coefficients < fn.n_free else None
