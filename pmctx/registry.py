"""The model registry: one :class:`ModelSpec` per model, declared next to the model.

Each model module (``pmctx.models.<name>``) ends with its ``SPEC``; the CLI (``fit``,
``demo``, ``batch``, ``sbc``), batch fits, SBC, the population view, K-fold and
:func:`pmctx.summary` read only these specs. Specs are found through the ``pmctx.models``
entry-point group (pmctx's own models are listed in its ``pyproject.toml``; a lab's package
adds its models the same way) or added at run time with :func:`register`. Names are known
without importing any model; a model is imported the first time its spec is asked for, so
``pmctx --help`` stays fast.

Examples
--------
>>> from pmctx.registry import get_spec, model_names
>>> model_names()
['crp', 'gum', 'ibp', 'vonmises', 'vonmises-chain']
>>> spec = get_spec("ibp")
>>> spec.module
'pmctx.models.ibp'
>>> "K_max" in spec.options
True
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = [
    "ENTRY_POINT_GROUP",
    "ModelSpec",
    "get_spec",
    "invariants_of",
    "list_specs",
    "model_name",
    "model_names",
    "register",
    "unregister",
]

#: Entry-point group through which packages register models (``name = "module:SPEC"``).
ENTRY_POINT_GROUP = "pmctx.models"


@dataclass(frozen=True)
class ModelSpec:
    """Everything generic code needs to know about one model.

    Attributes
    ----------
    name : str
        CLI name (``pmctx fit NAME``); stored as ``idata.posterior.attrs["pmctx_model"]``.
    summary : str
        One line saying what the model is (``pmctx fit --help``, the docs' model table).
    load : callable
        ``load(path, options=None) -> dict`` reads and validates a data file; the dict's
        ``"options"`` are model options stored with the data.
    fit : callable
        ``fit(data: dict, *, draws, tune, chains, cores, random_seed, progressbar,
        idata_kwargs, **options) -> DataTree`` on loaded data.
    invariants : callable
        ``invariants(idata) -> xarray.Dataset`` of label-invariant quantities (chain, draw,
        ...); circular ones carry ``attrs["period"]``. Convergence, summaries and the
        population view read these.
    write_outputs : callable
        ``write_outputs(idata, out_dir, *, data=None) -> list[Path]``: the model's files
        (posterior, summary, diagnostics and plots); ``data`` is what ``load`` read, for
        plots of the data.
    demo : callable
        ``demo(out_dir, *, quick, random_seed, cores) -> list[Path]``.
    module : str
        The module that declares the model (for messages and docs).
    fit_unit : callable or None
        ``fit_unit(data: dict, *, random_seed, **options) -> DataTree``: the fit of one
        batch unit from its raw arrays or table columns; default: ``fit`` on the unit's
        arrays, with the scalars stored beside them that name an entry of ``options`` as
        options (see :meth:`unit_fit`).
    simulate : callable or None
        ``simulate(random_seed, **options) -> (data, truth)``: a prior draw and its data, in
        the form ``fit_unit`` takes (SBC).
    sbc_quantities : callable or None
        ``sbc_quantities(idata) -> dict`` of posterior draws (flat arrays) of the quantities
        named in ``simulate``'s ``truth`` (SBC ranks truth among them).
    predict : callable or None
        ``predict(idata, new_data, *, random_seed=None, **options) -> xarray.Dataset``:
        predictions for new inputs (per-draw variables over ``chain``, ``draw`` and the new
        inputs' dimension); every model's takes these arguments.
    kfold : callable or None
        ``kfold(**options) -> (fit, log_predictive)`` for :func:`pmctx.kfold.kfold`.
    refit : callable or None
        ``refit(idata, *, var_name) -> dict or None``: how :func:`pmctx.compare` refits this
        fit exactly where PSIS fails, a dict with ``fit``, ``log_predictive``, ``data`` and
        ``method`` (the fields of :class:`pmctx.refit.Refitter`), or ``None`` when the fit
        does not hold the data to refit on.
    comparisons : dict
        Pointwise log-likelihood variables (in the fit's ``log_likelihood`` or
        ``log_likelihood_parts`` group, see :data:`pmctx.io.LOG_LIKELIHOOD_GROUPS`) -> the
        question comparing models on it answers; the first is what :func:`pmctx.compare` uses when
        the fit has several and the user names none.
    population : tuple of str
        Posterior variables a batch's population view tabulates per unit (default: every
        scalar of ``invariants``).
    options : dict
        Model options the CLI accepts (``--set key=value``) with their help text.
    advice : str
        What to do when the sampler has not converged (ends the ConvergenceWarning).
    demo_seconds : tuple of (float, float)
        Expected wall seconds of ``demo`` and of ``demo(quick=True)`` on an idle 2-CPU
        machine (chains in parallel, beside another model's demo as ``pmctx demo`` runs
        them; ``benchmarks/bench_demo.py``), announced by ``pmctx demo``.

    Examples
    --------
    >>> spec = get_spec("crp")
    >>> spec.name, spec.module
    ('crp', 'pmctx.models.crp_conditioning')
    >>> callable(spec.fit) and callable(spec.invariants)
    True
    """

    name: str
    summary: str
    load: Callable
    fit: Callable
    invariants: Callable
    write_outputs: Callable
    demo: Callable
    module: str = ""
    fit_unit: Callable | None = None
    simulate: Callable | None = None
    sbc_quantities: Callable | None = None
    predict: Callable | None = None
    kfold: Callable | None = None
    refit: Callable | None = None
    comparisons: dict = field(default_factory=dict)
    population: tuple[str, ...] = ()
    options: dict = field(default_factory=dict)
    advice: str = ""
    demo_seconds: tuple[float, float] = (0.0, 0.0)

    def fit_file(self, data_path, *, out_dir="pmctx-fit", **kwargs) -> list:
        """Load a data file, fit the model and write its files: what ``pmctx fit`` runs.

        Parameters
        ----------
        data_path : str or path-like
            The data file (``.npz``, ``.csv`` or ``.nc``; each model's ``load`` says the
            layout).
        out_dir : str or path-like, default "pmctx-fit"
            Output folder.
        **kwargs
            Model options (the spec's ``options``; they override scalars stored in the file)
            and ``pm.sample`` keywords (``draws``, ``tune``, ``chains``, ``cores``,
            ``random_seed``, ...), passed to ``fit``.

        Returns
        -------
        list of pathlib.Path
            The files written: posterior, summary, diagnostics and the model's figures.

        Examples
        --------
        >>> paths = get_spec("ibp").fit_file("trials.csv", K_max=12)  # doctest: +SKIP
        """
        from pathlib import Path

        options = {key: kwargs.pop(key) for key in list(kwargs) if key in self.options}
        data = self.load(data_path, options)
        options = {**data.pop("options", {}), **options}
        idata = self.fit(data, **kwargs, **options)
        return self.write_outputs(idata, Path(out_dir), data=data)

    def unit_fit(self) -> Callable:
        """The fit of one batch unit: ``fit_unit`` when the model has one, else ``fit`` on the
        unit's data with the stored scalars named in ``options`` (e.g. a unit's ``K_max``)
        passed as options; keyword options override them.

        Returns
        -------
        callable
            ``fit(data: dict, *, random_seed, **options) -> DataTree``.

        Examples
        --------
        >>> get_spec("gum").unit_fit().__name__
        'fit_unit'
        """
        return self.fit_unit if self.fit_unit is not None else _StoredOptionsFit(self)


@dataclass(frozen=True)
class _StoredOptionsFit:
    """A model's ``fit`` on one batch unit whose stored scalars include model options."""

    spec: ModelSpec

    def __call__(self, data: dict, *, random_seed=None, **options):
        from pmctx.validation import stored_scalar

        names = self.spec.options
        stored = {key: stored_scalar(value) for key, value in data.items() if key in names}
        unit = {key: value for key, value in data.items() if key not in names}
        return self.spec.fit(unit, random_seed=random_seed, **(stored | options))

    @property
    def __name__(self) -> str:
        return "fit_unit"


_REGISTRY: dict[str, ModelSpec] = {}


@functools.cache
def _entry_points() -> dict:
    # Installed entry points do not change while a process runs: scan them once (about 13 ms
    # each; building the CLI's parser asks for the names six times).
    from importlib.metadata import entry_points

    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def register(spec: ModelSpec) -> ModelSpec:
    """Add (or replace) a model at run time, e.g. one declared in a notebook or a test.

    Packages register theirs through the ``pmctx.models`` entry-point group instead
    (``[project.entry-points."pmctx.models"]`` with ``name = "package.module:SPEC"``).

    Parameters
    ----------
    spec : ModelSpec
        The description; ``spec.name`` becomes the CLI name.

    Returns
    -------
    ModelSpec
        ``spec`` itself.

    Raises
    ------
    TypeError
        When ``spec`` is not a :class:`ModelSpec`.

    Examples
    --------
    >>> import dataclasses
    >>> copy = register(dataclasses.replace(get_spec("ibp"), name="ibp_copy"))
    >>> get_spec("ibp_copy") is copy
    True
    >>> unregister("ibp_copy")  # leave the registry as it was
    """
    if not isinstance(spec, ModelSpec):
        raise TypeError(f"register() takes a ModelSpec, got {type(spec).__name__}.")
    _REGISTRY[spec.name] = spec
    return spec


def unregister(name: str) -> None:
    """Remove a model added with :func:`register` (entry-point models come back on demand).

    Parameters
    ----------
    name : str
        A registered name.

    Examples
    --------
    >>> import dataclasses
    >>> _ = register(dataclasses.replace(get_spec("crp"), name="crp_copy"))
    >>> unregister("crp_copy")
    >>> "crp_copy" in model_names()
    False
    """
    _REGISTRY.pop(name, None)


def model_names() -> list[str]:
    """Registered model names (entry points in name order, then run-time registrations),
    without importing any model.

    Returns
    -------
    list of str
        CLI names.

    Examples
    --------
    >>> model_names()[:2]
    ['crp', 'gum']
    """
    names = sorted(_entry_points())
    return names + [name for name in _REGISTRY if name not in names]


def get_spec(name: str) -> ModelSpec:
    """The spec of model ``name`` (a CLI name such as ``"ibp"``); imports its module.

    Parameters
    ----------
    name : str
        A registered name (see :func:`model_names`).

    Returns
    -------
    ModelSpec
        The model's description.

    Raises
    ------
    ValueError
        For an unknown name (the message lists the registered ones).

    Examples
    --------
    >>> get_spec("gum").module
    'pmctx.models.gum'
    """
    if name in _REGISTRY:
        return _REGISTRY[name]
    points = _entry_points()
    if name not in points:
        raise ValueError(f"Unknown model {name!r}; choose one of {model_names()}.")
    spec = points[name].load()
    if not isinstance(spec, ModelSpec) or spec.name != name:
        raise TypeError(
            f"Entry point {name!r} ({points[name].value}) must name a ModelSpec called "
            f"{name!r}, got {spec!r}."
        )
    return register(spec)


def list_specs() -> list[ModelSpec]:
    """All registered models, in CLI order (imports every model).

    Returns
    -------
    list of ModelSpec
        One description per model.

    Examples
    --------
    >>> [spec.name for spec in list_specs()]
    ['crp', 'gum', 'ibp', 'vonmises', 'vonmises-chain']
    """
    return [get_spec(name) for name in model_names()]


def model_name(idata) -> str | None:
    """The registered model that produced ``idata`` (``None`` when unknown).

    Parameters
    ----------
    idata : xarray.DataTree or arviz.InferenceData
        A fit; pmctx models store their name in ``idata.posterior.attrs["pmctx_model"]``.

    Returns
    -------
    str or None
        The model's CLI name, or ``None`` for a fit pmctx did not make.

    Examples
    --------
    >>> import arviz as az, numpy as np
    >>> idata = az.from_dict({"posterior": {"mu": np.zeros((1, 3))}})
    >>> model_name(idata) is None
    True
    >>> idata.posterior.attrs["pmctx_model"] = "gum"
    >>> model_name(idata)
    'gum'
    """
    from pmctx.trees import as_datatree

    idata = as_datatree(idata)
    if "posterior" not in idata.children:
        return None
    return idata["posterior"].attrs.get("pmctx_model")


def invariants_of(idata):
    """Label-invariant quantities of a fit: its model's ``invariants``, else its posterior.

    A fit from an unknown model gets every posterior variable (linear statistics), which is
    what ``az.summary`` would show.

    Parameters
    ----------
    idata : xarray.DataTree or arviz.InferenceData
        A fit with a ``posterior`` group.

    Returns
    -------
    xarray.Dataset
        Quantities with ``chain`` and ``draw`` dims.

    Examples
    --------
    >>> import arviz as az, numpy as np
    >>> idata = az.from_dict({"posterior": {"mu": np.zeros((2, 5))}})
    >>> list(invariants_of(idata).data_vars)
    ['mu']
    """
    from pmctx.trees import as_datatree

    idata = as_datatree(idata)
    name = model_name(idata)
    if name in model_names():
        return get_spec(name).invariants(idata)
    return idata["posterior"].to_dataset()
