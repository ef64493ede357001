"""IBP visuo-motor factorisation (seed 000): shared binary causes of forces and visual cues.

N trials, forces ``F`` (N x D) and binary cues ``X`` (N x T) share a binary ownership matrix
``Z`` (N x K_max). Forces are linear-Gaussian, ``F = Z A + N(0, sigma_n^2)`` with rows of ``A``
``~ N(0, sigma_A^2 I)``; cues follow a noisy-OR of the visual basis ``Y`` (entries
``~ Bernoulli(phi)``), ``P(x_it = 1) = 1 - (1 - lambda)^{z_i . y_t} (1 - eps)``, computed in
log space. The IBP prior is truncated at ``K_max`` columns: ``pi_k ~ Beta(alpha/K_max, 1)``,
``z_ik ~ Bernoulli(pi_k)``. Either likelihood may be left out.

:func:`build_model` declares it as a ``pm.Model`` with dims (trial, feature, force_dim,
pixel) and label-invariant deterministics (``n_active``, ``loglik``, ``F_hat = Z A``,
``X_prob = P(X)``); :func:`sample` runs :class:`pmctx.steps.ibp_gibbs.IBPGibbs` (finite-K
collapsed prior ``(m_-ik + alpha/K_max)/(N + alpha/K_max)``, new features from eq. 10-14 on
the free columns) inside ``pm.sample`` and adds the ``log_likelihood`` group.

Examples
--------
>>> from pmctx.ibp.data import visuomotor_data
>>> from pmctx.models.ibp import sample
>>> data = visuomotor_data(n_trials=20, random_seed=0)
>>> idata = sample(data.F, data.X, K_max=10, draws=30, tune=30, chains=1, random_seed=0,
...                check_convergence=False)
>>> int(idata.posterior["n_active"].max()) <= 10
True
"""

# Long because the public entry points carry full numpydoc docstrings with runnable examples
# (about 250 of its lines); demo, plots, outputs and input checks live in the family package.

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import xarray as xr

from pmctx.continuation import planned_draws
from pmctx.convergence import convergence_judge, report_after_fit
from pmctx.ibp.demo import run_demo
from pmctx.ibp.fit_checks import warn_if_truncated, with_disagreement_advice
from pmctx.ibp.inputs import (
    DEFAULT_HYPER,
    UNUSED_PLACEHOLDERS,
    data_coords,
    hyper_variable,
    validate_inputs,
)
from pmctx.ibp.outputs import plot_bases, write_outputs
from pmctx.ibp.refits import kfold_pair, warm_refit
from pmctx.ibp.start import subsample_initvals
from pmctx.ibp.storage import check_memory, finish, make_trace, storage_plan
from pmctx.sampling import (
    SAMPLE_DEFAULTS,
    check_sample_kwargs,
    demo_sections,
    dim_length,
    fit_with_sampler,
    run_sampler,
)
from pmctx.steps.ibp_gibbs import HYPER_NAMES, LEARNED_HYPER, IBPAlphaGibbs, IBPGibbs, IBPHyperGibbs
from pmctx.steps.registration import tag_block
from pmctx.streaming import memory_view, save_groups

__all__ = [
    "build_model",
    "demo",
    "fit",
    "fit_data",
    "invariants",
    "kfold_functions",
    "plot_bases",
    "predict",
    "refit_functions",
    "sample",
    "subsample_initvals",
    "write_outputs",
]

# start="auto" starts every chain from pmctx.ibp.start.subsample_start from this many trials
# on. The sampler's own trial-count policy (birth/death proposals from 50 trials, two sweeps
# per draw from 5,000) is IBPGibbs's "auto", so a plain pm.sample() runs it too.
# Measurements: docs/guides/ibp_defaults.md.
SUBSAMPLE_START_MIN_TRIALS = 500
START_CHOICES = ("auto", "subsample", "zero")


def build_model(
    F=None, X=None, *, K_max: int = 10, reconstructions: bool = True, F_offset=None, **hyper
):
    """Declare the truncated IBP visuo-motor model as a ``pm.Model``.

    Parameters
    ----------
    F : array_like (N, D), optional
        Forces (finite floats).
    X : array_like (N, T), optional
        Binary visual cues (0/1).
    K_max : int, default 10
        Truncation level (number of feature columns).
    reconstructions : bool, default True
        Add ``F_hat = Z A`` and ``X_prob = P(X = 1)`` deterministics (N x D, N x T per draw).
    F_offset : tensor broadcastable to (N, D), optional
        A term added to the force mean, ``F ~ Normal(Z A + F_offset, sigma_n)``: e.g. a
        regression of the forces on covariates whose coefficients the user declared in an
        enclosing ``pm.Model`` (PyMC's steps sample them). Stored as the deterministic
        ``F_offset``; ``IBPGibbs`` and ``IBPHyperGibbs`` read its current value from the point
        and update the IBP latents given ``F - F_offset``. ``F_hat`` stays ``Z A``.
    **hyper
        ``alpha, sigma_n, sigma_A, phi, lam, eps``: a number fixes the hyperparameter
        (defaults in ``DEFAULT_HYPER``), ``"prior"`` gives it a weakly informative prior,
        a pytensor variable (e.g. a prior the user declared in an enclosing ``pm.Model``)
        is used as it is; PyMC's own steps sample such variables and ``IBPGibbs`` reads
        their current values.

    Returns
    -------
    pm.Model

    Examples
    --------
    >>> import numpy as np
    >>> model = build_model(F=np.zeros((4, 2)), X=np.zeros((4, 3)), K_max=2)
    >>> sorted(model.coords)
    ['feature', 'force_dim', 'pixel', 'trial']
    """
    unknown = set(hyper) - set(HYPER_NAMES)
    if unknown:
        raise TypeError(f"Unknown hyperparameters {sorted(unknown)}; expected {HYPER_NAMES}.")
    defaults = dict(DEFAULT_HYPER)
    # Hyperparameters of an absent likelihood stay fixed placeholders unless asked for: a
    # prior on them would only add free variables that the data cannot inform.
    if F is None:
        defaults.update(UNUSED_PLACEHOLDERS["F"])
    if X is None:
        defaults.update(UNUSED_PLACEHOLDERS["X"])
    raw_F, raw_X = F, X
    F, X, K_max, hyper = validate_inputs(F, X, K_max, {**defaults, **hyper})
    if F_offset is not None and F is None:
        raise ValueError("F_offset shifts the force mean; pass the forces F with it.")
    coords = data_coords(raw_F, raw_X, K_max=K_max)
    with pm.Model(coords=coords) as model:
        h = {name: hyper_variable(name, value) for name, value in hyper.items()}
        pi = pm.Beta("pi", alpha=h["alpha"] / K_max, beta=1.0, dims="feature")
        Z = pm.Bernoulli("Z", p=pi, dims=("trial", "feature"))
        pm.Deterministic("n_active", pt.sum(pt.max(Z, axis=0)))
        loglik = pt.constant(0.0)
        if F is not None:
            A = pm.Normal("A", 0.0, h["sigma_A"], dims=("feature", "force_dim"))
            features = mean = pt.dot(Z, A)
            if F_offset is not None:
                offset = pt.broadcast_to(pt.as_tensor(F_offset, dtype="float64"), F.shape)
                mean = mean + pm.Deterministic("F_offset", offset, dims=("trial", "force_dim"))
            pm.Normal("F", mu=mean, sigma=h["sigma_n"], observed=F, dims=("trial", "force_dim"))
            sn = h["sigma_n"]
            loglik += pt.sum(-0.5 * pt.log(2 * np.pi * sn**2) - 0.5 * ((F - mean) / sn) ** 2)
            if reconstructions:
                pm.Deterministic("F_hat", features, dims=("trial", "force_dim"))
        if X is not None:
            Y = pm.Bernoulli("Y", p=h["phi"], dims=("feature", "pixel"))
            # log P(x = 0) = (z.y) log(1 - lam) + log(1 - eps); no underflow for many causes.
            log_q = pt.dot(Z, Y) * pt.log1p(-h["lam"]) + pt.log1p(-h["eps"])
            log_p1 = pt.log1mexp(log_q)
            pm.Bernoulli("X", logit_p=log_p1 - log_q, observed=X, dims=("trial", "pixel"))
            loglik += pt.sum(pt.where(X == 1, log_p1, log_q))
            if reconstructions:
                pm.Deterministic("X_prob", pt.exp(log_p1), dims=("trial", "pixel"))
        pm.Deterministic("loglik", loglik)
    # Plain pm.sample() hands the tagged latents to IBPGibbs, alpha to IBPAlphaGibbs and the
    # other hyperparameters with build_model's priors to IBPHyperGibbs (whose updates assume
    # those priors); fixed numbers and a user's own variables carry no tag.
    latents = {name: model[name] for name in ("Z", "pi", "A", "Y") if name in model.named_vars}
    tag_block(IBPGibbs.owns_block, **latents)
    with_prior = {name for name, value in hyper.items() if isinstance(value, str)}
    if "alpha" in with_prior:
        tag_block(IBPAlphaGibbs.owns_block, alpha=h["alpha"])
    learned = {
        name: model[name]
        for name in LEARNED_HYPER
        if name.removesuffix("2") in with_prior and model[name] in model.free_RVs
    }
    if learned:
        tag_block(IBPHyperGibbs.owns_block, **learned)
    return model


def sample(
    F=None,
    X=None,
    *,
    K_max: int = 10,
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
    log_likelihood: bool = True,
    reconstructions: bool | str = True,
    posterior_predictive: bool = True,
    check_convergence: bool = True,
    start: str = "auto",
    store="auto",
    conditional_log_likelihood: bool | None = None,
    initvals=None,
    **hyper,
):
    """Sample the IBP visuo-motor posterior with the specialised Gibbs step.

    :class:`~pmctx.steps.ibp_gibbs.IBPGibbs` updates ``Z, pi, A, Y``. Hyperparameters are
    learned unless passed as numbers: ``alpha`` by its conjugate Gamma update
    (:class:`~pmctx.steps.ibp_gibbs.IBPAlphaGibbs`), ``sigma_n^2, sigma_A^2, phi`` by
    conjugate draws and ``lam, eps`` by slice sampling
    (:class:`~pmctx.steps.ibp_gibbs.IBPHyperGibbs`); priors in
    :data:`pmctx.ibp.hyper.HYPER_PRIORS`.

    Parameters
    ----------
    F, X : array_like, optional
        Forces (N x D) and/or binary cues (N x T); see :func:`build_model`.
    K_max : int, default 10
        Truncation; a :class:`pmctx.TruncationWarning` says when it was too small.
    draws, tune, chains, cores, random_seed, progressbar, idata_kwargs
        As in ``pm.sample``, with its defaults (see :mod:`pmctx.sampling`).
    until_converged, max_draws, max_time
        Continue the same chains while the convergence check fails, up to ``max_draws``
        per chain (default ``3 * draws``) or ``max_time`` seconds (:mod:`pmctx.continuation`;
        needs ``check_convergence``); ``until_converged=False``: exactly ``draws``.
    log_likelihood : bool, default True
        Add the per-trial ``log_likelihood`` group with each trial's ``z_i`` summed out
        (``trial``, ``F`` given cues, ``X`` given forces; see :mod:`pmctx.ibp.marginal`),
        the one ``az.loo`` needs (``joint`` in float64, the parts in float32).
    reconstructions : bool or {"draws", "moments"}, default True
        Keep ``F_hat`` and ``X_prob``: per draw (float32) when each takes at most 256 MiB
        (``store="all"``: always), else their per-chain posterior mean and sd, accumulated
        while sampling, in the ``posterior_moments`` group; ``"draws"``/``"moments"`` force
        one, ``False`` leaves them out.
    posterior_predictive : bool, default True
        Add the ``posterior_predictive`` group (``F``, ``X`` redrawn, ``X`` as int8) for
        ``az.plot_ppc``, at every draw when its int64 draws take at most 64 MiB, else at
        evenly spaced draws that fit in it (``store="all"``: every draw, as ``az.loo_pit``
        needs).
        Predictions for new trials: :func:`predict`.
    check_convergence : bool, default True
        Warn :class:`pmctx.ConvergenceWarning` when ``n_active``, ``loglik`` or the
        reconstructions have R-hat > 1.01 or ESS < 100 per chain.
    start : {"auto", "subsample", "zero"}, default "auto"
        Where the chains start. ``"subsample"``: each chain from its own fit to a random
        subsample of 500 trials, extended to every trial
        (:func:`pmctx.ibp.start.subsample_start`; about 1-2 CPU s per chain); ``"zero"``:
        pm.sample's start, ``Z = 0``; ``"auto"``: ``"subsample"`` from
        ``SUBSAMPLE_START_MIN_TRIALS`` (500) trials on, else ``"zero"``. Only the start
        changes; the sampler is the same exact kernel, :class:`~pmctx.steps.ibp_gibbs.IBPGibbs`
        at its defaults (from 50 trials on, 5 birth/death proposals for small shared features
        per sweep, whatever the start; below 50 trials, enough sweeps per draw to visit 400
        rows, at most 16; from 5,000 trials on, two sweeps per draw). Why:
        :mod:`pmctx.ibp.start`.
    store : {"auto", "all"}, default "auto"
        How much to keep (:mod:`pmctx.ibp.storage`): ``"auto"`` keeps memory in proportion to
        what summaries, convergence checks, LOO and plots read (``Z`` and ``Y`` per draw as
        int8, big reconstructions as moments, a predictive at a subset of draws); ``"all"``
        every draw of everything. A :class:`pmctx.exceptions.MemoryWarning` says before
        sampling when the outputs would take over half the available memory. A path ending
        in ``".zarr"`` streams every draw of ``Z``, ``Y`` and the reconstructions to that
        Zarr store while sampling and returns the fit read lazily from it
        (:mod:`pmctx.streaming`).
    conditional_log_likelihood : bool, optional
        Keep the log-likelihood given each trial's sampled ``z_i`` (group
        ``conditional_log_likelihood``, not for LOO); default: with ``log_likelihood`` when
        it takes at most 64 MiB (or ``store="all"``).
    initvals : dict or list of dict, optional
        ``pm.sample``'s start values (one dict per chain), e.g. a warm start from the draws
        of an earlier fit (what :func:`pmctx.compare`'s refits use); replaces ``start``.
    **hyper
        Hyperparameters, as in :func:`build_model`.

    Returns
    -------
    xarray.DataTree
        ``posterior`` with ``Z, pi, A, Y`` and label-invariant ``n_active, loglik, F_hat,
        X_prob``; ``sample_stats`` with ``n_active, n_singletons, n_new_features,
        truncation_hit``.

    Notes
    -----
    At the default priors the posterior often holds one more feature than the data were
    generated with, owned by a single trial (a noisy trial it explains; the IBP expects about
    ``alpha`` of them). ``n_active - n_singletons`` counts the features two or more trials
    share. See the guide "IBP defaults" (docs/guides/ibp_defaults.md).

    Examples
    --------
    >>> from pmctx.ibp.data import visuomotor_data
    >>> data = visuomotor_data(n_trials=8, random_seed=1)
    >>> idata = sample(X=data.X, K_max=8, draws=20, tune=10, chains=1, random_seed=1,
    ...                check_convergence=False)
    >>> idata.posterior["Z"].shape
    (1, 20, 8, 8)
    """
    check_sample_kwargs(draws=draws, tune=tune, chains=chains, cores=cores)
    if start not in START_CHOICES:
        raise ValueError(f"start must be one of {START_CHOICES}; got {start!r}.")
    model = build_model(F, X, K_max=K_max, reconstructions=bool(reconstructions), **hyper)
    n_trials = dim_length(model, "trial")
    # On disk (store=<path>) the run has a fixed length: a Zarr store is written as it comes.
    until_converged = until_converged and store in ("auto", "all")
    room = planned_draws(draws, until_converged=until_converged, max_draws=max_draws,
                         judged=check_convergence)  # fmt: skip
    plan = storage_plan(
        model, draws=room, chains=chains, store=store, reconstructions=reconstructions,
        log_likelihood=log_likelihood, posterior_predictive=posterior_predictive,
        conditional_log_likelihood=conditional_log_likelihood,
    )  # fmt: skip
    if plan.path is None:  # on disk, memory holds one block of draws
        check_memory(model, plan, draws=room, chains=chains)
    trace = make_trace(model, plan, draws=room, chains=chains)
    subsample = start == "subsample" or (start == "auto" and n_trials >= SUBSAMPLE_START_MIN_TRIALS)
    if initvals is None and subsample:
        initvals = subsample_initvals(model, F, X, chains=chains, random_seed=random_seed)
    with model:
        steps = [IBPGibbs()]  # birth/death and sweeps per draw chosen from the trial count
        if model["alpha"] in model.free_RVs:
            steps.append(IBPAlphaGibbs())
        if any(n in model.named_vars and model[n] in model.free_RVs for n in LEARNED_HYPER):
            steps.append(IBPHyperGibbs())
    idata = run_sampler(
        model,
        step=steps,
        draws=draws,
        tune=tune,
        chains=chains,
        cores=cores,
        random_seed=random_seed,
        progressbar=progressbar,
        # finish() adds the log likelihoods (pm.sample computes none without the key)
        idata_kwargs={k: v for k, v in (idata_kwargs or {}).items() if k != "log_likelihood"},
        initvals=initvals,
        trace=trace,
        until_converged=until_converged,
        max_draws=max_draws,
        max_time=max_time,
        judge=convergence_judge(SPEC, check=check_convergence),
    )
    finish(idata, model, plan, trace, random_seed=random_seed)
    warn_if_truncated(idata, K_max=dim_length(model, "feature"), sweeps_per_draw=steps[0].sweeps)
    spec = with_disagreement_advice(SPEC, idata)  # the warning names split chains
    if plan.path is not None:  # every draw on disk, read lazily; convergence on what fits
        report_after_fit(idata, spec, check=False)
        report_after_fit(memory_view(idata), spec, check=check_convergence)
        return save_groups(idata, plan.path)
    report_after_fit(idata, spec, check=check_convergence)
    return idata


def predict(idata, new_data, *, random_seed=None, max_draws: int = 500) -> xr.Dataset:
    """Forces of new trials from their cues and/or cues of new trials from their forces.

    Exact enumeration of each new trial's features per posterior draw
    (:func:`pmctx.ibp.predict.predict`).

    Parameters
    ----------
    idata : xarray.DataTree
        A fit of :func:`sample`.
    new_data : mapping or xarray.Dataset
        ``{"X": cues (trial, pixel)}`` to predict the trials' forces, ``{"F": forces (trial,
        force_dim)}`` to predict their cue probabilities, or both.
    random_seed : int or numpy.random.Generator, optional
        Unused: the prediction is exact given the draws (accepted so every model's
        ``predict`` takes the same arguments).
    max_draws : int, default 500
        Posterior draws used (thinned evenly).

    Returns
    -------
    xarray.Dataset
        ``F`` (chain, draw, trial, force_dim) and/or ``X_prob`` (chain, draw, trial, pixel).

    Examples
    --------
    >>> from pmctx.ibp.data import visuomotor_data
    >>> data = visuomotor_data(n_trials=12, random_seed=0)
    >>> idata = sample(data.F[:10], data.X[:10], K_max=6, draws=20, tune=10, chains=1,
    ...                check_convergence=False, progressbar=False)  # doctest: +SKIP
    >>> predict(idata, {"X": data.X[10:]})["F"].dims  # doctest: +SKIP
    """
    from pmctx.ibp.predict import predict as _predict

    if not hasattr(new_data, "keys") or not {"X", "F"} & set(new_data.keys()):
        raise TypeError(
            "predict expected new_data as a mapping with 'X' (cues) and/or 'F' (forces), got "
            f"{type(new_data).__name__}. Pass e.g. {{'X': X_new}} to predict the forces of "
            "new trials from their cues."
        )
    X = new_data["X"] if "X" in new_data.keys() else None
    F = new_data["F"] if "F" in new_data.keys() else None
    return _predict(idata, X=X, F=F, max_draws=max_draws)


def invariants(idata):
    """Label-invariant quantities: ``n_active``, ``loglik`` and the reconstructions.

    Feature labels switch between chains, so ``Z``, ``A``, ``Y`` and ``pi`` are left out;
    ``F_hat = Z A`` and ``X_prob`` do not depend on the labels.

    Parameters
    ----------
    idata : xarray.DataTree
        A fit of :func:`sample`.

    Returns
    -------
    xarray.Dataset
        The quantities present among ``n_active``, ``loglik``, ``F_hat``, ``X_prob``.

    Examples
    --------
    >>> import arviz as az
    >>> idata = az.from_dict({"posterior": {"n_active": np.array([[2, 3]]),
    ...                                 "Z": np.zeros((1, 2, 4, 3))}})
    >>> sorted(invariants(idata).data_vars)
    ['n_active']
    """
    names = [v for v in ("n_active", "loglik", "F_hat", "X_prob") if v in idata.posterior]
    return idata.posterior.to_dataset()[names]


@demo_sections
def demo(out_dir, *, quick: bool = False, random_seed: int = 0, cores=None) -> list:
    """Fit the model to synthetic 6 x 6 bar cues with 2-D forces (four true contexts).

    Writes ``ibp_posterior.nc`` (with ``log_likelihood``), ``ibp_summary.csv`` (label-
    invariant quantities), ``ibp_diagnostics.csv``, ``ibp_trace.png``, ``ibp_n_active.png``
    and ``ibp_bases.png`` (posterior mean Y images and A vectors aligned to the true
    features); see :func:`pmctx.ibp.demo.run_demo`.
    """
    return run_demo(sample, out_dir, quick=quick, random_seed=random_seed, cores=cores)


@fit_with_sampler
def fit_data(data: dict, sample_kwargs: dict, **options):
    """:func:`sample` on a data dict ``{"F": ..., "X": ...}`` (either may be absent).

    Parameters
    ----------
    data : dict
        Validated data as :func:`pmctx.ibp.inputs.load_ibp` loads it, ``{"F": ..., "X": ...}``.
    **options
        Model options (see ``SPEC.options``).

    Returns
    -------
    xarray.DataTree
        The fit, as :func:`sample` returns it.

    Examples
    --------
    >>> from pmctx.ibp.data import visuomotor_data
    >>> data = visuomotor_data(n_trials=8, random_seed=1)
    >>> idata = fit_data({"X": data.X}, K_max=10, draws=20, tune=10, chains=1,
    ...                  random_seed=1, check_convergence=False, progressbar=False)
    >>> idata.posterior["Z"].shape
    (1, 20, 8, 10)
    """
    return sample(
        data.get("F"),
        data.get("X"),
        **sample_kwargs,
        **options,
    )


def kfold_functions(*, var_name: str = "joint", marginal_options=None, **sample_options):
    """``fit`` and ``log_predictive`` for the IBP visuo-motor model.

    ``fit`` runs :func:`sample` on the training trials with
    ``sample_options`` (``K_max``, ``draws``, ``tune``, hyperparameters, ...);
    ``log_predictive`` scores held-out trials with the integrated likelihood: ``joint``
    (the whole trial), ``F`` (forces given the trial's cues: the visuo-motor question) or
    ``X`` (cues given forces). Data: ``{"F": ..., "X": ...}`` (either may be left out).

    Parameters
    ----------
    var_name : {"joint", "F", "X"}, default "joint"
        What a held-out trial is scored on.
    marginal_options : dict, optional
        Options of the integrated likelihood (:mod:`pmctx.ibp.marginal`).
    **sample_options
        Passed to :func:`sample` for every refit.

    Returns
    -------
    tuple of callable
        ``(fit, log_predictive)`` for :func:`pmctx.kfold.kfold` and :func:`pmctx.kfold.reloo`
        (picklable, so refits can run on Dask workers).

    Examples
    --------
    >>> fit, log_predictive = kfold_functions(var_name="F", K_max=8, draws=200)
    >>> callable(fit) and callable(log_predictive)
    True
    """
    return kfold_pair(sample, var_name=var_name, marginal_options=marginal_options,
                      **sample_options)  # fmt: skip


def refit_functions(idata, *, var_name: str = "joint", draws: int = 250, tune: int = 100,
                    chains: int = 2, random_seed=0):  # fmt: skip
    """How :func:`pmctx.compare` refits an IBP fit exactly (the spec's ``refit`` hook).

    Each refit is a short run of :func:`sample` on the training trials, warm-started from the
    last draw of the full-data fit (its ``Z`` rows of the training trials, ``pi``, ``A``,
    ``Y`` and the learned hyperparameters), with the hyperparameters the fit fixed (its
    ``constant_data``) fixed again; held-out trials are scored by the integrated likelihood
    ``var_name`` (as :func:`kfold_functions`).

    Parameters
    ----------
    idata : xarray.DataTree
        A fit of :func:`sample` (with ``observed_data``).
    var_name : {"joint", "F", "X"}, default "joint"
        What a held-out trial is scored on.
    draws, tune, chains : int
        Of each refit (a warm start needs little tuning).
    random_seed : int, default 0
        Seed of every refit.

    Returns
    -------
    dict or None
        ``fit``, ``log_predictive``, ``data`` and ``method`` (:class:`pmctx.refit.Refitter`'s
        fields); ``None`` when the fit holds no observed data.

    Examples
    --------
    >>> import arviz as az, numpy as np
    >>> refit_functions(az.from_dict({"posterior": {"Z": np.zeros((1, 2, 3, 4))}})) is None
    True
    """
    return warm_refit(sample, idata, var_name=var_name, draws=draws, tune=tune, chains=chains,
                      random_seed=random_seed)  # fmt: skip


def _spec():
    from pmctx.ibp.inputs import load_ibp
    from pmctx.ibp.simulate import invariants as sbc_quantities
    from pmctx.ibp.simulate import simulate
    from pmctx.registry import ModelSpec

    return ModelSpec(
        name="ibp",
        summary="truncated IBP visuo-motor factorisation: forces F = ZA + noise, cues X by "
        "noisy-OR of ZY",
        module=__name__,
        load=load_ibp,
        fit=fit_data,
        invariants=invariants,
        write_outputs=write_outputs,
        demo=demo,
        simulate=simulate,
        sbc_quantities=sbc_quantities,
        predict=predict,
        kfold=kfold_functions,
        refit=refit_functions,
        comparisons={
            "joint": "each trial's forces and cues together, features integrated out: "
            "structure questions (which features, how many)",
            "F": "each trial's forces given its cues: the visuo-motor question (which model "
            "predicts the forces a context calls for)",
            "X": "each trial's cues given its forces",
        },
        population=("n_active", "alpha", "sigma_n", "sigma_A"),
        options={
            "K_max": "truncation level, number of feature columns (int, default 10)",
            "alpha": "IBP concentration (number, or 'prior': learned, the default)",
            "sigma_n": "force noise sd (number, or 'prior': learned, the default)",
            "sigma_A": "force-vector prior sd (number, or 'prior': learned, the default)",
            "phi": "prior probability of a basis pixel (number, or 'prior': the default)",
            "lam": "noisy-OR link strength (number, or 'prior': learned, the default)",
            "eps": "noisy-OR leak probability (number, or 'prior': learned, the default)",
            "start": "chain start: 'auto' (default: subsample fit from 500 trials on), "
            "'subsample', 'zero'",
        },
        advice="Run longer or with more chains; if chains disagree on "
        "n_active, they sit in different modes: fix sigma_n to the force noise or raise K_max",
        demo_seconds=(27, 6),
    )


#: The model's entry in the registry (:mod:`pmctx.registry`).
SPEC = _spec()

#: ``fit(data_path, *, out_dir="pmctx-fit", **kwargs)``: load a data file, fit, write the
#: files (:meth:`pmctx.registry.ModelSpec.fit_file`, what ``pmctx fit`` runs).
fit = SPEC.fit_file
