"""Low-rank von Mises orientation map: a grid MRF of orientations in PyMC.

An M x N map of orientations ``theta`` in ``[0, pi)`` is modelled on the doubled angles
``o = 2 theta`` (orientation is pi-periodic). Neighbouring nodes are coupled by the rank-R
edge potential ``sum_{k=0}^{R} exp(kappa cos(o_a - phi_k)) exp(kappa cos(o_b - phi_k))``,
``phi_k = 2 pi k / (R + 1)``; node priors are flat (optionally von Mises); each observed node
has ``z ~ VonMises(o, kappa_obs)`` and missing observations are masked out. Inference is by
exact block Gibbs (augmented by default, :mod:`pmctx.steps.vonmises`), through ``pm.sample``.

This module declares the model and its registry entry (:data:`SPEC`); the demo, synthetic
maps, plots and output files live in :mod:`pmctx.vonmises` (:mod:`~pmctx.vonmises.demo`,
:mod:`~pmctx.vonmises.simulate`, :mod:`~pmctx.vonmises.outputs`) and are re-exported here.

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

# Long because build_model, reconstruct and fit_data carry full numpydoc docstrings with
# runnable examples (about 210 lines); demo, maps, inputs and outputs live in pmctx.vonmises.

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pymc.distributions import transforms

from pmctx.continuation import planned_draws
from pmctx.convergence import convergence_judge, report_after_fit
from pmctx.sampling import (
    SAMPLE_DEFAULTS,
    check_sample_kwargs,
    demo_sections,
    fit_with_sampler,
    run_sampler,
)
from pmctx.steps.registration import tag_block
from pmctx.steps.vonmises import (
    AugmentedVonMisesGibbs,
    ClusterVonMisesGibbs,
    KappaObsSlice,
)
from pmctx.steps.vonmises_jax import JaxAugmentedVonMisesGibbs
from pmctx.streaming import disk_path, memory_view, save_groups
from pmctx.validation import (
    as_angle_array,
    as_rng,
    check_choice,
    check_int,
    check_nonempty,
    check_positive,
)
from pmctx.vonmises.demo import DEMO_KAPPAS, demo_data, map_demo
from pmctx.vonmises.hyper import KAPPA_OBS_PRIOR as KAPPA_OBS_PRIOR_SHAPE_RATE
from pmctx.vonmises.inputs import check_map_observations
from pmctx.vonmises.maps import o_to_theta, pinwheel_counts, smoothness, theta_to_o
from pmctx.vonmises.outputs import check_map_memory, posterior_orientation
from pmctx.vonmises.outputs import write_map_outputs as write_outputs
from pmctx.vonmises.predictive import add_posterior_predictive, predict
from pmctx.vonmises.select import AUTO_KAPPAS, AUTO_MIN_OBSERVED, choose_kappa
from pmctx.vonmises.simulate import noisy_observations, sample_prior
from pmctx.vonmises.storage import (
    STORE_CHOICES,
    finish_on_disk,
    finish_thinned,
    map_thin,
    map_trace,
)

# A child of PyMC's logger: the chosen kappa prints beside pm.sample's own messages.
_log = logging.getLogger("pymc.pmctx")

__all__ = [
    "DEMO_KAPPAS", "STEPS", "build_model", "default_steps", "demo", "demo_data", "fit",
    "fit_data", "invariants", "noisy_observations", "o_to_theta", "posterior_orientation",
    "predict", "reconstruct", "sample_prior", "theta_to_o", "write_outputs",
]  # fmt: skip

STEPS = {
    "augmented": AugmentedVonMisesGibbs,
    "augmented_jax": JaxAugmentedVonMisesGibbs,
    "cluster": ClusterVonMisesGibbs,
}


def default_steps(
    model, sampler: str = "augmented", *, n_sweeps: int | None = None, n_jumps: int | None = None
) -> list:
    """The step list of a model from :func:`build_model`: the map sampler ``sampler`` for
    ``o`` (``n_sweeps`` kernel sweeps per draw), plus
    :class:`~pmctx.steps.vonmises.KappaObsSlice` when ``kappa_obs="prior"``.
    Call it inside the model context.

    Parameters
    ----------
    model : pymc.Model
        A model returned by :func:`build_model`.
    sampler : str, default "augmented"
        Step method for the angle grid ``o``, a key of :data:`STEPS`: ``"augmented"``,
        ``"augmented_jax"`` or ``"cluster"``.
    n_sweeps : int, optional
        Kernel sweeps of ``o`` per stored draw; default: the step's ``default_n_sweeps``
        (8 for each).
    n_jumps : int, optional
        ``"augmented"`` only: proposals of each pinwheel-pair jump learnt in tuning, after
        every sweep (default 10; 0 turns the jumps off; :mod:`pmctx.steps.vonmises_jumps`).

    Returns
    -------
    list of pymc.step_methods.BlockedStep
        The map step, followed by a ``KappaObsSlice`` when ``kappa_obs`` is a random variable.

    Examples
    --------
    >>> import numpy as np
    >>> model = build_model(np.zeros((2, 3)), kappa_obs="prior", rank=3)
    >>> with model:
    ...     steps = default_steps(model, "augmented", n_sweeps=2)
    >>> [type(step).__name__ for step in steps]
    ['AugmentedVonMisesGibbs', 'KappaObsSlice']
    """
    step_class = STEPS[check_choice(sampler, "sampler", list(STEPS))]
    if n_sweeps is not None:
        n_sweeps = check_int(n_sweeps, "n_sweeps", minimum=1)
    options = {"n_sweeps": n_sweeps}
    if n_jumps is not None:
        if sampler != "augmented":
            raise ValueError(
                f"n_jumps applies to sampler='augmented' (the only sampler with pinwheel-pair "
                f"jumps), got sampler={sampler!r}; drop n_jumps or use the augmented sampler."
            )
        options["n_jumps"] = n_jumps
    steps = [step_class([model["o"]], **options)]
    if model["kappa_obs"] in model.free_RVs:
        steps.append(KappaObsSlice())
    return steps


def _check_hyper(kappa, kappa_obs, rank):
    kappa = check_positive(kappa, "kappa")
    if isinstance(kappa_obs, str):
        if kappa_obs != "prior":
            raise ValueError(f"kappa_obs must be a positive number or 'prior'; got {kappa_obs!r}.")
    elif not isinstance(kappa_obs, pt.Variable):  # a user's random variable is used as it is
        kappa_obs = check_positive(kappa_obs, "kappa_obs")
    rank = check_int(rank, "rank", minimum=1)
    return kappa, kappa_obs, rank


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
    z_filled, mask = check_map_observations(z, mask, shape)
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


def reconstruct(
    theta_obs,
    *,
    mask=None,
    kappa: float | str = "auto",
    kappa_obs: float = 2.0,
    rank: int = 5,
    sampler: str = "auto",
    draws: int = SAMPLE_DEFAULTS["draws"],
    tune: int = SAMPLE_DEFAULTS["tune"],
    chains: int = SAMPLE_DEFAULTS["chains"],
    cores: int | None = SAMPLE_DEFAULTS["cores"],
    random_seed=SAMPLE_DEFAULTS["random_seed"],
    progressbar: bool | None = SAMPLE_DEFAULTS["progressbar"],
    idata_kwargs: dict | None = SAMPLE_DEFAULTS["idata_kwargs"],
    until_converged: bool = SAMPLE_DEFAULTS["until_converged"],
    max_draws: int | None = SAMPLE_DEFAULTS["max_draws"],
    max_time: float | None = SAMPLE_DEFAULTS["max_time"],
    posterior_predictive: bool = True,
    check_convergence: bool = True,
    n_sweeps: int | None = None,
    n_jumps: int | None = None,
    store: str = "auto",
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
    kappa : float or "auto", default "auto"
        Smoothing concentration, as in :func:`build_model`. ``"auto"`` chooses it from the
        data before sampling: the value of :data:`~pmctx.vonmises.select.AUTO_KAPPAS`
        (2-8) whose fits best predict held-out pixels
        (:func:`pmctx.vonmises.select.choose_kappa`: 3 folds x 6 values x 150 sweeps), or
        5 when fewer than 100 pixels are observed. A ``kappa`` above what the data favour
        gives a posterior with several pinwheel layouts that chains leave only every few
        thousand sweeps. The value used is in ``posterior.attrs["kappa"]`` (and how it was
        chosen in ``attrs["kappa_choice"]``).
    kappa_obs, rank :
        As in :func:`build_model` (``kappa_obs`` applies to doubled angles).
    sampler : str, default "auto"
        Step method: ``"auto"`` or a key of :data:`STEPS` (see :mod:`pmctx.steps.vonmises`:
        ``"augmented"``, ``"augmented_jax"``, ``"cluster"``); ``"augmented_jax"`` runs the
        augmented sweeps with JAX on its default device (a GPU:
        :mod:`pmctx.steps.vonmises_jax`, extra ``pmctx[jax]``), chains one after another;
        ``"cluster"`` adds reflection cluster moves after each sweep. ``"auto"``:
        ``"augmented"``, whose exact pinwheel-pair jumps, learnt in tuning, move chains
        between pinwheel layouts (``n_jumps``). On the demo map at ``kappa = 5``, fit seeds
        0-4, they took the pinwheel count's R-hat from 1.018-1.049 (bulk ESS 67-191) to
        1.002-1.007 (ESS 499-1,153) at 1.07-1.49 times the CPU
        (``benchmarks/vonmises_pinwheel_mixing.py defaults``).
    n_sweeps : int, optional
        Kernel sweeps per stored draw (thinning inside the step); default: the step's
        ``default_n_sweeps`` (8 for ``"augmented"`` and ``"cluster"``: about 6 times the CPU
        per stored draw of one sweep and 2.8 times theta's ESS per CPU second on the demo
        data). Chains that disagree on the pinwheel layout need more sweeps in total, not
        more stored draws.
    n_jumps : int, optional
        ``"augmented"`` (and ``"auto"``) only: proposals of each pinwheel-pair jump after every
        sweep (default 10; 0 turns the jumps off). Each chain learns its jumps from its
        tuning (past the first eighth) and keeps them fixed for the stored draws
        (:mod:`pmctx.steps.vonmises_jumps`); ``sample_stats["jumps"]`` counts the accepted
        ones per draw.
    draws, tune, chains, cores, random_seed, progressbar, idata_kwargs
        As in ``pm.sample``, with its defaults.
    until_converged, max_draws, max_time
        Continue the same chains while the convergence check fails, up to ``max_draws``
        per chain (default ``3 * draws``) or ``max_time`` seconds (:mod:`pmctx.continuation`;
        needs ``check_convergence``); ``until_converged=False``: exactly ``draws``.
    posterior_predictive : bool, default True
        Add the ``posterior_predictive`` group (observed ``z`` redrawn per draw) for
        ``az.plot_ppc_dist``; :func:`predict` gives predictive observations at missing nodes.
    store : {"auto", "all"} or path ending in ".zarr", default "auto"
        ``"auto"``: maps whose ``o`` and ``theta`` draws would pass 256 MiB keep every k-th
        draw (float32; the smallest k that fits; the posterior's ``attrs["thin"]``), with the
        log-likelihood and predictive at the same draws (:mod:`pmctx.vonmises.storage`);
        ``"all"``: every draw; ``"fit.zarr"``: every draw of ``o`` and ``theta`` (float32)
        and the log-likelihood written to that Zarr store as they come, the fit returned
        opened lazily from it (:mod:`pmctx.streaming`; reopen with
        :func:`pmctx.streaming.open_trace`).
    check_convergence : bool, default True
        Warn :class:`pmctx.ConvergenceWarning` when theta (circular R-hat/ESS on cos and
        sin), smoothness or the pinwheel count has not converged.

    Returns
    -------
    xarray.DataTree
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
    check_choice(sampler, "sampler", ["auto", *STEPS])
    kappa, kappa_choice = _resolve_kappa(kappa, theta_obs, mask, rank, kappa_obs, random_seed)
    model = build_model(
        theta_to_o(theta_obs), mask=mask, kappa=kappa, kappa_obs=kappa_obs, rank=rank
    )
    if sampler == "auto":
        sampler = "augmented"
    if "z" not in model.named_vars:
        raise ValueError(
            f"theta_obs: every one of its {theta_obs.size} nodes is missing (NaN or mask 0), so "
            "the posterior would be the prior. Pass at least one observed orientation, or draw "
            "prior maps with sample_prior."
        )
    log_likelihood = (idata_kwargs or {}).get("log_likelihood", True)
    disk = disk_path(store, STORE_CHOICES)  # None, or the Zarr store draws stream to
    # Fixed length on disk (written as it comes) and on JAX (chains share one device).
    until_converged = until_converged and disk is None and sampler != "augmented_jax"
    room = planned_draws(draws, until_converged=until_converged, max_draws=max_draws,
                         judged=check_convergence)  # fmt: skip
    thin = 1 if disk else map_thin(model, draws=room, chains=chains, store=store)
    if not disk:  # on disk, memory holds one block of draws and a predictive that fits
        check_map_memory(model, draws=room, tune=tune, chains=chains, thin=thin,
                         log_likelihood=log_likelihood,
                         posterior_predictive=posterior_predictive)  # fmt: skip
    trace = None if thin is None else map_trace(model, draws=room, thin=thin, path=disk,
                                                chains=chains)  # fmt: skip
    kept = {"log_likelihood": "z" in model.named_vars, **(idata_kwargs or {})}
    if trace is not None:  # o is not in pm.sample's posterior: finish_thinned adds the group
        kept["log_likelihood"] = False
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
        steps = default_steps(model, sampler, n_sweeps=n_sweeps, n_jumps=n_jumps)
    if sampler == "augmented_jax":
        cores = 1  # chain processes would each claim the JAX device's memory
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
        idata_kwargs=kept,
        trace=trace,
        until_converged=until_converged,
        max_draws=max_draws,
        max_time=max_time,
        judge=convergence_judge(SPEC, check=check_convergence),
    )
    if disk is not None:  # every draw on disk, read lazily; convergence on the draws that fit
        finish_on_disk(idata, model, trace, log_likelihood, posterior_predictive, random_seed)
        report_after_fit(idata, SPEC, check=False)
        report_after_fit(memory_view(idata), SPEC, check=check_convergence)
        idata.posterior.attrs.update(kappa=kappa, kappa_choice=kappa_choice)
        return save_groups(idata, disk)
    if trace is not None:  # every thin-th draw, the log-likelihood at those draws
        finish_thinned(idata, model, trace, log_likelihood=log_likelihood)
    if posterior_predictive and "z" in model.named_vars:
        add_posterior_predictive(idata, random_seed)
    report_after_fit(idata, SPEC, check=check_convergence)
    idata.posterior.attrs.update(kappa=kappa, kappa_choice=kappa_choice)
    return idata


def _resolve_kappa(kappa, theta_obs, mask, rank, kappa_obs, random_seed):
    """``(kappa, how it was chosen)``: a given number, or held-out pixels for ``"auto"``."""
    if not isinstance(kappa, str):
        return check_positive(kappa, "kappa"), "given"
    if kappa != "auto":
        raise ValueError(
            f'kappa must be a positive number or "auto" (chosen by held-out pixels), got {kappa!r}.'
        )
    # Its own random stream: the chains' seeds and starts stay those of a given kappa.
    if isinstance(random_seed, np.random.Generator):
        seed = random_seed.spawn(1)[0]
    else:
        seed = np.random.default_rng(np.random.SeedSequence(random_seed).spawn(1)[0])
    learn_obs = isinstance(kappa_obs, str)  # kappa_obs="prior": learnt in every fold's fit
    # build_model validates these after kappa is chosen: the scoring needs them valid first.
    z, observed = check_map_observations(theta_to_o(theta_obs), mask)
    chosen, result = choose_kappa(
        np.where(observed == 1, z, np.nan), rank=check_int(rank, "rank", minimum=1),
        kappa_obs=None if learn_obs else check_positive(kappa_obs, "kappa_obs"),
        random_seed=seed,
    )  # fmt: skip
    if result is None:
        return chosen, f"too few observed pixels to score ({AUTO_MIN_OBSERVED} needed): {chosen}"
    scores = ", ".join(f"{k:g}: {v:.4f}" for k, v in zip(AUTO_KAPPAS, result.curve["score"]))
    _log.info("kappa %g chosen by held-out pixels (score per pixel %s)", chosen, scores)
    return chosen, f"held-out pixels (score per pixel {scores})"


def invariants(idata):
    """Circular ``theta`` (period pi), ``smoothness`` and ``pinwheels`` per draw.

    ``theta`` carries ``attrs["period"] = pi``: summaries give its circular mean and sd, and
    R-hat/ESS are computed on ``cos 2 theta`` and ``sin 2 theta``.

    Parameters
    ----------
    idata : xarray.DataTree
        A fit from :func:`reconstruct` (posterior ``o`` and ``theta``).

    Returns
    -------
    xarray.Dataset
        ``theta`` (chain, draw, row, col), ``smoothness`` (mean cosine of neighbouring
        doubled-angle differences, :func:`pmctx.vonmises.maps.smoothness`) and ``pinwheels``
        (count per map, :func:`pmctx.vonmises.maps.pinwheel_counts`), per chain and draw.

    Examples
    --------
    >>> import arviz as az
    >>> o = np.zeros((1, 4, 3, 3))
    >>> idata = az.from_dict({"posterior": {"o": o, "theta": o_to_theta(o)}})
    >>> inv = invariants(idata)
    >>> sorted(inv.data_vars), float(inv["smoothness"].mean())
    (['pinwheels', 'smoothness', 'theta'], 1.0)
    """
    import xarray as xr

    post = idata.posterior
    theta = post["theta"]
    return xr.Dataset(
        {
            "theta": theta.assign_attrs(period=np.pi),
            "smoothness": (("chain", "draw"), _per_map(smoothness, post["o"])),
            "pinwheels": (("chain", "draw"), _per_map(pinwheel_counts, theta)),
        }
    )


def _per_map(statistic, maps, block: int = 8):
    """``statistic`` of every (chain, draw) map, ``block`` maps at a time: its float64
    temporaries stay a few maps big (a 512 x 512 map is 2 MB) instead of the whole posterior."""
    values = np.empty(maps.shape[:2])
    for chain in range(maps.shape[0]):
        for start in range(0, maps.shape[1], block):
            part = np.asarray(maps[chain, start : start + block])
            values[chain, start : start + block] = statistic(part)
    return values


@demo_sections
def demo(out_dir, *, quick: bool = False, random_seed: int = 0, cores=None) -> list[Path]:
    """Sample a true map from the prior, corrupt it, choose ``kappa`` by held-out pixels and
    reconstruct it: :func:`pmctx.vonmises.demo.map_demo` with :func:`reconstruct`.
    """
    return map_demo(reconstruct, out_dir, quick=quick, random_seed=random_seed, cores=cores)


@fit_with_sampler
def fit_data(data: dict, sample_kwargs: dict, **options):
    """:func:`reconstruct` on ``{"theta": ..., "mask": ...}`` (mask optional).

    Parameters
    ----------
    data : dict
        ``"theta"`` (M x N orientations in ``[0, pi]``, NaN where missing) and optionally
        ``"mask"`` (M x N, 1 = observed), as loaded by :func:`pmctx.vonmises.inputs.load_vonmises`.
    **options
        Further :func:`reconstruct` options (``kappa``, ``kappa_obs``, ``rank``, ``sampler``, ...).

    Returns
    -------
    xarray.DataTree
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
        **sample_kwargs,
        **options,
    )


def _spec():
    from pmctx.registry import ModelSpec
    from pmctx.vonmises.inputs import load_vonmises
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
        comparisons={
            "z": "each observed pixel given the sampled map (conditional on the latent map, "
            "so PSIS over it is unreliable): compare maps by held-out pixels instead "
            "(pmctx.vonmises.select.cross_validate)",
        },
        options={
            "kappa": "smoothing concentration, or 'auto' (the default): chosen by held-out "
            "pixels among 2-8 before sampling",
            "kappa_obs": "observation concentration on doubled angles (default 2.0)",
            "rank": "rank R of the edge potential (default 5)",
            "sampler": "auto, augmented, augmented_jax (JAX device, pmctx[jax]) or cluster "
            "(default auto: augmented, with pinwheel-pair jumps)",
            "n_sweeps": "kernel sweeps per stored draw (default 8)",
            "n_jumps": "augmented only: proposals of each pinwheel-pair jump learnt in tuning, "
            "after every sweep (default 10; 0 turns the jumps off)",
        },
        advice="Maps can hold several pinwheel layouts that a chain leaves only every few "
        "thousand sweeps, most often when kappa is larger than the data favour (more "
        "pinwheels than the prior holds): choose kappa by held-out pixels "
        "(pmctx.vonmises.select.cross_validate, or pmctx.models.vonmises_select.reconstruct_cv)"
        "; if kappa is fixed on purpose, run longer (e.g. tune=2000 so that every chain "
        "meets the layouts while it learns its pinwheel-pair jumps, draws=4000, or n_sweeps=32 "
        "kernel sweeps per draw; the default is 8), or try sampler='cluster' (reflection "
        "moves of whole regions, which change the pinwheel count), and compare the chains' "
        "pinwheel counts",
        demo_seconds=(47, 6),
    )


#: The model's entry in the registry (:mod:`pmctx.registry`).
SPEC = _spec()

#: ``fit(data_path, *, out_dir="pmctx-fit", **kwargs)``: load a data file, fit, write the
#: files (:meth:`pmctx.registry.ModelSpec.fit_file`, what ``pmctx fit`` runs).
fit = SPEC.fit_file
