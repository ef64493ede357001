"""NUTS for a GUM: PyMC's sampler with the Laplace metric, or nutpie (whitened or low-rank).

Products of functions have secondary modes and curved posteriors (see
:func:`pmctx.gum.laplace.laplace_fit`): with ``init_at_map`` every chain starts at the
multi-start Laplace MAP, and ``target_accept`` defaults to 0.9 rather than ``pm.sample``'s
0.8, which diverges on them. PyMC's NUTS then uses the Laplace posterior
covariance as its dense mass matrix (only the step size is tuned), i.e. it samples in
whitened coordinates: on seed 002 section 3.1 at N=500 that takes 15 instead of ~127 leapfrog
steps per draw (``benchmarks/bench_gum.py``). It applies when every free variable is in the
Laplace vector (not with sampled lengthscales, dispersions or random-effect sds) and no
``step`` is given. nutpie (:mod:`pmctx.gum.backends`) samples the Laplace-whitened model
(:mod:`pmctx.gum.whiten`) with a diagonal mass matrix under the same conditions, otherwise
the plain model with its low-rank mass matrix; the compiled model is kept on the GUM, so
repeat calls do not compile again.

:func:`sample` is :meth:`pmctx.gum.GumModel.sample` (the class binds it; ``self`` is the
model).

Examples
--------
>>> import numpy as np
>>> from pmctx.gum import gum
>>> rng = np.random.default_rng(0)
>>> data = {"x": rng.uniform(0, 2, 30)}
>>> data["y"] = rng.poisson(np.exp(np.sin(data["x"])))
>>> g = gum("y ~ f(x, lengthscale=0.5)", data, family="poisson")
>>> laplace_potential(g).__class__.__name__
'QuadPotentialFull'
"""

from __future__ import annotations

import logging

import numpy as np
import pymc as pm

from pmctx.gum.coordinates import free_dispersion
from pmctx.memory import LOG_LIKELIHOOD_BYTES, format_bytes
from pmctx.progress import progress_enabled
from pmctx.sampling import SAMPLE_DEFAULTS
from pmctx.validation import check_probability

__all__ = ["laplace_potential", "nutpie_model", "sample"]

_log = logging.getLogger(__name__)


def nutpie_model(gum_model, whiten: bool, init_at_map: bool):
    """The model nutpie samples, compiled once per model, Laplace fit and kind.

    Parameters
    ----------
    gum_model : pmctx.gum.GumModel
        The model; the compiled models are kept on it.
    whiten : bool
        Sample the Laplace-whitened model when possible.
    init_at_map : bool
        Start at the Laplace MAP.

    Returns
    -------
    target : pymc.Model or None
        The model sampled (whitened or plain); None when the whitened model's compiled
        code and arrays were read from disk (:mod:`pmctx.gum.recipes`) without building it.
    compiled : object
        nutpie's compiled model.
    white : bool
        Whether ``target`` is the whitened model.
    """
    from pmctx.gum.backends import compile_nutpie
    from pmctx.gum.recipes import load_white, store_white
    from pmctx.gum.whiten import laplace_frame

    start = init_at_map and not free_dispersion(gum_model.design)
    frame = laplace_frame(gum_model) if whiten and start else None
    white = frame is not None
    kind = "white" if white else ("map" if start else "plain")
    model, result = gum_model.model, gum_model.laplace_result
    cached = gum_model._nutpie.get(kind)
    if cached is None or cached[0] is not model or cached[1] is not result:
        key = _white_key(gum_model, frame) if white else None
        compiled = None if key is None else load_white(key)
        target = None  # not built when the whitened model's code came from disk
        if compiled is None:
            target = gum_model.whitened_model if white else model
            point = gum_model.map_point() if kind == "map" else None
            compiled = compile_nutpie(target, point, cached=white)
            if key is not None and getattr(compiled, "recipe", None) is not None:
                store_white(key, compiled.recipe)
        cached = (model, result, compiled, target)
        gum_model._nutpie[kind] = cached
    return cached[3], cached[2], kind == "white"


def _white_key(gum_model, frame):
    """:func:`pmctx.gum.recipes.white_key`, or None (logged) when it fails: the model is then
    compiled as without a stored recipe."""
    from pmctx.gum.recipes import white_key

    try:
        return white_key(gum_model, frame)
    except Exception as err:  # a PyTensor/PyMC release changed what the fingerprint reads
        _log.warning("no stored whitened model (%s: %s); compiling it", type(err).__name__, err)
        return None


def laplace_potential(gum_model):
    """Dense NUTS metric from the Laplace covariance, in the model's variable order.

    Parameters
    ----------
    gum_model : pmctx.gum.GumModel
        The model (its Laplace fit is run when missing).

    Returns
    -------
    pymc.step_methods.hmc.quadpotential.QuadPotentialFull or None
        None when a free variable is outside the Laplace vector (sampled hyperparameter).
    """
    from pymc.step_methods.hmc.quadpotential import QuadPotentialFull

    result = gum_model.laplace_result or gum_model.fit_laplace()
    _, cov, slices = gum_model._model_coordinates(result.u_map, result.cov)
    order = []
    for var in gum_model.model.value_vars:
        label = var.name.removesuffix("_z")
        if not var.name.endswith("_z") or label not in slices:
            return None  # a variable outside the Laplace vector (sampled hyperparameter)
        order.extend(range(slices[label].start, slices[label].stop))
    if sorted(order) != list(range(cov.shape[0])):
        return None
    index = np.asarray(order)
    return QuadPotentialFull(cov[np.ix_(index, index)])


def sample(
    self,
    *,
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
    init_at_map=True,
    posterior_predictive: bool = True,
    check_convergence: bool = True,
    backend: str = "auto",
    whiten: bool = True,
    log_likelihood="auto",
    **kwargs,
):
    """NUTS via ``pm.sample`` or nutpie, with ``log_likelihood`` and
    ``posterior_predictive`` groups (how and why: the module doc); ``GumModel.sample``.

    Parameters
    ----------
    draws, tune, chains, cores, random_seed, progressbar, idata_kwargs
        As in :func:`pymc.sample` (same defaults); the ``log_likelihood`` group is added
        unless ``idata_kwargs={"log_likelihood": False}`` (computed after the posterior
        predictive, by the design's NumPy likelihood: float32 once float64 would pass
        :data:`pmctx.memory.PER_DRAW_BYTES`).
    until_converged, max_draws, max_time
        Continue the same chains while the convergence check fails, up to ``max_draws``
        per chain (default ``3 * draws``) or ``max_time`` seconds (:mod:`pmctx.continuation`;
        needs ``check_convergence``; nutpie's chains too); ``until_converged=False``:
        exactly ``draws``.
    init_at_map : bool, default True
        Start every chain at the multi-start Laplace MAP (``target_accept`` defaults to
        0.9).
    posterior_predictive : bool, default True
        Add the ``posterior_predictive`` group (responses redrawn at the data).
    check_convergence : bool, default True
        Warn :class:`pmctx.ConvergenceWarning` when function values or hyperparameters
        have not converged.
    backend : {"auto", "pymc", "nutpie"}, default "auto"
        ``"auto"`` takes nutpie (low-rank mass matrix) for long runs when it is installed
        and no :func:`pymc.sample`-only argument is given, else PyMC (the rule and its
        timings: :mod:`pmctx.gum.backends`).
    whiten : bool, default True
        nutpie: sample :attr:`whitened_model` with a diagonal mass matrix when
        ``init_at_map`` and every free variable is in the Laplace vector.
    log_likelihood : {"auto", "all"}, int or False, default "auto"
        Draws of the pointwise ``log_likelihood`` group: ``"auto"`` every draw while the
        float32 array fits :data:`pmctx.memory.LOG_LIKELIHOOD_BYTES` (1 GiB), else every k-th
        draw, the smallest k that fits (an INFO log line and ``log_likelihood.attrs["thin"]``
        say so; ``az.loo`` reads it as is); ``"all"`` every draw; an integer k every k-th
        draw; False none (as ``idata_kwargs={"log_likelihood": False}``).
    **kwargs
        Passed to :func:`pymc.sample` (``target_accept``, ``step``, ``initvals``, ...).

    Returns
    -------
    xarray.DataTree
        ``posterior`` (function values on their grids, offsets, intercept, hyper-
        parameters), ``sample_stats``, ``log_likelihood``, ``posterior_predictive``.

    Examples
    --------
    >>> from pmctx.gum import gum
    >>> rng = np.random.default_rng(0)
    >>> data = {"x": rng.uniform(0, 2, 30)}
    >>> data["y"] = rng.poisson(np.exp(np.sin(data["x"])))
    >>> g = gum("y ~ f(x, lengthscale=0.5)", data, family="poisson")
    >>> idata = g.sample(draws=200, tune=200, chains=2)  # doctest: +SKIP
    """
    from pmctx.continuation import Budget, UntilConverged, planned_draws, record_outcome
    from pmctx.convergence import convergence_judge, report_after_fit
    from pmctx.gum.backends import add_log_likelihood_group, choose_backend, sample_nutpie
    from pmctx.gum.outputs import check_fit_memory, convergence_check, log_likelihood_thin
    from pmctx.sampling import run_sampler

    def predictive(idata):  # before the log-likelihood, the biggest array: lower peak memory
        if posterior_predictive:
            self.add_posterior_predictive(idata, random_seed=random_seed)

    room = planned_draws(draws, until_converged=until_converged, max_draws=max_draws,
                         judged=check_convergence)  # fmt: skip
    keep = "auto" if log_likelihood is True else log_likelihood
    thin = 0
    if keep is not False:
        thin = log_likelihood_thin(self.design.n_obs, draws=room, chains=chains, keep=keep)
    if not {"log_likelihood": True, **(idata_kwargs or {})}["log_likelihood"]:
        thin = 0
    if thin > 1 and keep == "auto":
        _log.info(
            "GUM NUTS fit: the pointwise log-likelihood (%d rows x %d x %d draws, float32) "
            "would pass pmctx.memory.LOG_LIKELIHOOD_BYTES (%s); it is kept at one draw in %d "
            "(log_likelihood.attrs['thin']); log_likelihood='all' keeps every draw.",
            self.design.n_obs, chains, room, format_bytes(LOG_LIKELIHOOD_BYTES), thin,
        )  # fmt: skip
    check_fit_memory(self.design, draws=room, chains=chains, log_likelihood_thin=thin,
                     posterior_predictive=posterior_predictive)  # fmt: skip
    # nutpie takes target_accept; PyMC's init (jitter, mass-matrix start) has no nutpie
    # counterpart, so a user's init sends "auto" to PyMC instead of being dropped.
    nutpie_ok = {"target_accept", "compute_convergence_checks"}
    chosen = choose_backend(
        backend, draws=draws, tune=tune, chains=chains, pymc_only=bool(set(kwargs) - nutpie_ok)
    )
    target_accept = check_probability(kwargs.pop("target_accept", 0.9), "target_accept")
    if chosen == "nutpie":
        from pmctx.gum.whiten import WHITE_DIM, WHITE_NAME

        budget = Budget.from_options(
            draws, until_converged=until_converged, max_draws=max_draws, max_time=max_time
        )
        judge = convergence_judge(convergence_check(), check=check_convergence)
        until = None
        if budget is not None and judge is not None:
            show = progress_enabled(None if progressbar is None else not progressbar)
            until = UntilConverged(
                budget, tune=tune, chains=chains, first_draws=None, judge=judge, show=show
            )

        target, compiled, white = nutpie_model(self, whiten, init_at_map)
        idata = sample_nutpie(
            self.model if target is None else target,
            draws=draws,
            tune=tune,
            chains=chains,
            cores=cores,
            random_seed=random_seed,
            progressbar=progressbar,
            observed={self.design.response: self.design.y},
            compiled=compiled,
            low_rank=not white,
            target_accept=target_accept,
            loglik_model=self.model,
            log_likelihood=self.log_likelihood_draws,
            log_likelihood_thin=thin,
            drop=(WHITE_NAME, WHITE_DIM),
            before_log_likelihood=predictive,
            until=until,
        )
        record_outcome(idata, until, draws=draws)
        report_after_fit(idata, convergence_check(), check=check_convergence)
        return idata
    if init_at_map and not free_dispersion(self.design):
        kwargs.setdefault("initvals", self.map_point())
        kwargs.setdefault("init", "adapt_diag")
        if "step" not in kwargs:
            potential = laplace_potential(self)
            if potential is not None:
                with self.model:
                    kwargs["step"] = pm.NUTS(potential=potential, target_accept=target_accept)
    if "step" not in kwargs:
        kwargs["target_accept"] = target_accept
    idata = run_sampler(
        self.model,
        draws=draws,
        tune=tune,
        chains=chains,
        cores=cores,
        random_seed=random_seed,
        progressbar=progressbar,
        # the group is added below (thinned); PyMC 6 warns on any log_likelihood key here
        idata_kwargs={k: v for k, v in (idata_kwargs or {}).items() if k != "log_likelihood"},
        until_converged=until_converged,
        max_draws=max_draws,
        max_time=max_time,
        judge=convergence_judge(convergence_check(), check=check_convergence),
        **kwargs,
    )
    predictive(idata)
    if thin:
        add_log_likelihood_group(idata, self.model, self.log_likelihood_draws, thin=thin)
    report_after_fit(idata, convergence_check(), check=check_convergence)
    return idata
