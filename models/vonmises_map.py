"""Low-rank von Mises orientation map: a grid MRF of orientations in PyMC.

An M x N map of orientations ``theta`` in ``[0, pi)`` is modelled on the doubled angles
``o = 2 theta`` (orientation is pi-periodic). Neighbouring nodes are coupled by the rank-R
edge potential ``sum_{k=0}^{R} exp(kappa cos(o_a - phi_k)) exp(kappa cos(o_b - phi_k))``,
``phi_k = 2 pi k / (R + 1)``; node priors are flat (optionally von Mises); each observed node
has ``z ~ VonMises(o, kappa_obs)`` and missing observations are masked out. Inference is by
one of three exact Gibbs samplers (:mod:`pmctx.steps.vonmises`), through ``pm.sample``.

Examples
--------
>>> import numpy as np
>>> from pmctx.models.vonmises_map import build_model, o_to_theta, theta_to_o
>>> float(o_to_theta(theta_to_o(3.0)))
3.0
>>> model = build_model(np.zeros((2, 3)), kappa=2.0, kappa_obs=1.0, rank=3)
>>> sorted(model.named_vars)[:3]
['kappa', 'kappa_obs', 'mrf']
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pymc.distributions import transforms

from pmctx import PmctxWarning
from pmctx.io import save_figure, save_idata, write_summary
from pmctx.steps.registration import tag_block
from pmctx.steps.vonmises import (
    AugmentedVonMisesGibbs,
    ColumnFFBSVonMises,
    PointwiseVonMisesGibbs,
)
from pmctx.validation import (
    as_angle_array,
    as_binary_array,
    as_rng,
    check_choice,
    check_int,
    check_positive,
)
from pmctx.vonmises import SWEEPS
from pmctx.vonmises.maps import circular_moments, count_pinwheels, orientation_error, smoothness
from pmctx.vonmises.potentials import wrap_angle

__all__ = [
    "STEPS",
    "build_model",
    "demo",
    "fit",
    "noisy_observations",
    "o_to_theta",
    "posterior_orientation",
    "reconstruct",
    "sample_prior",
    "theta_to_o",
]

STEPS = {
    "augmented": AugmentedVonMisesGibbs,
    "ffbs": ColumnFFBSVonMises,
    "pointwise": PointwiseVonMisesGibbs,
}


def theta_to_o(theta):
    """Doubled angle ``o = 2 theta`` wrapped into ``[-pi, pi)`` (NaN stays NaN)."""
    return wrap_angle(2.0 * np.asarray(theta, dtype=np.float64))


def o_to_theta(o):
    """Orientation ``theta = o / 2`` in ``[0, pi)`` from a doubled angle ``o``."""
    return np.mod(np.asarray(o, dtype=np.float64), 2.0 * np.pi) / 2.0


def _check_hyper(kappa, kappa_obs, rank):
    kappa = check_positive(kappa, "kappa")
    if not isinstance(kappa_obs, pt.Variable):  # a user's random variable is used as it is
        kappa_obs = check_positive(kappa_obs, "kappa_obs")
    rank = check_int(rank, "rank", minimum=1)
    return kappa, kappa_obs, rank


def _observations(z, mask, shape):
    """Validate doubled-angle observations and their mask; NaN marks missing."""
    if z is None:
        if shape is None:
            raise ValueError("Pass observations z (an M x N array) or the grid shape=(M, N).")
        shape = (
            check_int(shape[0], "shape[0]", minimum=1),
            check_int(shape[1], "shape[1]", minimum=1),
        )
        return np.zeros(shape), np.zeros(shape, dtype=np.int64)
    z = as_angle_array(z, "z", ndim=2, allow_nan=True)
    if mask is None:
        mask = (~np.isnan(z)).astype(np.int64)
    else:
        mask = as_binary_array(mask, "mask", ndim=2)
        if mask.shape != z.shape:
            raise ValueError(
                f"mask must have the shape of z {z.shape}, got {mask.shape}. Pass one 0/1 entry "
                "per grid node (1 = observed)."
            )
        if np.isnan(z[mask == 1]).any():
            raise ValueError("z is NaN at nodes the mask marks as observed; set mask to 0 there.")
    return np.where(mask == 1, z, 0.0), mask


def build_model(
    z=None,
    *,
    mask=None,
    shape=None,
    kappa: float = 5.0,
    kappa_obs: float = 2.0,
    rank: int = 5,
    prior_mean=None,
    prior_kappa: float = 0.0,
) -> pm.Model:
    """Declare the orientation-map model as a ``pm.Model``.

    Parameters
    ----------
    z : array_like, shape (M, N), optional
        Observed doubled angles in ``[-pi, pi]`` (use :func:`theta_to_o` on orientations);
        NaN marks a missing node. Omit it (and give ``shape``) for the prior.
    mask : array_like of 0/1, shape (M, N), optional
        1 where a node is observed (default: where ``z`` is not NaN).
    shape : tuple of int, optional
        Grid shape when ``z`` is omitted.
    kappa : float, default 5.0
        Smoothing concentration of the edge potentials (> 0).
    kappa_obs : float, default 2.0
        Observation concentration (> 0).
    rank : int, default 5
        Rank ``R`` >= 1 (``R + 1`` modes).
    prior_mean, prior_kappa : array_like and float, optional
        Von Mises node prior on ``o`` (default flat: ``prior_kappa = 0``).

    Returns
    -------
    pm.Model
        Free variable ``o`` (dims row, col; circular transform), potential ``mrf``,
        observed ``z`` (dim obs) and deterministic ``theta = o / 2``. The hyperparameters
        live in data containers (``kappa``, ``kappa_obs``, ``rank``, ...) read by the steps.
    """
    kappa, kappa_obs, rank = _check_hyper(kappa, kappa_obs, rank)
    z_filled, mask = _observations(z, mask, shape)
    prior_kappa = check_positive(prior_kappa, "prior_kappa", allow_zero=True)
    n_rows, n_cols = z_filled.shape
    prior_mean = as_angle_array(
        np.broadcast_to(0.0 if prior_mean is None else prior_mean, (n_rows, n_cols)),
        "prior_mean",
        low=-2 * np.pi,
        high=2 * np.pi,
    )
    obs_rows, obs_cols = np.nonzero(mask)
    coords = {"row": np.arange(n_rows), "col": np.arange(n_cols), "obs": np.arange(obs_rows.size)}
    phases = 2.0 * np.pi * np.arange(rank + 1) / (rank + 1)
    with pm.Model(coords=coords) as model:
        kappa_d = pm.Data("kappa", kappa)
        if not isinstance(kappa_obs, pt.Variable):
            kappa_obs_d = pm.Data("kappa_obs", kappa_obs)
        elif getattr(kappa_obs, "name", None) == "kappa_obs":
            kappa_obs_d = kappa_obs
        else:  # the steps read kappa_obs by this name
            kappa_obs_d = pm.Deterministic("kappa_obs", kappa_obs)
        pm.Data("rank", rank)
        pm.Data("z_filled", z_filled, dims=("row", "col"))
        pm.Data("obs_mask", mask, dims=("row", "col"))
        prior_mean_d = pm.Data("prior_mean", prior_mean, dims=("row", "col"))
        prior_kappa_d = pm.Data("prior_kappa", prior_kappa)
        o = pm.Uniform(
            "o", -np.pi, np.pi, dims=("row", "col"), default_transform=transforms.circular
        )

        def log_psi(a, b):
            terms = kappa_d * (pt.cos(a[..., None] - phases) + pt.cos(b[..., None] - phases))
            return pm.math.logsumexp(terms, axis=-1)

        pm.Potential("mrf", log_psi(o[:, :-1], o[:, 1:]).sum() + log_psi(o[:-1, :], o[1:, :]).sum())
        pm.Potential("node_prior", (prior_kappa_d * pt.cos(o - prior_mean_d)).sum())
        if obs_rows.size:
            pm.VonMises(
                "z",
                mu=o[obs_rows, obs_cols],
                kappa=kappa_obs_d,
                observed=z_filled[obs_rows, obs_cols],
                dims="obs",
            )
        pm.Deterministic("theta", pt.mod(o, 2.0 * np.pi) / 2.0, dims=("row", "col"))
    # Plain pm.sample() gives the tagged angle grid to the exact block sampler, not NUTS.
    tag_block(AugmentedVonMisesGibbs.owns_block, o=o)
    return model


def sample_prior(
    shape,
    *,
    kappa: float = 5.0,
    rank: int = 5,
    n_sweeps: int = 50,
    n_maps: int | None = None,
    sampler: str = "augmented",
    seed=None,
):
    """Draw maps from the prior by ``n_sweeps`` Gibbs sweeps from uniform random angles.

    The prior of a loopy MRF has no direct sampler; like the seed note (20 sweeps) this runs
    the chain to approximate equilibrium. Returns doubled angles ``o`` of shape ``(M, N)``,
    or ``(n_maps, M, N)`` when ``n_maps`` is given (independent chains). An interrupted run
    (Ctrl-C) returns the maps finished so far.

    Examples
    --------
    >>> o = sample_prior((20, 20), kappa=5.0, rank=5, n_sweeps=5, seed=0)
    >>> o.shape
    (20, 20)
    """
    kappa, _, rank = _check_hyper(kappa, 1.0, rank)
    n_rows, n_cols = (check_int(s, "shape", minimum=1) for s in shape)
    n_sweeps = check_int(n_sweeps, "n_sweeps", minimum=1)
    sweep = SWEEPS[check_choice(sampler, "sampler", list(SWEEPS))]
    rng = as_rng(seed)
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


def reconstruct(
    theta_obs,
    *,
    mask=None,
    kappa: float = 5.0,
    kappa_obs: float = 2.0,
    rank: int = 5,
    sampler: str = "augmented",
    draws: int = 200,
    tune: int = 100,
    chains: int = 2,
    seed: int = 0,
    cores: int = 1,
    progressbar: bool = False,
):
    """Posterior of an orientation map given noisy, partially missing orientations.

    Parameters
    ----------
    theta_obs : array_like, shape (M, N)
        Observed orientations in ``[0, pi]``; NaN marks a missing node.
    mask : array_like of 0/1, optional
        1 where observed (default: not NaN).
    kappa, kappa_obs, rank :
        As in :func:`build_model` (``kappa_obs`` applies to doubled angles).
    sampler : {"augmented", "ffbs", "pointwise"}
        Step method (see :mod:`pmctx.steps.vonmises`).
    draws, tune, chains, seed, cores : int
        Passed to ``pm.sample``.

    Returns
    -------
    arviz.InferenceData
        With posterior ``o`` and ``theta``, ``log_likelihood`` of ``z`` and sampler stats.

    Examples
    --------
    >>> theta = np.full((4, 4), 0.5)
    >>> idata = reconstruct(theta, kappa=2.0, kappa_obs=4.0, rank=3, draws=20, tune=5,
    ...                     chains=1)
    >>> posterior_orientation(idata)[0].shape
    (4, 4)
    """
    theta_obs = as_angle_array(theta_obs, "theta_obs", low=0.0, high=np.pi, ndim=2, allow_nan=True)
    step_cls = STEPS[check_choice(sampler, "sampler", list(STEPS))]
    model = build_model(
        theta_to_o(theta_obs), mask=mask, kappa=kappa, kappa_obs=kappa_obs, rank=rank
    )
    # Start at the data (random angles where missing): far shorter burn-in than all zeros.
    start = theta_to_o(theta_obs)
    missing = np.isnan(start) if mask is None else np.asarray(mask) == 0
    start = np.where(missing, as_rng(seed).uniform(-np.pi, np.pi, size=start.shape), start)
    with model:
        step = step_cls([model["o"]])
        return pm.sample(
            draws=draws,
            initvals={"o": start},
            tune=tune,
            chains=chains,
            cores=cores,
            step=[step],
            random_seed=seed,
            progressbar=progressbar,
            compute_convergence_checks=False,
            idata_kwargs={"log_likelihood": "z" in model.named_vars},
        )


def posterior_orientation(idata):
    """Posterior mean orientation and circular standard deviation, each ``(M, N)``."""
    theta = idata.posterior["theta"].values
    return circular_moments(theta.reshape(-1, *theta.shape[2:]), axis=0)


def noisy_observations(theta, *, kappa_obs: float, missing: float, seed=None):
    """Corrupt orientations: von Mises noise on ``2 theta`` and a fraction set missing (NaN)."""
    rng = as_rng(seed)
    o = rng.vonmises(theta_to_o(theta), check_positive(kappa_obs, "kappa_obs"))
    observed = o_to_theta(o)
    observed[rng.random(observed.shape) < missing] = np.nan
    return observed


def _write_outputs(idata, out_dir: Path, stem: str, theta_obs, truth=None) -> list[Path]:
    from pmctx.vonmises.plots import plot_reconstruction, plot_smoothness_trace

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [save_idata(idata, out_dir / f"{stem}_idata.nc")]
    paths.append(write_summary(idata, out_dir / f"{stem}_summary.csv", var_names=["theta"]))
    mean, sd = posterior_orientation(idata)
    fig = plot_reconstruction(theta_obs, mean, sd, truth=truth)
    paths.append(save_figure(fig, out_dir / f"{stem}_reconstruction.png"))
    fig = plot_smoothness_trace(idata.sample_stats["smoothness"].values)
    paths.append(save_figure(fig, out_dir / f"{stem}_trace.png"))
    return paths


def demo(out_dir, *, quick: bool = False, seed: int = 0) -> list[Path]:
    """Sample a true map from the prior (R = 5, kappa = 5), corrupt it, reconstruct it.

    Writes the posterior (NetCDF), an ``az.summary`` CSV of ``theta``, a metrics CSV
    (orientation errors, pinwheels, smoothness), the reconstruction figure, a trace plot and
    prior samples for several ranks and concentrations. ``quick`` uses a 24 x 24 grid.
    """
    import matplotlib.pyplot as plt

    from pmctx.vonmises.plots import plot_orientation_map

    out_dir = Path(out_dir)
    size = 24 if quick else 50
    truth = o_to_theta(sample_prior((size, size), kappa=5.0, rank=5, n_sweeps=30, seed=seed))
    theta_obs = noisy_observations(truth, kappa_obs=2.0, missing=0.25, seed=seed + 1)
    idata = reconstruct(
        theta_obs,
        kappa=5.0,
        kappa_obs=2.0,
        rank=5,
        draws=100 if quick else 400,
        tune=30 if quick else 100,
        chains=2,
        seed=seed,
    )
    paths = _write_outputs(idata, out_dir, "vonmises_map", theta_obs, truth)
    mean, _ = posterior_orientation(idata)
    seen = ~np.isnan(theta_obs)
    rows = {
        "posterior_mean_error_all": orientation_error(mean, truth).mean(),
        "posterior_mean_error_observed": orientation_error(mean, truth)[seen].mean(),
        "raw_observation_error": orientation_error(theta_obs[seen], truth[seen]).mean(),
        "true_pinwheels": sum(count_pinwheels(truth)),
        "true_smoothness": smoothness(2 * truth),
    }
    metrics = out_dir / "vonmises_map_metrics.csv"
    metrics.write_text("metric,value\n" + "".join(f"{k},{v:.6g}\n" for k, v in rows.items()))
    paths.append(metrics)
    ranks, kappas = (3, 5, 10), (2.0, 5.0)
    fig, axes = plt.subplots(len(kappas), len(ranks), figsize=(3.0 * len(ranks), 3.2 * 2))
    for i, kappa in enumerate(kappas):
        for j, rank in enumerate(ranks):
            theta = o_to_theta(
                sample_prior(
                    (size, size),
                    kappa=kappa,
                    rank=rank,
                    n_sweeps=20 if quick else 50,
                    seed=seed + 10 * i + j,
                )
            )
            n_pos, n_neg = count_pinwheels(theta)
            plot_orientation_map(
                axes[i, j], theta, title=f"R={rank}, kappa={kappa:g}: {n_pos}+/{n_neg}- pinwheels"
            )
    paths.append(save_figure(fig, out_dir / "vonmises_map_prior_samples.png"))
    return paths


def _load_map(data_path: Path):
    data_path = Path(data_path)
    if not data_path.exists():
        raise FileNotFoundError(f"No data file at {data_path}.")
    options = {}
    if data_path.suffix == ".npz":
        with np.load(data_path, allow_pickle=False) as data:
            if "theta" not in data:
                raise ValueError(f"{data_path} must hold an array 'theta'; found {list(data)}.")
            theta = data["theta"]
            mask = data["mask"] if "mask" in data else None
            for key in ("kappa", "kappa_obs", "rank"):
                if key in data:
                    options[key] = data[key].item()
    elif data_path.suffix == ".csv":
        theta = np.genfromtxt(data_path, delimiter=",", dtype=np.float64)
        mask = None
    else:
        raise ValueError(f"Unsupported data file {data_path.name}: use .npz or .csv.")
    return theta, mask, options


def fit(data_path, *, draws: int, tune: int, chains: int, seed: int, out_dir) -> list[Path]:
    """Reconstruct an orientation map from a data file and write the outputs.

    The file is either ``.npz`` with ``theta`` (M x N orientations in radians within
    ``[0, pi]``, NaN where missing), optional ``mask`` (M x N, 1 = observed) and optional
    scalars ``kappa`` (default 5), ``kappa_obs`` (2) and ``rank`` (5); or a ``.csv`` matrix of
    orientations (empty cells or NaN for missing). Writes the posterior NetCDF, an
    ``az.summary`` CSV of ``theta`` and reconstruction/trace figures into ``out_dir``.
    """
    theta, mask, options = _load_map(data_path)
    idata = reconstruct(
        theta, mask=mask, draws=draws, tune=tune, chains=chains, seed=seed, **options
    )
    theta_obs = as_angle_array(theta, "theta", low=0.0, high=np.pi, allow_nan=True)
    if mask is not None:
        theta_obs = np.where(np.asarray(mask) == 1, theta_obs, np.nan)
    return _write_outputs(idata, Path(out_dir), "vonmises_map", theta_obs)
