"""Covariance functions of the GP priors (numpy, float64).

Each kernel maps two 1-D input vectors to a covariance matrix. ``variance`` is the prior
variance beta^2 of the function values; ``lengthscale`` sets smoothness; the periodic kernel
also takes ``period`` (seed 002, section 3.1: ``beta^2 exp(-2 sin^2(pi |x-x'| / T) / l^2)``).

Examples
--------
>>> import numpy as np
>>> from pmctx.gum.kernels import kernel_matrix
>>> K = kernel_matrix("se", np.array([0.0, 1.0]), np.array([0.0, 1.0]), lengthscale=1.0)
>>> np.round(K, 4)
array([[1.    , 0.6065],
       [0.6065, 1.    ]])
"""

from __future__ import annotations

import numpy as np

__all__ = ["KERNELS", "kernel_matrix"]

KERNELS = ("se", "matern32", "matern52", "periodic")


def _distance(x1: np.ndarray, x2: np.ndarray) -> np.ndarray:
    return np.abs(np.asarray(x1, float)[:, None] - np.asarray(x2, float)[None, :])


def kernel_matrix(
    kind: str,
    x1: np.ndarray,
    x2: np.ndarray,
    *,
    lengthscale,
    variance=1.0,
    period=None,
    xp=np,
):
    """Covariance matrix ``K[a, b] = k(x1[a], x2[b])``.

    Parameters
    ----------
    kind : {"se", "matern32", "matern52", "periodic"}
        Squared exponential, Matérn 3/2, Matérn 5/2 or the standard periodic kernel.
    x1, x2 : ndarray of shape (n1,), (n2,)
        Inputs.
    lengthscale, variance : float
        Hyperparameters (both positive); symbolic tensors when ``xp`` is ``pytensor.tensor``.
    period : float, optional
        Period ``T`` of the periodic kernel (required there, ignored otherwise).
    xp : module, default numpy
        Array namespace for ``exp``/``sin``/``sqrt`` (``pytensor.tensor`` builds a graph, so
        NUTS can sample the hyperparameters).

    Returns
    -------
    ndarray of shape (n1, n2)
    """
    r = _distance(x1, x2)
    if kind == "se":
        return variance * xp.exp(-0.5 * (r / lengthscale) ** 2)
    if kind == "matern32":
        s = np.sqrt(3.0) * r / lengthscale
        return variance * (1.0 + s) * xp.exp(-s)
    if kind == "matern52":
        s = np.sqrt(5.0) * r / lengthscale
        return variance * (1.0 + s + s**2 / 3.0) * xp.exp(-s)
    if kind == "periodic":
        if period is None:
            raise ValueError("The periodic kernel needs a period, got None. Pass period=...")
        return variance * xp.exp(-2.0 * xp.sin(np.pi * r / period) ** 2 / lengthscale**2)
    raise ValueError(f"kernel must be one of {KERNELS}, got {kind!r}.")
