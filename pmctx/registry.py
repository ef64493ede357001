"""One description per model (:class:`ModelSpec`), registered in one place.

The CLI (``demo``, ``fit``, and subcommands other modules add), the convergence report,
:func:`pmctx.summary`, batch fits and SBC are written once against :class:`ModelSpec`.
Adding a model means writing one spec here. Every callable is resolved lazily, so importing
the registry does not import the models.

Examples
--------
>>> from pmctx.registry import get_spec, list_specs
>>> [spec.name for spec in list_specs()]
['ibp', 'crp', 'vonmises', 'gum', 'vonmises-chain']
>>> spec = get_spec("ibp")
>>> spec.module
'pmctx.models.ibp'
>>> "K_max" in spec.options
True
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["ModelSpec", "get_spec", "invariants_of", "list_specs", "register"]


class _Lazy:
    """A callable that imports ``module:attr`` on first call (keeps the registry light)."""

    def __init__(self, module: str, attr: str):
        self.module, self.attr = module, attr

    def resolve(self) -> Callable:
        return getattr(importlib.import_module(self.module), self.attr)

    def __call__(self, *args, **kwargs):
        return self.resolve()(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<lazy {self.module}.{self.attr}>"


@dataclass(frozen=True)
class ModelSpec:
    """Everything generic code needs to know about one model.

    Attributes
    ----------
    name : str
        CLI name (``pmctx fit NAME``); stored as ``idata.posterior.attrs["pmctx_model"]``.
    module : str
        The ``pmctx.models`` module with the model's Python API.
    schema : callable
        ``schema(path, options=None) -> dict`` loads and validates a data file (see
        :mod:`pmctx.schema`); the dict's ``"options"`` are model options stored in it.
    fit : callable
        ``fit(data: dict, *, draws, tune, chains, cores, random_seed, progressbar,
        idata_kwargs, **options) -> InferenceData`` on validated data.
    invariants : callable
        ``invariants(idata) -> xarray.Dataset`` of label-invariant quantities (chain, draw,
        ...); circular ones carry ``attrs["period"]``.
    write_outputs : callable
        ``write_outputs(idata, out_dir, **kw) -> list[Path]``: the model's plots and files
        besides ``<name>_posterior.nc``, ``<name>_summary.csv``, ``<name>_diagnostics.csv``.
    demo : callable
        ``demo(out_dir, *, quick, random_seed) -> list[Path]``.
    simulate : callable or None
        ``simulate(rng, **options) -> (data, truth)``: a prior draw and its data.
    predict : callable or None
        ``predict(idata, new_data, **kw) -> xarray.Dataset`` of predictions for new inputs.
    options : dict
        Model options the CLI accepts (``--set key=value``) with their help text.
    advice : str
        What to do when the sampler has not converged (ends the ConvergenceWarning).
    demo_seconds : tuple of (float, float)
        Expected wall seconds of ``demo`` and of ``demo(quick=True)`` on an idle 2-CPU
        machine (chains in parallel; ``benchmarks/bench_demo.py``), announced by
        ``pmctx demo``.

    Examples
    --------
    >>> spec = get_spec("crp")
    >>> spec.name, spec.module
    ('crp', 'pmctx.models.crp_conditioning')
    >>> callable(spec.fit) and callable(spec.invariants)
    True
    """

    name: str
    module: str
    schema: Callable
    fit: Callable
    invariants: Callable
    write_outputs: Callable
    demo: Callable
    simulate: Callable | None = None
    predict: Callable | None = None
    options: dict = field(default_factory=dict)
    advice: str = ""
    demo_seconds: tuple[float, float] = (0.0, 0.0)


_REGISTRY: dict[str, ModelSpec] = {}


def register(spec: ModelSpec) -> ModelSpec:
    """Add (or replace) a model description.

    Parameters
    ----------
    spec : ModelSpec
        The description; ``spec.name`` becomes the CLI name.

    Returns
    -------
    ModelSpec
        ``spec`` itself.

    Examples
    --------
    >>> import dataclasses
    >>> copy = register(dataclasses.replace(get_spec("ibp"), name="ibp_copy"))
    >>> get_spec("ibp_copy") is copy
    True
    >>> del _REGISTRY["ibp_copy"]  # leave the registry as it was
    """
    _REGISTRY[spec.name] = spec
    return spec


def get_spec(name: str) -> ModelSpec:
    """The spec of model ``name`` (a CLI name such as ``"ibp"``).

    Parameters
    ----------
    name : str
        A registered CLI name: ``"ibp"``, ``"crp"``, ``"vonmises"`` or ``"gum"``.

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
    if name not in _REGISTRY:
        raise ValueError(f"Unknown model {name!r}; choose one of {list(_REGISTRY)}.")
    return _REGISTRY[name]


def list_specs() -> list[ModelSpec]:
    """All registered models, in CLI order.

    Returns
    -------
    list of ModelSpec
        One description per model.

    Examples
    --------
    >>> [spec.name for spec in list_specs()]
    ['ibp', 'crp', 'vonmises', 'gum', 'vonmises-chain']
    """
    return list(_REGISTRY.values())


def model_name(idata) -> str | None:
    """The registered model that produced ``idata`` (``None`` when unknown).

    Parameters
    ----------
    idata : arviz.InferenceData
        A fit; pmctx models store their name in ``idata.posterior.attrs["pmctx_model"]``.

    Returns
    -------
    str or None
        The model's CLI name, or ``None`` for a fit pmctx did not make.

    Examples
    --------
    >>> import arviz as az, numpy as np
    >>> idata = az.from_dict(posterior={"mu": np.zeros((1, 3))})
    >>> model_name(idata) is None
    True
    >>> idata.posterior.attrs["pmctx_model"] = "gum"
    >>> model_name(idata)
    'gum'
    """
    if "posterior" not in idata.groups():
        return None
    return idata.posterior.attrs.get("pmctx_model")


def invariants_of(idata):
    """Label-invariant quantities of a fit: its model's ``invariants``, else its posterior.

    A fit from an unknown model gets every posterior variable (linear statistics), which is
    what ``az.summary`` would show.

    Parameters
    ----------
    idata : arviz.InferenceData
        A fit with a ``posterior`` group.

    Returns
    -------
    xarray.Dataset
        Quantities with ``chain`` and ``draw`` dims.

    Examples
    --------
    >>> import arviz as az, numpy as np
    >>> idata = az.from_dict(posterior={"mu": np.zeros((2, 5))})
    >>> list(invariants_of(idata).data_vars)
    ['mu']
    """
    name = model_name(idata)
    if name in _REGISTRY:
        return _REGISTRY[name].invariants(idata)
    return idata.posterior


def _spec(name, module, package, options, advice, *, demo_seconds, predict=None) -> ModelSpec:
    models = f"pmctx.models.{module}"
    return ModelSpec(
        name=name,
        module=models,
        schema=_Lazy("pmctx.schema", f"load_{name}"),
        fit=_Lazy(models, "fit_data"),
        invariants=_Lazy(models, "invariants"),
        write_outputs=_Lazy(models, "write_outputs"),
        demo=_Lazy(models, "demo"),
        simulate=_Lazy(f"pmctx.{package}.simulate", "simulate"),
        predict=predict,
        options=options,
        advice=advice,
        demo_seconds=demo_seconds,
    )


register(
    _spec(
        "ibp",
        "ibp",
        "ibp",
        {
            "K_max": "truncation level, number of feature columns (int, default 10)",
            "alpha": "IBP concentration (number or 'prior')",
            "sigma_n": "force noise sd (number or 'prior')",
            "sigma_A": "force-vector prior sd (number or 'prior')",
            "phi": "prior probability of a basis pixel (number or 'prior')",
            "lam": "noisy-OR link strength (number or 'prior')",
            "eps": "noisy-OR leak probability (number or 'prior')",
            "start": "chain start: 'auto' (subsample fit from 500 trials on), 'subsample', 'zero'",
        },
        "Run longer (draws=2000, tune=2000) or more chains; if chains disagree on n_active, "
        "they sit in different modes: fix sigma_n to the force noise or raise K_max",
        predict=_Lazy("pmctx.models.ibp", "predict"),
        demo_seconds=(77, 6),
    )
)
register(
    _spec(
        "crp",
        "crp_conditioning",
        "conditioning",
        {
            "alpha": "CRP concentration (default 1.0)",
            "max_causes": "truncation, number of latent causes (default 10)",
            "concentration": "Beta(eta, eta) prior on feature probabilities (default 1.0)",
        },
        "Run longer (draws=2000, tune=2000) or more chains",
        predict=_Lazy("pmctx.models.crp_conditioning", "predict"),
        demo_seconds=(7, 5),
    )
)
register(
    _spec(
        "vonmises",
        "vonmises_map",
        "vonmises",
        {
            "kappa": "smoothing concentration (default 5.0)",
            "kappa_obs": "observation concentration on doubled angles (default 2.0)",
            "rank": "rank R of the edge potential (default 5)",
            "sampler": "augmented, cluster, ffbs or pointwise (default augmented)",
            "n_sweeps": "kernel sweeps per stored draw (default 8 for augmented/cluster, else 1)",
        },
        "Maps can hold several pinwheel layouts that a chain leaves only every few thousand"
        " sweeps, most often when kappa is larger than the data favour (more pinwheels than"
        " the prior holds): choose kappa by held-out pixels (pmctx.vonmises.select."
        "cross_validate, or pmctx.models.vonmises_select.reconstruct_cv), or run longer (e.g."
        " draws=4000, or n_sweeps=32 kernel sweeps per draw; the default is 8) and compare the"
        " chains' pinwheel counts",
        predict=_Lazy("pmctx.models.vonmises_map", "predict"),
        demo_seconds=(66, 6),
    )
)
register(
    _spec(
        "gum",
        "gum",
        "gum",
        {
            "formula": 'model formula, e.g. "y ~ f(x1) * f(x2) + f(x3)"',
            "family": "gaussian, bernoulli, poisson or negative_binomial (default gaussian)",
            "noise_sd": "fix the Gaussian noise sd (default: sampled)",
            "alpha": "fix the negative-binomial dispersion (default: sampled)",
        },
        "Run longer (draws=2000, tune=2000); divergences point to a product of functions "
        "with secondary modes: compare with g.laplace()",
        predict=_Lazy("pmctx.models.gum", "predict"),
        demo_seconds=(11, 8),
    )
)
register(
    ModelSpec(
        name="vonmises-chain",
        module="pmctx.models.vonmises_chain",
        schema=_Lazy("pmctx.schema", "load_vonmises_chain"),
        fit=_Lazy("pmctx.models.vonmises_chain", "fit_data"),
        invariants=_Lazy("pmctx.models.vonmises_chain", "invariants"),
        write_outputs=_Lazy("pmctx.models.vonmises_chain", "write_outputs"),
        demo=_Lazy("pmctx.models.vonmises_chain", "demo"),
        simulate=_Lazy("pmctx.models.vonmises_chain", "simulate_data"),
        options={
            "kappa": "smoothing concentration (number or 'prior', default 'prior')",
            "kappa_obs": "observation concentration (number or 'prior', default 'prior')",
            "rank": "rank R of the transition potential (default 5)",
        },
        advice="Run longer (draws=2000, tune=1000); x is drawn exactly given the "
        "concentrations, so slow mixing points to kappa and kappa_obs trading off: fix one",
        demo_seconds=(13, 4),
    )
)
