"""Which NUTS implementation runs a GUM: PyMC's, or nutpie's Rust sampler when installed.

PyMC's NUTS spends most of its time in Python per leapfrog step; nutpie runs the whole tree
in Rust around a Numba-compiled log density, and its low-rank mass-matrix adaptation learns
the correlations of products of functions that the Laplace metric gives PyMC.

:meth:`GumModel.sample` gives nutpie the Laplace-whitened model (:mod:`pmctx.gum.whiten`)
with a diagonal mass matrix when it applies and keeps the compiled model on the ``GumModel``
for repeat calls. The whitened model's two nutpie callbacks come from :mod:`pmctx.gum.cached`
(Numba code on PyTensor's disk cache, keyed by structure and shapes, not data), so only the
first process that meets a structure and N compiles them; the ``log_likelihood`` group comes
from the design's NumPy likelihood (:meth:`GumModel.log_likelihood_draws`), with no PyTensor
compile; sparse bases are read by one lookup per non-zero column
(:func:`pmctx.gum.build.sparse_product`). ``benchmarks/bench_gum_samplers.py`` times every
back end and ``g.sample()`` (first call, repeat call, HSGP, a fresh process) at N=500 and
N=10,000 (``benchmarks/results/gum_samplers.json``).

Rule of ``backend="auto"`` (the default of :meth:`GumModel.sample`): nutpie with the low-rank
mass matrix (the whitened model with a diagonal one when it applies) when nutpie is installed
(a dependency of pmctx), no ``step`` or other
PyMC-only argument is given, and the run has at least :data:`NUTPIE_MIN_ITERATIONS`
iterations over all chains (``chains * (draws + tune)``); otherwise ``pm.sample`` (NUMBA mode
when PyTensor has no BLAS, :func:`pmctx.sampling.run_sampler`).

Examples
--------
>>> from pmctx.gum.backends import choose_backend
>>> choose_backend("auto", draws=10, tune=10, chains=1, pymc_only=False)
'pymc'
"""

from __future__ import annotations

import importlib.util
import time
import warnings

import numpy as np
import pymc as pm

from pmctx.continuation import nutpie_until_converged
from pmctx.exceptions import PmctxWarning
from pmctx.progress import progress_enabled
from pmctx.trees import set_group
from pmctx.validation import check_choice

__all__ = [
    "BACKENDS",
    "NUTPIE_MIN_ITERATIONS",
    "CompileFallbackWarning",
    "add_log_likelihood_group",
    "choose_backend",
    "compile_nutpie",
    "nutpie_available",
    "sample_nutpie",
]

BACKENDS = ("auto", "pymc", "nutpie")

#: Below this many iterations (all chains) nutpie's compile (up to ~6 s against pm.sample's
#: ~3.5 s) outweighs its faster sampling (~3x less CPU per iteration at N=500).
NUTPIE_MIN_ITERATIONS = 4000


def nutpie_available() -> bool:
    """Whether the optional nutpie sampler is installed.

    Returns
    -------
    bool
        True when ``import nutpie`` would succeed.
    """
    return importlib.util.find_spec("nutpie") is not None


def choose_backend(backend: str, *, draws: int, tune: int, chains: int, pymc_only: bool) -> str:
    """Resolve ``backend`` (``"auto"``, ``"pymc"`` or ``"nutpie"``) by the rule above.

    ``pymc_only`` marks arguments only ``pm.sample`` understands (``step``, ``initvals`` of
    a user, ``compile_kwargs``, ...).

    Parameters
    ----------
    backend : {"auto", "pymc", "nutpie"}
        The requested backend.
    draws, tune, chains : int
        The run's size (``"auto"`` picks nutpie for long runs).
    pymc_only : bool
        Whether arguments only ``pm.sample`` understands were given.

    Returns
    -------
    str
        ``"pymc"`` or ``"nutpie"``.
    """
    check_choice(backend, "backend", BACKENDS)
    if backend == "nutpie":
        if not nutpie_available():
            raise ValueError(
                "backend='nutpie' needs the nutpie package (a pmctx dependency): "
                "pip install nutpie, or pass backend='pymc'."
            )
        if pymc_only:
            raise ValueError(
                "backend='nutpie' cannot take pm.sample-only arguments (step, compile_kwargs, "
                "...); drop them or pass backend='pymc'."
            )
        return "nutpie"
    if backend == "pymc" or pymc_only or not nutpie_available():
        return "pymc"
    return "nutpie" if chains * (draws + tune) >= NUTPIE_MIN_ITERATIONS else "pymc"


def compile_nutpie(model: pm.Model, initial_point: dict | None = None, *, cached: bool = False):
    """nutpie's compiled model of ``model`` (Numba log density and gradient).

    Parameters
    ----------
    model : pymc.Model
        The model.
    initial_point : dict, optional
        Initial values of the value variables.
    cached : bool, default False
        Try :func:`pmctx.gum.cached.compile_cached_nutpie` first (one free vector, e.g. the
        whitened GUM; ``initial_point`` is then unused): its Numba code is read from PyTensor's
        disk cache in later processes. Falls back to :func:`nutpie.compile_pymc_model`
        when the model does not qualify or the installed nutpie/PyTensor lack what it uses.

    Returns
    -------
    nutpie.CompiledModel
        Reusable by any number of :func:`sample_nutpie` calls.

    Examples
    --------
    >>> import pymc as pm
    >>> with pm.Model() as model:
    ...     x = pm.Normal("x", shape=2)
    >>> compiled = compile_nutpie(model, cached=True)  # doctest: +SKIP
    """
    import nutpie

    if cached:
        from pmctx.gum.cached import compile_cached_nutpie

        try:
            return compile_cached_nutpie(model)
        except Exception as err:  # a PyTensor/nutpie release moved an internal it reads
            _warn_fallback_once(err)
    return nutpie.compile_pymc_model(model, initial_points=initial_point)


class CompileFallbackWarning(PmctxWarning):
    """The disk-cached nutpie compile (:mod:`pmctx.gum.cached`) failed and nutpie's own
    compile ran instead: sampling is unchanged, but every new process compiles again (~10 s).

    Silence it with ``warnings.simplefilter("ignore", CompileFallbackWarning)``.
    """


_FALLBACK_WARNED: set[str] = set()


def _warn_fallback_once(err: Exception) -> None:
    reason = f"{type(err).__name__}: {err}"
    if reason in _FALLBACK_WARNED:
        return
    _FALLBACK_WARNED.add(reason)
    warnings.warn(
        f"pmctx's cached nutpie compile failed ({reason}); using nutpie.compile_pymc_model, "
        "which compiles anew in every process. Install the versions in pmctx's "
        "constraints.txt to get the cached path back, or silence CompileFallbackWarning.",
        CompileFallbackWarning,
        stacklevel=4,
    )


def sample_nutpie(
    model: pm.Model,
    *,
    draws,
    tune,
    chains,
    cores,
    random_seed,
    progressbar,
    initial_point=None,
    observed: dict | None = None,
    compiled=None,
    low_rank: bool = True,
    target_accept: float | None = None,
    loglik_model: pm.Model | None = None,
    log_likelihood=None,
    drop: tuple = (),
    before_log_likelihood=None,
    log_likelihood_thin: int = 1,
    until=None,
):
    """NUTS by nutpie with ``log_likelihood`` and ``observed_data``
    (``observed``: name -> values) groups like ``pm.sample`` with
    ``idata_kwargs={"log_likelihood": True}`` gives.

    Parameters
    ----------
    model : pymc.Model
        The model to sample.
    draws, tune, chains, cores : int
        As in :func:`pymc.sample`.
    random_seed : int or None
        Seed (reduced to one 31-bit integer for nutpie).
    progressbar : bool or None
        Show progress (None: in a terminal).
    initial_point : dict, optional
        Initial values of the value variables (used when ``compiled`` is None).
    observed : dict, optional
        Observed data added as the ``observed_data`` group.
    compiled : nutpie.CompiledModel, optional
        ``model`` already compiled (:func:`compile_nutpie`); default: compiled here.
    low_rank : bool, default True
        nutpie's low-rank modified mass matrix (False: diagonal adaptation, enough in
        whitened coordinates, :mod:`pmctx.gum.whiten`).
    target_accept : float, optional
        NUTS's target acceptance rate (default: nutpie's, 0.8).
    loglik_model : pymc.Model, optional
        The model whose observed variables give the ``log_likelihood`` group (default
        ``model``; the plain model when ``model`` is its whitened version).
    log_likelihood : callable, optional
        ``posterior -> {observed name: array (chain, draw, obs)}``, the pointwise
        log-likelihood computed without PyTensor (``GumModel.log_likelihood_draws``); default:
        :func:`pymc.compute_log_likelihood` on ``loglik_model`` (which compiles a function).
    drop : tuple of str
        Posterior variables and coordinates to remove (the whitened coordinates).
    before_log_likelihood : callable, optional
        ``idata -> None``, run before the log-likelihood is computed (the posterior
        predictive: its transient arrays then come and go before the biggest array exists).
    log_likelihood_thin : int, default 1
        Keep the log-likelihood at every this many draws (:func:`add_log_likelihood_group`);
        0: no ``log_likelihood`` group.
    until : pmctx.continuation.UntilConverged, optional
        Sample until its judge passes, within its budget (``draws`` is then its
        ``max_draws``; :func:`pmctx.continuation.nutpie_until_converged`).

    Returns
    -------
    xarray.DataTree
        Posterior, sample stats, ``log_likelihood`` unless ``log_likelihood_thin`` is 0 (and
        ``observed_data``).
    """
    import nutpie
    import xarray as xr

    from pmctx.sampling import usable_cores

    if compiled is None:
        compiled = compile_nutpie(model, initial_point)
    cores = min(chains, usable_cores()) if cores is None else cores
    seed = None if random_seed is None else int(np.random.default_rng(random_seed).integers(2**31))
    start = time.perf_counter()
    idata = nutpie.sample(
        compiled,
        draws=draws if until is None else until.budget.max_draws,
        tune=tune,
        chains=chains,
        cores=cores,
        seed=seed,
        progress_bar=progress_enabled(None if progressbar is None else not progressbar),
        low_rank_modified_mass_matrix=low_rank,
        **({} if target_accept is None else {"target_accept": float(target_accept)}),
        **({} if until is None else {"blocking": False}),
    )
    if until is not None:
        idata = nutpie_until_converged(idata, until)
    idata.posterior.attrs.setdefault("sampling_time", time.perf_counter() - start)
    for group in ("warmup_posterior", "warmup_sample_stats"):
        if group in idata.children:
            del idata[group]
    if drop:
        posterior = idata.posterior.to_dataset()
        posterior = posterior.drop_vars([d for d in drop if d in posterior.variables])
        set_group(idata, "posterior", posterior)
    if observed:
        # A Dataset with an ``obs`` dim (as in the log_likelihood group), not a dict: ArviZ
        # would give a dict chain/draw dims and warn that it did.
        arrays = {name: np.asarray(value) for name, value in observed.items()}
        dims = {n: ("obs", *(f"{n}_dim_{i}" for i in range(1, a.ndim))) for n, a in arrays.items()}
        idata["observed_data"] = xr.Dataset({n: (dims[n], a) for n, a in arrays.items()})
    if before_log_likelihood is not None:
        before_log_likelihood(idata)
    if not log_likelihood_thin:
        return idata
    return add_log_likelihood_group(idata, loglik_model or model, log_likelihood,
                                    thin=log_likelihood_thin)  # fmt: skip


def add_log_likelihood_group(idata, model: pm.Model, log_likelihood=None, *, thin: int = 1):
    """Add the pointwise ``log_likelihood`` group (dims ``chain``, ``draw``, ``obs``) to
    ``idata`` in place and return it.

    Parameters
    ----------
    idata : xarray.DataTree
        Posterior draws of ``model``.
    model : pymc.Model
        The model whose observed variables give the group when ``log_likelihood`` is None or
        returns None.
    log_likelihood : callable, optional
        ``posterior -> {observed name: array (chain, draw, obs)}`` or None
        (``GumModel.log_likelihood_draws``: NumPy, float32 for big fits); default and
        fallback: :func:`pymc.compute_log_likelihood` (compiles a function, float64).
    thin : int, default 1
        Keep every ``thin``-th draw (draws ``0, thin, 2 thin, ...`` with their posterior
        ``draw`` labels; ``attrs["thin"]``): ``az.loo`` reads the shorter group as it is.

    Returns
    -------
    xarray.DataTree
        ``idata``.
    """
    import xarray as xr

    posterior = idata.posterior.to_dataset()
    if thin != 1:
        posterior = posterior.isel(draw=slice(None, None, thin))
    values = None if log_likelihood is None else log_likelihood(posterior)
    if values is None:
        dataset = pm.compute_log_likelihood(
            xr.DataTree.from_dict({"posterior": posterior}), model=model,
            extend_inferencedata=False, progressbar=False,
        )  # fmt: skip
    else:
        coords = {name: posterior[name].values for name in ("chain", "draw")}
        dataset = xr.Dataset(
            {name: (("chain", "draw", "obs"), array) for name, array in values.items()},
            coords={**coords, "obs": np.arange(next(iter(values.values())).shape[-1])},
        )
    if isinstance(dataset, xr.DataTree):
        dataset = dataset.to_dataset()
    dataset.attrs["thin"] = int(thin)
    return set_group(idata, "log_likelihood", dataset)
