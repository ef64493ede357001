"""The Laplace vector and the ``pm.Model``'s coordinates: which GP terms HSGP samples, and maps.

The Laplace fit (:mod:`pmctx.gum.laplace`) works on the design's free vector ``u``: the
non-centred ``*_z`` values of every function, offset and intercept on their exact grids. The
``pm.Model`` that NUTS and ADVI sample has the same variables, except that GP terms sampled
through HSGP (:mod:`pmctx.gum.hsgp`) carry basis coefficients instead. These pure functions
decide which terms those are and carry a Laplace vector (and covariance) over to the model's
coordinates: starting points, NUTS's mass matrix, ADVI's starting scales, the whitened model.

Examples
--------
>>> import numpy as np
>>> from pmctx.gum import gum
>>> rng = np.random.default_rng(0)
>>> data = {"x": rng.uniform(0, 2, 30)}
>>> data["y"] = rng.poisson(np.exp(np.sin(data["x"])))
>>> g = gum("y ~ f(x, lengthscale=0.5)", data, family="poisson")
>>> hsgp_sizes(g.design, "exact", None, {})
{}
>>> mean, cov, slots = model_coordinates(g.design, {}, np.zeros(g.design.n_free))
>>> sorted(map_point(g.design, {}, mean))
['f_x_z', 'intercept_z']
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import block_diag

from pmctx.gum.families import DISPERSION
from pmctx.gum.hsgp import HSGP_MIN_OBS, HSGP_TOL, choose_n_basis, hsgp_factor, uses_hsgp
from pmctx.validation import check_choice

#: ``approximation`` of :func:`pmctx.gum.gum`: HSGP for NUTS/ADVI from ``HSGP_MIN_OBS`` rows
#: ("auto").
APPROXIMATIONS = ("auto", "exact", "hsgp")

__all__ = [
    "APPROXIMATIONS",
    "free_dispersion",
    "hsgp_sizes",
    "map_point",
    "model_coordinates",
    "split_point",
]


def free_dispersion(design) -> bool:
    """Whether the family has a dispersion that is not fixed (sampled by NUTS).

    Parameters
    ----------
    design : pmctx.gum.design.GumDesign
        The numeric design.

    Returns
    -------
    bool
        True for Gaussian or negative-binomial data without a fixed dispersion.
    """
    return design.family in DISPERSION and design.noise_sd is None


def hsgp_sizes(design, approximation: str, lengthscale_prior_sigma, cache: dict) -> dict:
    """``{function: (basis size, boundary factor c)}`` of the GP terms sampled through HSGP.

    With ``approximation="hsgp"``, or ``"auto"`` when lengthscales are sampled and the data
    have :data:`pmctx.gum.hsgp.HSGP_MIN_OBS` rows or more (with fixed lengthscales HSGP gave no
    speed-up at N=1,000-10,000); only terms whose basis within
    :data:`~pmctx.gum.hsgp.HSGP_TOL` is smaller than their grid.

    Parameters
    ----------
    design : pmctx.gum.design.GumDesign
        The numeric design.
    approximation : {"auto", "exact", "hsgp"}
        As :func:`pmctx.gum.gum` takes it.
    lengthscale_prior_sigma : float or None
        Log-normal prior sd of sampled lengthscales (None: fixed).
    cache : dict
        Basis-size searches by function and hyperparameters; filled in place, so that each is
        searched once.

    Returns
    -------
    dict
        Empty when every term keeps its exact prior.
    """
    check_choice(approximation, "approximation", APPROXIMATIONS)
    if approximation == "exact" or (
        approximation == "auto" and (lengthscale_prior_sigma is None or design.n_obs < HSGP_MIN_OBS)
    ):
        return {}
    sizes = {}
    for name, fn in design.functions.items():
        if not (uses_hsgp(fn) and fn.n_free):
            continue
        key = (name, fn.leaf.kernel, fn.support.size, fn.n_free, tuple(sorted(fn.hyper.items())))
        if key not in cache:  # searched once per function and hyperparameters
            cache[key] = choose_n_basis(fn)
        if cache[key] is not None:
            sizes[name] = cache[key]
    return sizes


def model_coordinates(design, hsgp: dict, u: np.ndarray, cov: np.ndarray | None = None):
    """Laplace vector ``u`` (and covariance) in the ``pm.Model``'s coordinates.

    The identity except for HSGP terms, whose ``z`` is the ridge (posterior-mean) match
    ``A Q u`` of the same function values, with the conditional covariance ``I - A Q_hsgp``
    added.

    Parameters
    ----------
    design : pmctx.gum.design.GumDesign
        The numeric design.
    hsgp : dict
        The HSGP terms (:func:`hsgp_sizes`).
    u : numpy.ndarray, shape (D,)
        A free vector of the design.
    cov : numpy.ndarray, shape (D, D), optional
        Its covariance.

    Returns
    -------
    mean : numpy.ndarray
        ``u`` in the model's coordinates.
    cov : numpy.ndarray or None
        The covariance there (None when ``cov`` is None).
    slots : dict
        ``{function, offset or "intercept": slice}`` of the model's vector.
    """
    blocks, nulls, slots = [], [], {}
    start = 0
    for key, slot in design.slices.items():
        if key in hsgp:
            fn = design.functions[key]
            n_basis, c = hsgp[key]
            Q_h = hsgp_factor(fn, n_basis, c=c)
            # z | theta of a regression with noise HSGP_TOL * variance (the approximation's
            # own error): ridge mean, covariance lam (Q_h^T Q_h + lam I)^-1 = I - A Q_h
            lam = HSGP_TOL * fn.hyper["variance"]
            A = np.linalg.solve(Q_h.T @ Q_h + lam * np.eye(Q_h.shape[1]), Q_h.T)
            blocks.append(A @ fn.Q)
            nulls.append(np.eye(Q_h.shape[1]) - A @ Q_h)
        else:
            width = slot.stop - slot.start
            blocks.append(np.eye(width))
            nulls.append(np.zeros((width, width)))
        slots[key] = slice(start, start + blocks[-1].shape[0])
        start += blocks[-1].shape[0]
    T = block_diag(*blocks)
    mean = T @ u
    cov_model = None if cov is None else T @ cov @ T.T + block_diag(*nulls)
    return mean, cov_model, slots


def map_point(design, hsgp: dict, u: np.ndarray) -> dict:
    """Initial-value dict of the ``pm.Model`` at free vector ``u`` of the design.

    Parameters
    ----------
    design : pmctx.gum.design.GumDesign
        The numeric design.
    hsgp : dict
        The HSGP terms (:func:`hsgp_sizes`).
    u : numpy.ndarray, shape (D,)
        A free vector of the design.

    Returns
    -------
    dict
        ``{value variable name: value}`` for the model's free variables.
    """
    u, _, slots = model_coordinates(design, hsgp, u)
    point = {f"{name}_z": u[slots[name]] for name, fn in design.functions.items() if fn.n_free}
    for key, value in slots.items():
        if key not in design.functions:
            point[f"{key}_z"] = u[value][0]
    return point


def split_point(design, hsgp: dict, v: np.ndarray) -> dict:
    """Split a vector already in the ``pm.Model``'s coordinates into its ``*_z`` variables.

    Parameters
    ----------
    design : pmctx.gum.design.GumDesign
        The numeric design.
    hsgp : dict
        The HSGP terms (:func:`hsgp_sizes`).
    v : numpy.ndarray
        Concatenated ``*_z`` values in the order of the model's coordinates.

    Returns
    -------
    dict
        ``{"<function>_z": array}``, scalars for one-value variables.
    """
    _, _, slots = model_coordinates(design, hsgp, np.zeros(design.n_free))
    return {
        f"{key}_z": v[slot] if key in design.functions else v[slot][0]
        for key, slot in slots.items()
    }
