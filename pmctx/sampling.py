"""One sampling contract for every pmctx model: ``pm.sample``'s arguments and defaults.

Every model's ``sample``/``fit`` takes the keyword arguments of :func:`pymc.sample` that a
user sets most (``draws``, ``tune``, ``chains``, ``cores``, ``random_seed``, ``progressbar``,
``idata_kwargs``) with pm.sample's defaults (:data:`SAMPLE_DEFAULTS`), and runs through
:func:`run_sampler`, so that a fit means the same thing whichever model it is. Differences:

* ``progressbar=None`` (default) means "on in a terminal, off otherwise" (off in tests,
  notebooks run by nbclient and pipes; ``PMCTX_NO_PROGRESS=1`` turns it off everywhere).
* PyMC's own convergence checks are off; pmctx checks the label-invariant quantities of each
  model instead (:func:`pmctx.convergence.check_convergence`), because R-hat of
  label-switching latents (IBP ``Z``, CRP ``z``) is meaningless.
* ``cores=None`` (default) runs the chains in parallel on every CPU this process may use
  (:func:`usable_cores`: ``os.sched_getaffinity``, or ``PMCTX_CORES``), for pmctx's own
  steps and NUTS alike; PyMC's own default counts half the CPUs (it assumes hyper-threads),
  so on a 2-core machine it runs four chains one after another.

Examples
--------
>>> import pymc as pm
>>> from pmctx.sampling import SAMPLE_DEFAULTS, run_sampler
>>> SAMPLE_DEFAULTS["draws"], SAMPLE_DEFAULTS["tune"], SAMPLE_DEFAULTS["chains"]
(1000, 1000, 4)
>>> with pm.Model() as model:
...     mu = pm.Normal("mu")
>>> idata = run_sampler(model, draws=20, tune=20, chains=1, random_seed=0)
>>> idata.posterior["mu"].shape
(1, 20)
"""

# Long because the contract has one home: the keywords every model's sample/fit shares (their
# defaults, validation and docstring entry) and the one call of pm.sample that honours them.

from __future__ import annotations

import functools
import inspect
import os
from typing import Any

import pymc as pm

from pmctx.continuation import Budget, UntilConverged, first_draws_tree, record_outcome
from pmctx.memory import ChainTrace
from pmctx.points import initial_point
from pmctx.progress import progress_enabled
from pmctx.validation import check_int

__all__ = [
    "SAMPLE_DEFAULTS",
    "SAMPLE_KWARGS",
    "add_posterior_predictive",
    "check_sample_kwargs",
    "demo_sections",
    "dim_length",
    "fit_with_sampler",
    "run_sampler",
    "usable_cores",
    "variable_shape",
]

#: pm.sample's defaults for the arguments every pmctx ``sample``/``fit`` takes. PyMC 6's
#: ``tune=None`` takes the most any step method asks for (``default_tune_steps``), else 1000;
#: no step method of PyMC's or pmctx's asks, so pmctx says 1000.
SAMPLE_DEFAULTS: dict[str, Any] = {
    "draws": 1000,
    "tune": 1000,
    "chains": 4,
    "cores": None,
    "random_seed": None,
    "progressbar": None,
    "idata_kwargs": None,
    "until_converged": True,
    "max_draws": None,
    "max_time": None,
}

#: Their names, in the order every ``sample``/``fit`` signature lists them.
SAMPLE_KWARGS = tuple(SAMPLE_DEFAULTS)


def fit_with_sampler(fit):
    """Give a model's ``fit(data, sample_kwargs, **options)`` the public signature
    ``fit(data, *, draws, tune, chains, cores, random_seed, progressbar, idata_kwargs,
    **options)``, with :data:`SAMPLE_DEFAULTS`: the keywords are declared once, here, and so
    is their entry in the docstring's Parameters section (:data:`SAMPLER_PARAMETERS`, put
    after ``data``).

    Parameters
    ----------
    fit : callable
        ``fit(data, sample_kwargs: dict, [named options, ]**options)``; ``sample_kwargs``
        holds the sampler keywords (passed by position, so a model option may be called
        ``sampler``, as the orientation map's is); named options after it become
        keyword-only.

    Returns
    -------
    callable
        The public fit (``inspect.signature`` shows the keywords and their defaults).

    Examples
    --------
    >>> @fit_with_sampler
    ... def fit(data, sample_kwargs, **options):
    ...     return sample_kwargs["draws"], options
    >>> fit({}, draws=10, alpha=1.0)
    (10, {'alpha': 1.0})
    >>> str(inspect.signature(fit)).split(", ")[:3]
    ['(data', '*', 'draws=1000']
    """

    @functools.wraps(fit)
    def public(data, **kwargs):
        sample_kwargs = {
            name: kwargs.pop(name, default) for name, default in SAMPLE_DEFAULTS.items()
        }
        return fit(data, sample_kwargs, **kwargs)

    params = list(inspect.signature(fit).parameters.values())
    keywords = [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default)
        for name, default in SAMPLE_DEFAULTS.items()
    ]
    named = [
        p.replace(kind=inspect.Parameter.KEYWORD_ONLY)
        for p in params[2:]
        if p.kind is not inspect.Parameter.VAR_KEYWORD
    ]
    options = [p for p in params if p.kind is inspect.Parameter.VAR_KEYWORD]
    public.__signature__ = inspect.Signature([params[0], *keywords, *named, *options])
    public.__doc__ = _with_sampler_parameters(fit.__doc__)
    return public


#: The Parameters entry of the sampler keywords, shared by every model's ``fit``.
SAMPLER_PARAMETERS = (
    "draws, tune, chains, cores, random_seed, progressbar, idata_kwargs",
    "    As in :func:`pymc.sample` (same defaults).",
    "until_converged : bool, default True",
    "    While the fit's own convergence report fails after ``draws``, the same chains go on",
    "    in blocks of ``draws // 2`` until it passes or the budget ends",
    "    (:mod:`pmctx.continuation`); ``False``: exactly ``draws``.",
    "max_draws : int, optional",
    "    Most draws per chain when continuing; default ``3 * draws``.",
    "max_time : float, optional",
    "    Seconds after which no further block starts; default no limit.",
)


def _with_sampler_parameters(doc: str | None) -> str | None:
    """``doc`` (cleaned) with :data:`SAMPLER_PARAMETERS` after its first parameter entry."""
    if not doc or SAMPLER_PARAMETERS[0] in doc:
        return doc
    lines = inspect.cleandoc(doc).splitlines()
    try:
        start = lines.index("Parameters") + 2
    except ValueError:
        return doc
    headers = (i for i in range(start, len(lines) - 1) if set(lines[i + 1]) == {"-"})
    end = next(headers, len(lines))
    while end > start and not lines[end - 1]:
        end -= 1
    entries = [i for i in range(start, end) if lines[i] and not lines[i][0].isspace()]
    at = entries[1] if len(entries) > 1 else end
    while not lines[at - 1]:
        at -= 1
    return "\n".join([*lines[:at], *SAMPLER_PARAMETERS, *lines[at:]])


#: The sections every model's ``demo(out_dir, *, quick, random_seed, cores)`` documents.
DEMO_SECTIONS = """
Parameters
----------
out_dir : path-like
    Output folder.
quick : bool, default False
    Small sizes and short chains (seconds), for a first look and the tests.
random_seed : int, default 0
    Seed of the simulated data and the sampler.
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


def demo_sections(demo):
    """Complete a model's ``demo`` docstring (what it fits and writes) with the sections
    every demo shares (:data:`DEMO_SECTIONS`), so they are written once.

    Parameters
    ----------
    demo : callable
        ``demo(out_dir, *, quick=False, random_seed=0, cores=None) -> list[Path]`` whose
        docstring says what it fits and writes.

    Returns
    -------
    callable
        ``demo``, its docstring completed.

    Examples
    --------
    >>> @demo_sections
    ... def demo(out_dir, *, quick=False, random_seed=0, cores=None):
    ...     \"\"\"Fit a toy model.\"\"\"
    >>> "cores : int, optional" in demo.__doc__
    True
    """
    demo.__doc__ = inspect.cleandoc(demo.__doc__ or "") + "\n" + DEMO_SECTIONS
    return demo


def dim_length(model: pm.Model, name: str) -> int:
    """The length of ``model``'s dim ``name``, read without compiling a function.

    ``model.dim_lengths[name].eval()`` compiles a PyTensor function on every call.

    Parameters
    ----------
    model : pm.Model
        A model with the dim.
    name : str
        The dim's name.

    Returns
    -------
    int

    Examples
    --------
    >>> import pymc as pm
    >>> with pm.Model(coords={"trial": range(3)}) as model:
    ...     pass
    >>> dim_length(model, "trial")
    3
    """
    length = model.dim_lengths[name]
    if hasattr(length, "get_value"):  # a shared variable: coords that may change
        return int(length.get_value())
    if hasattr(length, "data"):  # a constant
        return int(length.data)
    return int(length.eval())


def variable_shape(model: pm.Model, name: str) -> tuple[int, ...]:
    """The shape of ``model[name]`` from its named dims or static type, compiling nothing
    unless neither gives it.

    ``model[name].shape.eval()`` compiles the variable's whole graph (the von Mises map's
    ``o``: 6 s in the demo, most of it PyTensor reading its compile cache, which a process's
    first compile does).

    Parameters
    ----------
    model : pm.Model
        The model.
    name : str
        A variable of it.

    Returns
    -------
    tuple of int

    Examples
    --------
    >>> import pymc as pm
    >>> with pm.Model(coords={"row": range(2), "col": range(3)}) as model:
    ...     x = pm.Normal("x", dims=("row", "col"))
    >>> variable_shape(model, "x")
    (2, 3)
    """
    var = model[name]
    dims = model.named_vars_to_dims.get(name) or ()
    if len(dims) == var.ndim and all(dim in model.dim_lengths for dim in dims):
        return tuple(dim_length(model, dim) for dim in dims)
    if all(size is not None for size in var.type.shape):
        return tuple(int(size) for size in var.type.shape)
    return tuple(int(size) for size in var.shape.eval())


def usable_cores() -> int:
    """CPUs this process may run on: ``PMCTX_CORES`` when set, else the affinity mask.

    ``PMCTX_CORES`` caps parallel chains where something else already uses the CPUs (the test
    suite sets it to 1 because pytest-xdist runs one test per CPU).

    Returns
    -------
    int
        At least 1.

    Raises
    ------
    ValueError
        When ``PMCTX_CORES`` is set to something other than a positive integer.

    Examples
    --------
    >>> usable_cores() >= 1
    True
    """
    text = os.environ.get("PMCTX_CORES", "").strip()
    if text:
        if not text.isdigit() or int(text) < 1:
            raise ValueError(
                f"PMCTX_CORES must be a positive integer (the CPUs chains may use), got "
                f"{text!r}; unset it to use every CPU this process may run on."
            )
        return int(text)
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except AttributeError:  # macOS and Windows have no affinity mask
        return os.cpu_count() or 1


def check_sample_kwargs(*, draws, tune, chains, cores=None, progressbar=None) -> dict:
    """Validate the sampling arguments at the public boundary; returns them cleaned.

    Parameters
    ----------
    draws : int
        Kept draws per chain, at least 1.
    tune : int
        Tuning iterations per chain, at least 0.
    chains : int
        Number of chains, at least 1.
    cores : int, optional
        Parallel processes, at least 1; ``None``: one per chain, up to :func:`usable_cores`.
    progressbar : bool, optional
        ``None``: on in a terminal, off otherwise (see :func:`pmctx.progress.progress_enabled`).

    Returns
    -------
    dict
        ``draws, tune, chains, cores`` as Python ints and ``progressbar`` as a bool, ready for
        ``pm.sample``.

    Raises
    ------
    ValueError, TypeError
        When a count is negative, zero where it must be positive, or not an integer.

    Examples
    --------
    >>> check_sample_kwargs(draws=10, tune=0, chains=2)["chains"]
    2
    """
    chains = check_int(chains, "chains", minimum=1)
    cleaned = {
        "draws": check_int(draws, "draws", minimum=1),
        "tune": check_int(tune, "tune", minimum=0),
        "chains": chains,
        "cores": (
            min(chains, usable_cores()) if cores is None else check_int(cores, "cores", minimum=1)
        ),
        "progressbar": progress_enabled(None if progressbar is None else not progressbar),
    }
    return cleaned


def _compile_kernels_before_forking(model: pm.Model, step, *, chains: int, cores: int) -> None:
    """Run one throwaway step of each pmctx step (on a copy) in this process before
    ``pm.sample`` forks its chain processes, so that they inherit the compiled Numba kernels.

    Otherwise every chain process compiles the same kernels, or loads them from the cache, on
    its own: on an empty cache the IBP sweep alone compiles for about 20 s per process. The
    copy keeps the step's own state untouched; ``pm.sample`` gives each chain its own random
    generator. A failure here is left for the real run to report.
    """
    import copy
    import multiprocessing

    if (
        chains < 2
        or cores < 2
        or multiprocessing.get_start_method(allow_none=True)
        not in (
            None,
            "fork",
        )
    ):
        return
    steps = [] if step is None else (list(step) if isinstance(step, list | tuple) else [step])
    # pmctx's steps by module (pmctx.steps sits above this layer): their kernels are Numba's.
    ours = [s for s in steps if type(s).__module__.startswith("pmctx.")]
    if not ours:
        return
    try:
        point = initial_point(model)
        for s in ours:
            copy.deepcopy(s).step(dict(point))
    except Exception:  # only a warm-up: the sampler itself reports errors
        return


def _nutpie_may_run(model: pm.Model, step, pm_kwargs) -> bool:
    """Whether ``pm.sample`` may choose nutpie itself (PyMC 6 does for a model NUTS samples
    whole when ``nuts_sampler`` is not given): a trace given to it would force PyMC's NUTS."""
    if pm_kwargs.get("nuts_sampler") is not None or step is not None:
        return False
    return all(v.dtype.startswith("float") for v in model.value_vars)


def run_sampler(
    model: pm.Model,
    *,
    step=None,
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
    judge=None,
    **pm_kwargs,
):
    """Run ``pm.sample`` on ``model`` under the pmctx sampling contract.

    Parameters
    ----------
    model : pm.Model
    step : step method or list, optional
        pmctx steps for the latents they own; PyMC assigns the rest.
    draws, tune, chains, cores, random_seed, idata_kwargs
        As in :func:`pymc.sample` (same defaults); ``idata_kwargs["log_likelihood"]`` (True or
        a list of observed names) adds that group after sampling.
    progressbar : bool, optional
        ``None``: on in a terminal, off otherwise.
    until_converged, max_draws, max_time
        Continue the same chains while ``judge`` fails (:mod:`pmctx.continuation`); without
        a ``judge``, or when nutpie runs the model, the run has a fixed length.
    judge : callable, optional
        ``judge(tree) -> pandas.DataFrame``: the model's convergence report of a tree of
        draws (``pmctx.convergence.convergence_report`` of its label-invariant quantities).
        A trace given in ``pm_kwargs`` must hold ``max_draws`` draws per chain.
    **pm_kwargs
        Passed to :func:`pymc.sample` (``initvals``, ``target_accept``, ``init``, ...).

    Returns
    -------
    xarray.DataTree
        ``pm.sample``'s result (``posterior``, ``sample_stats``, ``observed_data``), with a
        ``log_likelihood`` group when ``idata_kwargs`` asks for one: PyMC 6 deprecates
        computing it inside ``pm.sample``, so it is computed here afterwards.

    Examples
    --------
    >>> import pymc as pm
    >>> from pmctx.io import add_log_likelihood
    >>> with pm.Model() as model:
    ...     mu = pm.Normal("mu")
    ...     y = pm.Normal("y", mu, 1.0, observed=[0.1, -0.3, 0.4])
    >>> idata = run_sampler(model, draws=20, tune=20, chains=1, random_seed=0, progressbar=False)
    >>> idata = add_log_likelihood(idata, model)
    >>> idata.posterior["mu"].shape, "log_likelihood" in idata.children
    ((1, 20), True)
    """
    kwargs = check_sample_kwargs(
        draws=draws, tune=tune, chains=chains, cores=cores, progressbar=progressbar
    )
    pm_kwargs.setdefault("compute_convergence_checks", False)
    # PyMC 6 deprecates computing the log-likelihood through idata_kwargs (a FutureWarning):
    # the same group is computed after sampling, from the same draws.
    idata_kwargs = dict(idata_kwargs or {})
    log_likelihood = idata_kwargs.pop("log_likelihood", False)
    if (
        kwargs["chains"] > 1
        and not {"trace", "var_names"} & pm_kwargs.keys()
        and pm_kwargs.get("nuts_sampler") in (None, "pymc")
        and not _nutpie_may_run(model, step, pm_kwargs)
    ):
        # One trace for pm.sample to copy per chain: by default it compiles the same
        # recording function once per chain (about 0.15 s each on a 2-core machine).
        try:
            point = initial_point(model)
        except Exception:  # no default start (the user's initvals give one): PyMC's traces
            point = None
        if point is not None:
            pm_kwargs["trace"] = ChainTrace(model=model, test_point=point)
    budget = Budget.from_options(
        kwargs["draws"], until_converged=until_converged, max_draws=max_draws, max_time=max_time
    )
    stopper = None
    if budget is not None and judge is not None and not _nutpie_may_run(model, step, pm_kwargs):
        stopper = _until_converged(model, budget, kwargs, pm_kwargs, judge)
    with model:
        _compile_kernels_before_forking(model, step, chains=kwargs["chains"], cores=kwargs["cores"])
        idata = pm.sample(
            step=step,
            random_seed=random_seed,
            idata_kwargs=idata_kwargs,
            **kwargs,
            **pm_kwargs,
        )
    if stopper is not None and stopper.kept is not None and "posterior" in idata.children:
        idata = idata.isel(draw=slice(0, stopper.kept), missing_dims="ignore")
    record_outcome(idata, stopper, draws=budget.draws if stopper else kwargs["draws"])
    if log_likelihood:
        pm.compute_log_likelihood(
            idata,
            var_names=None if log_likelihood is True else list(log_likelihood),
            model=model,
            extend_inferencedata=True,
            progressbar=False,
        )
    return idata


def _until_converged(model, budget, kwargs, pm_kwargs, judge) -> UntilConverged:
    """Ask ``pm.sample`` for the whole budget with a callback that stops it (in place)."""
    tune = kwargs["tune"]
    stopper = UntilConverged(
        budget,
        tune=tune,
        chains=kwargs["chains"],
        first_draws=lambda traces, n: first_draws_tree(model, traces, tune, n),
        judge=judge,
        show=kwargs["progressbar"],
    )
    kwargs["draws"] = budget.max_draws
    if kwargs["chains"] > 1:  # every chain must reach a checkpoint before the check runs
        kwargs["cores"] = kwargs["chains"]
    trace = pm_kwargs.get("trace")
    if trace is not None and hasattr(trace, "checkpoints"):
        trace.checkpoints = budget.checkpoints
    user_callback = pm_kwargs.get("callback")
    if user_callback is None:
        pm_kwargs["callback"] = stopper
    else:

        def both(trace, draw):
            user_callback(trace=trace, draw=draw)
            stopper(trace, draw)

        pm_kwargs["callback"] = both
    return stopper


def add_posterior_predictive(idata, model: pm.Model, *, random_seed=None, var_names=None):
    """Add a ``posterior_predictive`` group (observed variables redrawn at every posterior
    draw), so that ``az.plot_ppc_dist`` and ``az.loo_pit`` work; returns ``idata``.

    Skips when the group is already there or the model has no observed variables.

    Parameters
    ----------
    idata : xarray.DataTree
        A fit of ``model`` with a ``posterior`` group; extended in place.
    model : pm.Model
        The model that produced ``idata``.
    random_seed : int, optional
        Seed of the predictive draws.
    var_names : list of str, optional
        Variables to redraw; default: every observed variable of ``model``.

    Returns
    -------
    xarray.DataTree
        ``idata`` itself, now with a ``posterior_predictive`` group.

    Examples
    --------
    >>> import arviz as az, numpy as np, pymc as pm
    >>> with pm.Model() as model:
    ...     mu = pm.Normal("mu")
    ...     y = pm.Normal("y", mu, 1.0, observed=[0.1, -0.3, 0.4])
    >>> idata = az.from_dict({"posterior": {"mu": np.zeros((1, 5))}})
    >>> idata = add_posterior_predictive(idata, model, random_seed=0)
    >>> idata.posterior_predictive["y"].shape
    (1, 5, 3)
    """
    if "posterior_predictive" in idata.children:
        return idata
    names = var_names or [rv.name for rv in model.observed_RVs]
    if not names:
        return idata
    pm.sample_posterior_predictive(
        idata,
        model=model,
        var_names=names,
        extend_inferencedata=True,
        random_seed=random_seed,
        progressbar=False,
    )
    return idata
