"""Prior draws of the low-rank von Mises orientation map and noisy observations (for SBC).

The map's prior is a loopy MRF without a direct sampler: like
:func:`pmctx.models.vonmises_map.sample_prior`, ``n_sweeps`` Gibbs sweeps from uniform angles
approximate a draw (use enough sweeps for the grid and ``kappa``; small maps mix in tens).
Observations are von Mises around the doubled angles with ``kappa_obs``, a fraction
``missing`` set to NaN. The truth holds kappa-dependent, label-free statistics of the map:
its ``smoothness`` (mean cos of neighbouring doubled-angle differences) and ``cos_o`` /
``sin_o`` of the doubled angle at the centre node.

Examples
--------
>>> data, truth = simulate(0, shape=(5, 5), n_sweeps=5)
>>> data["theta"].shape, sorted(truth)
((5, 5), ['cos_o', 'sin_o', 'smoothness'])
"""

from __future__ import annotations

import numpy as np

from pmctx.validation import check_choice, check_int, check_positive, check_probability
from pmctx.vonmises import SWEEPS
from pmctx.vonmises.maps import smoothness

__all__ = ["invariants", "simulate"]


def _centre(shape) -> tuple[int, int]:
    return shape[0] // 2, shape[1] // 2


def simulate(
    random_seed=None,
    *,
    shape=(6, 6),
    kappa: float = 2.0,
    kappa_obs: float = 2.0,
    rank: int = 3,
    missing: float = 0.2,
    n_sweeps: int = 100,
    sampler: str = "augmented",
):
    """One prior map and its noisy observations: ``(data, truth)``.

    ``data`` holds ``theta`` (observed orientations in ``[0, pi)``, NaN where missing) and
    ``kappa``, ``kappa_obs``, ``rank`` for the fit.

    Parameters
    ----------
    random_seed : int or numpy.random.Generator, optional
        Random seed or generator.
    shape : tuple of int, default (6, 6)
        Grid shape.
    kappa : float, default 2.0
        Smoothing concentration.
    kappa_obs : float, default 2.0
        Observation concentration.
    rank : int, default 3
        Rank of the potential.
    missing : float, default 0.2
        Probability that a node is missing.
    n_sweeps : int, default 100
        Prior sweeps.
    sampler : str, default "augmented"
        Sweep kernel.

    Returns
    -------
    data : dict
        ``theta`` and the fit's options.
    truth : dict
        The ranked statistics of the true map.
    """
    rng = np.random.default_rng(random_seed)
    n_rows, n_cols = (check_int(s, "shape", minimum=2) for s in shape)
    kappa = check_positive(kappa, "kappa")
    kappa_obs = check_positive(kappa_obs, "kappa_obs")
    rank = check_int(rank, "rank", minimum=1)
    missing = check_probability(missing, "missing", closed=True)
    sweep = SWEEPS[check_choice(sampler, "sampler", list(SWEEPS))]
    o = rng.uniform(-np.pi, np.pi, size=(n_rows, n_cols))
    field = np.zeros((n_rows, n_cols, 2))
    for _ in range(check_int(n_sweeps, "n_sweeps", minimum=1)):
        o = sweep(o, field, kappa, rank, rng)
    observed = rng.vonmises(o, kappa_obs)
    theta = np.mod(observed, 2.0 * np.pi) / 2.0
    theta[rng.random(theta.shape) < missing] = np.nan
    i, j = _centre((n_rows, n_cols))
    truth = {
        "cos_o": float(np.cos(o[i, j])),
        "sin_o": float(np.sin(o[i, j])),
        "smoothness": smoothness(o),
    }
    return {"theta": theta, "kappa": kappa, "kappa_obs": kappa_obs, "rank": rank}, truth


def invariants(idata) -> dict:
    """Posterior draws of the statistics :func:`simulate` ranks (flattened over chains).

    Parameters
    ----------
    idata : arviz.InferenceData
        A fit from :func:`pmctx.models.vonmises_map.reconstruct`.

    Returns
    -------
    dict
        Draws of the statistics by name.
    """
    o = idata.posterior["o"].values
    o = o.reshape(-1, *o.shape[2:])
    i, j = _centre(o.shape[1:])
    edges = np.concatenate(
        [np.cos(np.diff(o, axis=1)).reshape(len(o), -1),
         np.cos(np.diff(o, axis=2)).reshape(len(o), -1)], axis=1
    )  # fmt: skip
    return {"cos_o": np.cos(o[:, i, j]), "sin_o": np.sin(o[:, i, j]), "smoothness": edges.mean(1)}
