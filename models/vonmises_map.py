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

from pmctx.convergence import report_after_fit
from pmctx.exceptions import PmctxWarning
from pmctx.io import save_figure
from pmctx.sampling import (
    SAMPLE_DEFAULTS,
    check_sample_kwargs,
    run_sampler,
)
from pmctx.steps.registration import tag_block
from pmctx.steps.vonmises import (
    AugmentedVonMisesGibbs,
    ClusterVonMisesGibbs,
    ColumnFFBSVonMises,
    KappaObsSlice,
    PointwiseVonMisesGibbs,
)
from pmctx.validation import (
    as_angle_array,
    as_binary_array,
    as_rng,
    check_choice,
    check_int,
    check_nonempty,
    check_positive,
)
from pmctx.vonmises import SWEEPS
from pmctx.vonmises.hyper import KAPPA_OBS_PRIOR as KAPPA_OBS_PRIOR_SHAPE_RATE
from pmctx.vonmises.maps import circular_moments, count_pinwheels, orientation_error, smoothness
from pmctx.vonmises.potentials import wrap_angle

__all__ = [
    "DEMO_KAPPAS",
    "STEPS",
    "build_model",
    "default_steps",
    "demo",
    "demo_data",
    "fit",
    "fit_data",
    "invariants",
    "noisy_observations",
    "o_to_theta",
    "posterior_orientation",
    "predict",
    "reconstruct",
    "sample_prior",
    "theta_to_o",
]

STEPS = {
    "augmented": AugmentedVonMisesGibbs,
    "cluster": ClusterVonMisesGibbs,
    "ffbs": ColumnFFBSVonMises,
    "pointwise": PointwiseVonMisesGibbs,
}


def default_steps(model, sampler: str = "augmented", *, n_sweeps: int | None = None) -> list:
    """The step list of a model from :func:`build_model`: the map sampler ``sampler`` for
    ``o`` (``n_sweeps`` kernel sweeps per draw), plus
    :class:`~pmctx.steps.vonmises.KappaObsSlice` when ``kappa_obs="prior"``.
    Call it inside the model context.

    Parameters
    ----------
    model : pymc.Model
        A model returned by :func:`build_model`.
    sampler : {"augmented", "cluster", "ffbs", "pointwise"}, default "augmented"
        Step method for the angle grid ``o`` (keys of :data:`STEPS`).
    n_sweeps : int, optional
        Kernel sweeps of ``o`` per stored draw; default: the step's ``default_n_sweeps``
        (8 for ``"augmented"`` and ``"cluster"``, 1 for the others).

    Returns
    -------
    list of pymc.step_methods.BlockedStep
        The map step, followed by a ``KappaObsSlice`` when ``kappa_obs`` is a random variable.

    Examples
    --------
    >>> import numpy as np
    >>> model = build_model(np.zeros((2, 3)), kappa_obs="prior", rank=3)
    >>> with model:
    ...     steps = default_steps(model, "pointwise")
    >>> [type(step).__name__ for step in steps]
    ['PointwiseVonMisesGibbs', 'KappaObsSlice']
    """
    step_class = STEPS[check_choice(sampler, "sampler", list(STEPS))]
    if n_sweeps is not None:
        n_sweeps = check_int(n_sweeps, "n_sweeps", minimum=1)
    steps = [step_class([model["o"]], n_sweeps=n_sweeps)]
    if model["kappa_obs"] in model.free_RVs:
        steps.append(KappaObsSlice())
    return steps


def theta_to_o(theta):
    """Doubled angle ``o = 2 theta`` wrapped into ``[-pi, pi)`` (NaN stays NaN).

    Parameters
    ----------
    theta : array_like
        Orientations in radians (period pi); NaN allowed.

    Returns
    -------
    numpy.ndarray
        Doubled angles ``2 theta`` wrapped into ``[-pi, pi)``, float64, same shape.

    Examples
    --------
    >>> theta_to_o([0.0, np.pi / 4, np.pi / 2]).round(3).tolist()
    [0.0, 1.571, -3.142]
    """
    return wrap_angle(2.0 * np.asarray(theta, dtype=np.float64))


def o_to_theta(o):
    """Orientation ``theta = o / 2`` in ``[0, pi)`` from a doubled angle ``o``.

    Parameters
    ----------
    o : array_like
        Doubled angles in radians (any real values; period 2 pi).

    Returns
    -------
    numpy.ndarray
        Orientations ``(o mod 2 pi) / 2`` in ``[0, pi)``, float64, same shape.

    Examples
    --------
    >>> o_to_theta([-np.pi / 2, np.pi]).round(3).tolist()
    [2.356, 1.571]
    """
    return np.mod(np.asarray(o, dtype=np.float64), 2.0 * np.pi) / 2.0


def _check_hyper(kappa, kappa_obs, rank):
    kappa = check_positive(kappa, "kappa")
    if isinstance(kappa_obs, str):
        if kappa_obs != "prior":
            raise ValueError(f"kappa_obs must be a positive number or 'prior'; got {kappa_obs!r}.")
    elif not isinstance(kappa_obs, pt.Variable):  # a user's random variable is used as it is
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
    z = check_nonempty(as_angle_array(z, "z", ndim=2, allow_nan=True), "z", unit="grid row")
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
    signal=None,
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
    kappa_obs : float or "prior", default 2.0
        Observation concentration (> 0) on doubled angles; ``"prior"`` makes it a random
        variable with the documented ``Gamma(2, 0.25)`` prior
        (:data:`pmctx.vonmises.hyper.KAPPA_OBS_PRIOR`), updated exactly by
        :class:`~pmctx.steps.vonmises.KappaObsSlice`.
    rank : int, default 5
        Rank ``R`` >= 1 (``R + 1`` modes).
    prior_mean, prior_kappa : array_like and float, optional
        Von Mises node prior on ``o`` (default flat: ``prior_kappa = 0``).
    signal : array_like, shape (M, N), optional
        Known relative signal strength per node (> 0, e.g. response amplitude): the
        observation at a node has concentration ``signal * kappa_obs`` (default 1).

    Returns
    -------
    pm.Model
        Free variable ``o`` (dims row, col; circular transform), potential ``mrf``,
        observed ``z`` (dim obs) and deterministic ``theta = o / 2``. The hyperparameters
        live in data containers (``kappa``, ``kappa_obs``, ``rank``, ...) read by the steps.

    Examples
    --------
    >>> model = build_model(np.array([[0.1, np.nan], [0.3, 0.4]]), kappa=2.0, rank=3)
    >>> model.free_RVs
    [o]
    >>> int(model["obs_mask"].get_value().sum())
    3
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
    signal = np.ones((n_rows, n_cols)) if signal is None else np.asarray(signal, np.float64)
    if signal.shape != (n_rows, n_cols) or not np.all(np.isfinite(signal) & (signal > 0)):
        raise ValueError(
            f"signal must be a finite positive ({n_rows}, {n_cols}) array (one relative "
            f"concentration per node); got shape {signal.shape}. Omit it for uniform noise."
        )
    obs_rows, obs_cols = np.nonzero(mask)
    coords = {"row": np.arange(n_rows), "col": np.arange(n_cols), "obs": np.arange(obs_rows.size)}
    phases = 2.0 * np.pi * np.arange(rank + 1) / (rank + 1)
    with pm.Model(coords=coords) as model:
        kappa_d = pm.Data("kappa", kappa)
        if isinstance(kappa_obs, str):  # "prior", checked above
            kappa_obs_d = pm.Gamma("kappa_obs", *KAPPA_OBS_PRIOR_SHAPE_RATE)
        elif not isinstance(kappa_obs, pt.Variable):
            kappa_obs_d = pm.Data("kappa_obs", kappa_obs)
        elif getattr(kappa_obs, "name", None) == "kappa_obs":
            kappa_obs_d = kappa_obs
        else:  # the steps read kappa_obs by this name
            kappa_obs_d = pm.Deterministic("kappa_obs", kappa_obs)
        signal_d = pm.Data("signal", signal, dims=("row", "col"))
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
                kappa=kappa_obs_d * signal_d[obs_rows, obs_cols],
                observed=z_filled[obs_rows, obs_cols],
                dims="obs",
            )
        pm.Deterministic("theta", pt.mod(o, 2.0 * np.pi) / 2.0, dims=("row", "col"))
    # Plain pm.sample() gives the tagged angle grid to the exact block sampler, not NUTS.
    tag_block(AugmentedVonMisesGibbs.owns_block, o=o)
    if isinstance(kappa_obs, str):  # its Gamma prior is the one KappaObsSlice assumes
        tag_block(KappaObsSlice.owns_block, kappa_obs=kappa_obs_d)
    return model


def sample_prior(
    shape,
    *,
    kappa: float = 5.0,
    rank: int = 5,
    n_sweeps: int = 50,
    n_maps: int | None = None,
    sampler: str = "augmented",
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
    sampler : {"augmented", "cluster", "ffbs", "pointwise"}, default "augmented"
        Sweep kernel (:data:`pmctx.vonmises.SWEEPS`).
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
    kappa, _, rank = _check_hyper(kappa, 1.0, rank)
    n_rows, n_cols = (check_int(s, "shape", minimum=1) for s in shape)
    n_sweeps = check_int(n_sweeps, "n_sweeps", minimum=1)
    sweep = SWEEPS[check_choice(sampler, "sampler", list(SWEEPS))]
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


def reconstruct(
    theta_obs,
    *,
    mask=None,
    kappa: float = 5.0,
    kappa_obs: float = 2.0,
    rank: int = 5,
    sampler: str = "augmented",
    draws: int = SAMPLE_DEFAULTS["draws"],
    tune: int = SAMPLE_DEFAULTS["tune"],
    chains: int = SAMPLE_DEFAULTS["chains"],
    cores: int | None = SAMPLE_DEFAULTS["cores"],
    random_seed=SAMPLE_DEFAULTS["random_seed"],
    progressbar: bool | None = SAMPLE_DEFAULTS["progressbar"],
    idata_kwargs: dict | None = SAMPLE_DEFAULTS["idata_kwargs"],
    posterior_predictive: bool = True,
    check_convergence: bool = True,
    n_sweeps: int | None = None,
):
    """Posterior of an orientation map given noisy, partially missing orientations.

    Every chain starts at the data with its own uniform random angles at the missing
    nodes: overdispersed starts, so that chains that settle on different pinwheel layouts
    show up in R-hat of theta and of the pinwheel count.

    Parameters
    ----------
    theta_obs : array_like, shape (M, N)
        Observed orientations in ``[0, pi]``; NaN marks a missing node.
    mask : array_like of 0/1, optional
        1 where observed (default: not NaN).
    kappa, kappa_obs, rank :
        As in :func:`build_model` (``kappa_obs`` applies to doubled angles).
    sampler : {"augmented", "cluster", "ffbs", "pointwise"}
        Step method (see :mod:`pmctx.steps.vonmises`).
    n_sweeps : int, optional
        Kernel sweeps per stored draw (thinning inside the step); default: the step's
        ``default_n_sweeps`` (8 for ``"augmented"`` and ``"cluster"``: about 6 times the CPU
        per stored draw of one sweep and 2.8 times theta's ESS per CPU second on the demo
        data). Chains that disagree on the pinwheel layout need more sweeps in total, not
        more stored draws.
    draws, tune, chains, cores, random_seed, progressbar, idata_kwargs
        As in ``pm.sample``, with its defaults.
    posterior_predictive : bool, default True
        Add the ``posterior_predictive`` group (observed ``z`` redrawn per draw) for
        ``az.plot_ppc``; :func:`predict` gives predictive observations at missing nodes.
    check_convergence : bool, default True
        Warn :class:`pmctx.ConvergenceWarning` when theta (circular R-hat/ESS on cos and
        sin), smoothness or the pinwheel count has not converged.

    Returns
    -------
    arviz.InferenceData
        With posterior ``o`` and ``theta``, ``log_likelihood`` of ``z`` and sampler stats.

    Examples
    --------
    >>> theta = np.full((4, 4), 0.5)
    >>> idata = reconstruct(theta, kappa=2.0, kappa_obs=4.0, rank=3, draws=20, tune=5,
    ...                     chains=1, check_convergence=False)
    >>> posterior_orientation(idata)[0].shape
    (4, 4)
    """
    check_sample_kwargs(draws=draws, tune=tune, chains=chains, cores=cores)
    theta_obs = as_angle_array(theta_obs, "theta_obs", low=0.0, high=np.pi, ndim=2, allow_nan=True)
    check_nonempty(theta_obs, "theta_obs", unit="grid row")
    check_choice(sampler, "sampler", list(STEPS))
    model = build_model(
        theta_to_o(theta_obs), mask=mask, kappa=kappa, kappa_obs=kappa_obs, rank=rank
    )
    if "z" not in model.named_vars:
        raise ValueError(
            f"theta_obs: every one of its {theta_obs.size} nodes is missing (NaN or mask 0), so "
            "the posterior would be the prior. Pass at least one observed orientation, or draw "
            "prior maps with sample_prior."
        )
    # Start at the data (far shorter burn-in than all zeros), each chain with its own random
    # angles where missing (overdispersed, so R-hat can see different pinwheel layouts).
    data = theta_to_o(theta_obs)
    missing = np.isnan(data) if mask is None else np.asarray(mask) == 0
    start_rng = as_rng(random_seed)
    initvals = [
        {"o": np.where(missing, start_rng.uniform(-np.pi, np.pi, size=data.shape), data)}
        for _ in range(check_int(chains, "chains", minimum=1))
    ]
    with model:
        steps = default_steps(model, sampler, n_sweeps=n_sweeps)
    idata = run_sampler(
        model,
        step=steps,
        initvals=initvals,
        draws=draws,
        tune=tune,
        chains=chains,
        cores=cores,
        random_seed=random_seed,
        progressbar=progressbar,
        idata_kwargs={"log_likelihood": "z" in model.named_vars, **(idata_kwargs or {})},
    )
    if posterior_predictive and "z" in model.named_vars:
        _add_posterior_predictive(idata, random_seed)
    report_after_fit(idata, SPEC, check=check_convergence)
    return idata


def _add_posterior_predictive(idata, random_seed) -> None:
    """``z ~ VonMises(o, kappa_obs)`` at the observed nodes, per posterior draw.

    Drawn directly rather than by ``pm.sample_posterior_predictive``, which warns that the
    MRF potential is ignored: ``z`` depends on ``o`` alone, so nothing is lost.
    """
    mask = idata.constant_data["obs_mask"].values == 1
    o = idata.posterior["o"].values[:, :, mask]  # row-major order, as build_model's obs
    z = as_rng(random_seed).vonmises(o, _kappa_obs_draws(idata))
    import xarray as xr

    post = idata.posterior
    coords = {"chain": post["chain"].values, "draw": post["draw"].values}
    coords["obs"] = idata.observed_data["obs"].values
    idata.add_groups(
        posterior_predictive=xr.Dataset({"z": (("chain", "draw", "obs"), z)}, coords=coords)
    )


def _kappa_obs_draws(idata):
    """``kappa_obs`` per draw ``(chain, draw, 1)``: learned (posterior) or fixed (data)."""
    if "kappa_obs" in idata.posterior:
        return idata.posterior["kappa_obs"].values[..., None]
    return float(idata.constant_data["kappa_obs"].values)


def predict(idata, *, sites=None, random_seed=None):
    """Predictive observed orientations at missing nodes (or at ``sites``).

    For every posterior draw a new observation ``z ~ VonMises(o, kappa_obs)`` is drawn on the
    doubled angle and halved, so the result is an orientation in ``[0, pi)``.

    Parameters
    ----------
    idata : arviz.InferenceData
        From :func:`reconstruct`.
    sites : array_like of bool (M, N), optional
        Nodes to predict (default: the unobserved ones, ``obs_mask == 0``).
    random_seed : int or numpy.random.Generator, optional
        Seed of the predictive draws.

    Returns
    -------
    xarray.Dataset
        ``theta_pred`` (chain, draw, site) with ``row``/``col`` of each site, and
        ``attrs["period"] = pi`` on ``theta_pred``.

    Examples
    --------
    >>> import arviz as az
    >>> import xarray as xr
    >>> idata = az.from_dict(posterior={"o": np.zeros((1, 5, 2, 2))})
    >>> mask = xr.DataArray([[1, 0], [1, 1]], dims=("row", "col"))
    >>> idata.add_groups(constant_data=xr.Dataset({"obs_mask": mask, "kappa_obs": 2.0}))
    >>> predict(idata, random_seed=0)["theta_pred"].shape
    (1, 5, 1)
    """
    import xarray as xr

    o = idata.posterior["o"].values
    if sites is None:
        sites = idata.constant_data["obs_mask"].values == 0
    sites = as_binary_array(sites, "sites", ndim=2, shape=o.shape[2:]).astype(bool)
    rows, cols = np.nonzero(sites)
    rng = as_rng(random_seed)
    z = rng.vonmises(o[:, :, rows, cols], _kappa_obs_draws(idata))
    theta = o_to_theta(z)
    return xr.Dataset(
        {"theta_pred": (("chain", "draw", "site"), theta, {"period": np.pi})},
        coords={"row": ("site", rows), "col": ("site", cols)},
    )


def _pinwheel_counts(theta) -> np.ndarray:
    """Number of pinwheels (either sign) of every map in ``theta`` (..., M, N)."""
    o = 2.0 * np.asarray(theta, dtype=np.float64)
    corners = [o[..., :-1, :-1], o[..., :-1, 1:], o[..., 1:, 1:], o[..., 1:, :-1]]
    total = sum(wrap_angle(corners[(k + 1) % 4] - corners[k]) for k in range(4))
    return (np.abs(np.round(total / (2.0 * np.pi))) > 0).sum(axis=(-2, -1)).astype(np.float64)


def invariants(idata):
    """Circular ``theta`` (period pi), ``smoothness`` and ``pinwheels`` per draw.

    ``theta`` carries ``attrs["period"] = pi``: summaries give its circular mean and sd, and
    R-hat/ESS are computed on ``cos 2 theta`` and ``sin 2 theta``.

    Parameters
    ----------
    idata : arviz.InferenceData
        A fit from :func:`reconstruct` (posterior ``o`` and ``theta``).

    Returns
    -------
    xarray.Dataset
        ``theta`` (chain, draw, row, col), ``smoothness`` (mean cosine of neighbouring
        doubled-angle differences) and ``pinwheels`` (count per map), per chain and draw.

    Examples
    --------
    >>> import arviz as az
    >>> o = np.zeros((1, 4, 3, 3))
    >>> idata = az.from_dict(posterior={"o": o, "theta": o_to_theta(o)})
    >>> inv = invariants(idata)
    >>> sorted(inv.data_vars), float(inv["smoothness"].mean())
    (['pinwheels', 'smoothness', 'theta'], 1.0)
    """
    import xarray as xr

    post = idata.posterior
    theta = post["theta"]
    o = post["o"].values
    edges = np.concatenate(
        [
            np.cos(np.diff(o, axis=-2)).reshape(*o.shape[:2], -1),
            np.cos(np.diff(o, axis=-1)).reshape(*o.shape[:2], -1),
        ],
        axis=-1,
    )
    out = xr.Dataset(
        {
            "theta": theta.assign_attrs(period=np.pi),
            "smoothness": (("chain", "draw"), edges.mean(axis=-1)),
            "pinwheels": (("chain", "draw"), _pinwheel_counts(theta.values)),
        }
    )
    return out


def posterior_orientation(idata):
    """Posterior mean orientation and circular standard deviation, each ``(M, N)``.

    Parameters
    ----------
    idata : arviz.InferenceData
        A fit with posterior ``theta`` (chain, draw, M, N), e.g. from :func:`reconstruct`.

    Returns
    -------
    mean : numpy.ndarray, shape (M, N)
        Circular posterior mean orientation in ``[0, pi)``.
    sd : numpy.ndarray, shape (M, N)
        Circular standard deviation of the orientation (radians).

    Examples
    --------
    >>> import arviz as az
    >>> idata = az.from_dict(posterior={"theta": np.full((2, 10, 2, 3), 0.5)})
    >>> mean, sd = posterior_orientation(idata)
    >>> mean.shape, float(mean[0, 0].round(6))
    ((2, 3), 0.5)
    """
    theta = idata.posterior["theta"].values
    return circular_moments(theta.reshape(-1, *theta.shape[2:]), axis=0)


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


def write_outputs(
    idata, out_dir: Path, prefix: str = "vonmises", *, theta_obs=None, truth=None, data=None
) -> list[Path]:
    """Standard outputs (posterior, circular summary, diagnostics) and the reconstruction
    (when ``theta_obs`` is given) and smoothness-trace figures.

    Parameters
    ----------
    idata : arviz.InferenceData
        A fit from :func:`reconstruct`.
    out_dir : path-like
        Output folder (created if needed).
    prefix : str, default "vonmises"
        File name prefix.
    theta_obs : array_like, shape (M, N), optional
        Observed orientations (NaN where missing), for the reconstruction figure.
    truth : array_like, shape (M, N), optional
        True orientations, drawn in the reconstruction figure when given.
    data : dict, optional
        The loaded data (:meth:`pmctx.registry.ModelSpec.fit_file` passes it); its ``theta``
        (masked by ``mask``) is the observed map when ``theta_obs`` is not given.

    Returns
    -------
    list of pathlib.Path
        The files written.

    Examples
    --------
    >>> theta = np.full((3, 3), 0.5)
    >>> idata = reconstruct(theta, rank=3, draws=10, tune=5, chains=1)  # doctest: +SKIP
    >>> paths = write_outputs(idata, "pmctx-out", theta_obs=theta)  # doctest: +SKIP
    """
    from pmctx.io import write_standard_outputs
    from pmctx.vonmises.plots import plot_reconstruction, plot_smoothness_trace

    out_dir = Path(out_dir)
    paths = write_standard_outputs(idata, out_dir, prefix)
    if theta_obs is None and data is not None:
        theta_obs = as_angle_array(data["theta"], "theta", low=0.0, high=np.pi, allow_nan=True)
        if data.get("mask") is not None:
            theta_obs = np.where(np.asarray(data["mask"]) == 1, theta_obs, np.nan)
    if theta_obs is not None:
        mean, sd = posterior_orientation(idata)
        fig = plot_reconstruction(theta_obs, mean, sd, truth=truth)
        paths.append(save_figure(fig, out_dir / f"{prefix}_reconstruction.png"))
    fig = plot_smoothness_trace(idata.sample_stats["smoothness"].values)
    paths.append(save_figure(fig, out_dir / f"{prefix}_trace.png"))
    return paths


#: Smoothing concentrations the demo scores by held-out pixels before it reconstructs.
DEMO_KAPPAS = (2.0, 3.0, 4.0, 5.0, 6.0, 8.0)


def demo_data(size: int = 50, *, random_seed: int = 0) -> dict:
    """The demo's map, its noisy observations and ``kappa`` chosen from them.

    The true map is drawn as in the seed note's Fig. 6: rank 5, ``kappa`` = 5, a 30-sweep
    quench from uniform angles. A quench keeps more pinwheels than the prior holds at
    equilibrium (12 on the 50 x 50 map of seed 0), so the generating ``kappa`` need not be the
    one the data favour: held-out-pixel cross-validation over :data:`DEMO_KAPPAS`
    (:func:`pmctx.vonmises.select.cross_validate`, rank 5, ``kappa_obs`` = 2) picks it. On
    seed 0 it picks 3 (held-out score -1.3836 per pixel; 5 scores -1.3890, paired SE of the
    difference 0.0068). At ``kappa`` = 5 the posterior of that map has 9 pinwheels, with a
    7% mode holding an extra pair that a chain leaves only every ~1,200 sweeps
    (:mod:`pmctx.vonmises.window`); at ``kappa`` = 3 it has 12 and the default run converges.

    Parameters
    ----------
    size : int, default 50
        Grid side.
    random_seed : int, default 0
        Seed of the map (``random_seed``), the noise (``random_seed + 1``) and the CV folds.

    Returns
    -------
    dict
        ``truth`` and ``theta_obs`` (orientations, NaN where missing, 25%), ``kappa`` (the
        CV choice), ``kappa_obs`` (2.0), ``rank`` (5) and ``cv`` (the CV curve, a DataFrame).

    Examples
    --------
    >>> data = demo_data(8, random_seed=0)
    >>> data["theta_obs"].shape, data["kappa"] in DEMO_KAPPAS
    ((8, 8), True)
    """
    from pmctx.vonmises.select import cross_validate

    size = check_int(size, "size", minimum=2)
    kappa_obs, rank = 2.0, 5
    o = sample_prior((size, size), kappa=5.0, rank=rank, n_sweeps=30, random_seed=random_seed)
    truth = o_to_theta(o)
    theta_obs = noisy_observations(
        truth, kappa_obs=kappa_obs, missing=0.25, random_seed=random_seed + 1
    )
    cv = cross_validate(
        theta_to_o(theta_obs), kappas=DEMO_KAPPAS, ranks=[rank], kappa_obs=kappa_obs,
        random_seed=random_seed,
    )  # fmt: skip
    return {
        "truth": truth,
        "theta_obs": theta_obs,
        "kappa": float(cv.best_kappa),
        "kappa_obs": kappa_obs,
        "rank": rank,
        "cv": cv.curve,
    }


def demo(out_dir, *, quick: bool = False, random_seed: int = 0, cores=None) -> list[Path]:
    """Sample a true map from the prior (R = 5, kappa = 5), corrupt it, reconstruct it.

    ``kappa`` is chosen by held-out pixels (:func:`demo_data`). Writes
    ``vonmises_posterior.nc``, ``vonmises_summary.csv`` (circular statistics of theta,
    smoothness, pinwheels), ``vonmises_diagnostics.csv``, ``vonmises_data.npz`` (the
    observations and options: ``pmctx fit vonmises --data`` on it refits them),
    ``vonmises_cv.csv`` (the CV curve), a metrics CSV (orientation errors, pinwheels,
    smoothness), the reconstruction figure, a trace plot and prior samples for several ranks
    and concentrations. ``quick`` uses a 24 x 24 grid.

    Parameters
    ----------
    out_dir : path-like
        Output folder.
    quick : bool, default False
        A 24 x 24 grid and short chains (seconds), for a first look and the tests.
    random_seed : int, default 0
        Seed of the simulated map, the noise and the sampler.
    cores : int, optional
        Parallel chains, as in :func:`pymc.sample`.

    Returns
    -------
    list of pathlib.Path
        The files written.

    Examples
    --------
    >>> paths = demo("pmctx-demo", quick=True)  # doctest: +SKIP
    """
    import matplotlib.pyplot as plt

    from pmctx.vonmises.plots import plot_orientation_map

    out_dir = Path(out_dir)
    size = 24 if quick else 50
    data = demo_data(size, random_seed=random_seed)
    truth, theta_obs = data["truth"], data["theta_obs"]
    idata = reconstruct(
        theta_obs,
        kappa=data["kappa"],
        kappa_obs=data["kappa_obs"],
        rank=data["rank"],
        draws=100 if quick else 400,
        # 8 kernel sweeps per stored draw (the step's default): 150 tune draws are 1,200
        # sweeps, beyond the ~800 after which random and flat starts agree on 24x24 maps.
        tune=30 if quick else 150,
        chains=2 if quick else 4,
        cores=cores,
        random_seed=random_seed,
        check_convergence=not quick,
    )
    paths = write_outputs(idata, out_dir, theta_obs=theta_obs, truth=truth)
    mean, _ = posterior_orientation(idata)
    seen = ~np.isnan(theta_obs)
    rows = {
        "posterior_mean_error_all": orientation_error(mean, truth).mean(),
        "posterior_mean_error_observed": orientation_error(mean, truth)[seen].mean(),
        "raw_observation_error": orientation_error(theta_obs[seen], truth[seen]).mean(),
        "kappa_cv": data["kappa"],
        "posterior_pinwheels_mean": _pinwheel_counts(idata.posterior["theta"].values).mean(),
        "true_pinwheels": sum(count_pinwheels(truth)),
        "true_smoothness": smoothness(2 * truth),
    }
    metrics = out_dir / "vonmises_metrics.csv"
    metrics.write_text("metric,value\n" + "".join(f"{k},{v:.6g}\n" for k, v in rows.items()))
    paths.append(metrics)
    inputs, curve = out_dir / "vonmises_data.npz", out_dir / "vonmises_cv.csv"
    np.savez(inputs, theta=theta_obs, **{k: data[k] for k in ("kappa", "kappa_obs", "rank")})
    data["cv"].to_csv(curve, index=False)
    paths += [inputs, curve]
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
                    random_seed=random_seed + 10 * i + j,
                )
            )
            n_pos, n_neg = count_pinwheels(theta)
            plot_orientation_map(
                axes[i, j], theta, title=f"R={rank}, kappa={kappa:g}: {n_pos}+/{n_neg}- pinwheels"
            )
    paths.append(save_figure(fig, out_dir / "vonmises_prior_samples.png"))
    return paths


def fit_data(
    data: dict,
    *,
    draws: int = SAMPLE_DEFAULTS["draws"],
    tune: int = SAMPLE_DEFAULTS["tune"],
    chains: int = SAMPLE_DEFAULTS["chains"],
    cores: int | None = SAMPLE_DEFAULTS["cores"],
    random_seed=SAMPLE_DEFAULTS["random_seed"],
    progressbar: bool | None = SAMPLE_DEFAULTS["progressbar"],
    idata_kwargs: dict | None = SAMPLE_DEFAULTS["idata_kwargs"],
    **options,
):
    """:func:`reconstruct` on ``{"theta": ..., "mask": ...}`` (mask optional).

    Parameters
    ----------
    data : dict
        ``"theta"`` (M x N orientations in ``[0, pi]``, NaN where missing) and optionally
        ``"mask"`` (M x N, 1 = observed), as loaded by :func:`pmctx.schema.load_vonmises`.
    draws, tune, chains, cores, random_seed, progressbar, idata_kwargs
        As in :func:`pymc.sample` (same defaults).
    **options
        Further :func:`reconstruct` options (``kappa``, ``kappa_obs``, ``rank``, ``sampler``, ...).

    Returns
    -------
    arviz.InferenceData
        As returned by :func:`reconstruct`.

    Examples
    --------
    >>> data = {"theta": np.array([[0.2, np.nan], [0.3, 0.4]])}
    >>> idata = fit_data(data, rank=3, draws=10, tune=5, chains=1,
    ...                  random_seed=1, check_convergence=False, progressbar=False)
    >>> idata.posterior["theta"].shape
    (1, 10, 2, 2)
    """
    return reconstruct(
        data["theta"],
        mask=data.get("mask"),
        draws=draws,
        tune=tune,
        chains=chains,
        cores=cores,
        random_seed=random_seed,
        progressbar=progressbar,
        idata_kwargs=idata_kwargs,
        **options,
    )


def _spec():
    from pmctx.registry import ModelSpec
    from pmctx.schema import load_vonmises
    from pmctx.vonmises.simulate import invariants as sbc_quantities
    from pmctx.vonmises.simulate import simulate

    return ModelSpec(
        name="vonmises",
        summary="low-rank von Mises orientation map: grid MRF, exact column Gibbs steps",
        module=__name__,
        load=load_vonmises,
        fit=fit_data,
        invariants=invariants,
        write_outputs=write_outputs,
        demo=demo,
        simulate=simulate,
        sbc_quantities=sbc_quantities,
        predict=predict,
        options={
            "kappa": "smoothing concentration (default 5.0)",
            "kappa_obs": "observation concentration on doubled angles (default 2.0)",
            "rank": "rank R of the edge potential (default 5)",
            "sampler": "augmented, cluster, ffbs or pointwise (default augmented)",
            "n_sweeps": "kernel sweeps per stored draw (default 8 for augmented/cluster, else 1)",
        },
        advice="Maps can hold several pinwheel layouts that a chain leaves only every few "
        "thousand sweeps, most often when kappa is larger than the data favour (more "
        "pinwheels than the prior holds): choose kappa by held-out pixels "
        "(pmctx.vonmises.select.cross_validate, or pmctx.models.vonmises_select.reconstruct_cv)"
        ", or run longer (e.g. draws=4000, or n_sweeps=32 kernel sweeps per draw; the default "
        "is 8) and compare the chains' pinwheel counts",
        demo_seconds=(66, 6),
    )


#: The model's entry in the registry (:mod:`pmctx.registry`).
SPEC = _spec()

#: ``fit(data_path, *, out_dir="pmctx-fit", **kwargs)``: load a data file, fit, write the
#: files (:meth:`pmctx.registry.ModelSpec.fit_file`, what ``pmctx fit`` runs).
fit = SPEC.fit_file
