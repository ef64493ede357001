"""Prior draws of the low-rank von Mises orientation map and noisy observations (and SBC).

The map's prior is a loopy MRF without a direct sampler: :func:`sample_prior` (and the SBC
simulator :func:`simulate`) run ``n_sweeps`` augmented Gibbs sweeps from uniform angles to
approximate a draw (use enough sweeps for the grid and ``kappa``; small maps mix in tens).
:func:`noisy_observations` adds von Mises noise around the doubled angles with ``kappa_obs``
and sets a fraction ``missing`` to NaN. The SBC truth holds kappa-dependent, label-free
statistics of the map: its ``smoothness`` (mean cos of neighbouring doubled-angle
differences) and ``cos_o`` / ``sin_o`` of the doubled angle at the centre node.

Examples
--------
>>> data, truth = simulate(0, shape=(5, 5), n_sweeps=5)
>>> data["theta"].shape, sorted(truth)
((5, 5), ['cos_o', 'sin_o', 'smoothness'])
"""

from __future__ import annotations

import warnings

import numpy as np

from pmctx.exceptions import PmctxWarning
from pmctx.validation import as_rng, check_int, check_positive, check_probability
from pmctx.vonmises import SWEEPS
from pmctx.vonmises.maps import o_to_theta, smoothness, theta_to_o

__all__ = ["invariants", "noisy_observations", "sample_prior", "simulate"]


def sample_prior(
    shape,
    *,
    kappa: float = 5.0,
    rank: int = 5,
    n_sweeps: int = 50,
    n_maps: int | None = None,
    random_seed=None,
):
    """Draw maps from the prior by ``n_sweeps`` Gibbs sweeps from uniform random angles.

    The prior of a loopy MRF has no direct sampler; like the seed note (20 sweeps) this runs
    the chain to approximate equilibrium. Returns doubled angles ``o`` of shape ``(M, N)``,
    or ``(n_maps, M, N)`` when ``n_maps`` is given (independent chains). An interrupted run
    (Ctrl-C) returns the maps finished so far.

    Parameters
    ----------
    shape : tuple of int
        Grid shape ``(M, N)``.
    kappa : float, default 5.0
        Smoothing concentration of the edge potentials (> 0).
    rank : int, default 5
        Rank ``R`` of the edge potential (>= 1).
    n_sweeps : int, default 50
        Gibbs sweeps from the uniform start (more sweeps, closer to the prior).
    n_maps : int, optional
        Number of independent maps; omitted, a single map is returned.
    random_seed : int or numpy.random.Generator, optional
        Random seed or generator.

    Returns
    -------
    numpy.ndarray
        Doubled angles ``o`` in ``[-pi, pi)``: shape ``(M, N)``, or ``(n_maps, M, N)``.

    Examples
    --------
    >>> o = sample_prior((20, 20), kappa=5.0, rank=5, n_sweeps=5, random_seed=0)
    >>> o.shape
    (20, 20)
    """
    kappa = check_positive(kappa, "kappa")
    rank = check_int(rank, "rank", minimum=1)
    n_rows, n_cols = (check_int(s, "shape", minimum=1) for s in shape)
    n_sweeps = check_int(n_sweeps, "n_sweeps", minimum=1)
    sweep = SWEEPS["augmented"]
    rng = as_rng(random_seed)
    field = np.zeros((n_rows, n_cols, 2))
    maps = []
    try:
        for _ in range(1 if n_maps is None else check_int(n_maps, "n_maps", minimum=1)):
            o = rng.uniform(-np.pi, np.pi, size=(n_rows, n_cols))
            for _ in range(n_sweeps):
                o = sweep(o, field, kappa, rank, rng)
            maps.append(o)
    except KeyboardInterrupt:
        warnings.warn(
            f"Interrupted: returning the {len(maps)} finished map(s).", PmctxWarning, stacklevel=2
        )
        if not maps:
            raise
    return maps[0] if n_maps is None else np.stack(maps)


def noisy_observations(theta, *, kappa_obs: float, missing: float, random_seed=None):
    """Corrupt orientations: von Mises noise on ``2 theta`` and a fraction set missing (NaN).

    Parameters
    ----------
    theta : array_like
        True orientations in ``[0, pi)``.
    kappa_obs : float
        Concentration (> 0) of the von Mises noise on the doubled angle ``2 theta``.
    missing : float
        Probability that a node is set missing (NaN).
    random_seed : int or numpy.random.Generator, optional
        Random seed or generator.

    Returns
    -------
    numpy.ndarray
        Noisy orientations in ``[0, pi)`` with NaN at missing nodes, same shape as ``theta``.

    Examples
    --------
    >>> obs = noisy_observations(np.full((5, 5), 1.0), kappa_obs=50.0, missing=0.2, random_seed=0)
    >>> obs.shape, bool(np.isnan(obs).any())
    ((5, 5), True)
    """
    rng = as_rng(random_seed)
    o = rng.vonmises(theta_to_o(theta), check_positive(kappa_obs, "kappa_obs"))
    observed = o_to_theta(o)
    observed[rng.random(observed.shape) < missing] = np.nan
    return observed


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
    sweep = SWEEPS["augmented"]
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
    idata : xarray.DataTree
        A fit from :func:`pmctx.models.vonmises_map.reconstruct`.

    Returns
    -------
    dict
        Draws of the statistics by name.
    """
    o = idata.posterior["o"].values
    o = o.reshape(-1, *o.shape[2:])
    i, j = _centre(o.shape[1:])
    return {"cos_o": np.cos(o[:, i, j]), "sin_o": np.sin(o[:, i, j]), "smoothness": smoothness(o)}
