"""Model name -> ``fit_unit`` callable: the one place the batch engine learns about models.

``resolve_fit(name)`` returns a thin adapter around the model's registered fit
(``pmctx.registry.get_spec(name).fit``, the one ``pmctx fit`` runs): it turns a unit's raw
data dict (``.npz`` entries or table columns, scalars stored with the data) into the
registry's data dict and options. Two batch-only fits have no registry counterpart and are
called directly: the CRP alpha-grid fit from conditioned responses and the GUM Laplace
approximation (the GUM default here: the registry's GUM fit is NUTS, ``method="nuts"``).
A callable passed to :func:`resolve_fit` is your own ``fit_unit`` and is returned as is.
Every adapter follows the engine's contract
``fit_unit(data: dict, *, random_seed, **options) -> InferenceData``.

Examples
--------
>>> fit = resolve_fit("gum")
>>> callable(fit) and resolve_fit(fit) is fit
True
"""

from __future__ import annotations

import numpy as np

__all__ = ["BATCH_FITS", "resolve_fit", "resolve_invariants", "resolve_simulate"]


def _text(value) -> str:
    return str(_scalar(value))


def _scalar(value):
    # A table column repeats a unit's scalar on every row; an .npz stores it as a 0-d array.
    if isinstance(value, np.ndarray):
        return value.item() if value.size == 1 or value.ndim == 0 else value.ravel()[0]
    return value


def _registered_fit(name: str):
    from pmctx.registry import get_spec

    return get_spec(name).fit


def fit_ibp(data: dict, *, random_seed=None, **options):
    """IBP visuo-motor model: the registered fit (:func:`pmctx.models.ibp.fit_data`) on
    ``F`` and/or ``X``; ``K_max`` and hyperparameters stored with the data are options.

    Parameters
    ----------
    data : dict
        One unit's data: ``F`` and/or ``X`` and optional scalars ``K_max``, ``alpha``, ...
    random_seed : int, optional
        Seed of the fit.
    **options
        Options of :func:`pmctx.models.ibp.fit_data` (override the data's scalars).

    Returns
    -------
    arviz.InferenceData
        The unit's fit.

    Examples
    --------
    >>> from pmctx.ibp.data import visuomotor_data
    >>> idata = fit_ibp({"X": visuomotor_data(8, seed=0).X, "K_max": 6}, random_seed=0,
    ...                 draws=20, tune=10, chains=1)  # doctest: +SKIP
    """
    from pmctx.steps.ibp_gibbs import HYPER_NAMES

    keys = ("K_max", *HYPER_NAMES)
    options = {k: _scalar(data[k]) for k in keys if k in data} | options
    unit = {k: data[k] for k in ("F", "X") if k in data}
    return _registered_fit("ibp")(unit, random_seed=random_seed, **options)


#: Scalars a CRP unit may store with its features (the batch posterior's options).
CRP_SETTINGS = ("alpha", "max_causes", "concentration")


def fit_crp(data: dict, *, random_seed=None, **options):
    """CRP latent-cause model.

    With ``responses`` in ``data``: the subject's alpha from conditioned responses
    (:func:`pmctx.conditioning.simulate.fit_alpha_posterior`: posterior over an alpha grid,
    draws of ``alpha``, log evidence in ``attrs``). Otherwise the registered batch posterior
    over causes (:func:`pmctx.models.crp_conditioning.fit_data`). The trial features are
    ``features`` (trials x features, US first) or, in a table, every other column in order.

    Parameters
    ----------
    data : dict
        One unit's data: ``features`` (or feature columns), optional ``responses``,
        ``alphas`` and filter settings.
    random_seed : int, optional
        Seed of the fit.
    **options
        Options of the fit used (:func:`pmctx.conditioning.simulate.fit_alpha_posterior` or
        :func:`pmctx.models.crp_conditioning.fit_data`).

    Returns
    -------
    arviz.InferenceData
        The unit's fit.

    Examples
    --------
    >>> from pmctx.conditioning import shipped_design
    >>> features = shipped_design("renewal_aba", n_acquisition=2, n_extinction=2).to_array()
    >>> idata = fit_crp({"features": features}, random_seed=0, max_causes=3, draws=20, tune=5,
    ...                 chains=1, check_convergence=False, progressbar=False)
    >>> idata.posterior["z"].shape
    (1, 20, 5)
    """
    data = dict(data)
    responses = data.pop("responses", None)
    grid = data.pop("alphas", None)
    settings = {k: _scalar(data.pop(k)) for k in CRP_SETTINGS if k in data}
    features = data.pop("features", None)
    if features is None:
        features = np.column_stack([np.asarray(v, float) for v in data.values()])
    if responses is not None:
        from pmctx.conditioning.simulate import fit_alpha_posterior

        unit = {"features": features, "responses": responses}
        if grid is not None:
            unit["alphas"] = grid
        return fit_alpha_posterior(unit, random_seed=random_seed, **options)
    fit = _registered_fit("crp")
    return fit({"features": features}, random_seed=random_seed, **(settings | options))


def fit_vonmises(data: dict, *, random_seed=None, **options):
    """Orientation-map reconstruction: the registered fit
    (:func:`pmctx.models.vonmises_map.fit_data`) on ``theta`` (and ``mask``).

    Parameters
    ----------
    data : dict
        One unit's data: ``theta``, optional ``mask`` and scalars ``kappa``, ``kappa_obs``,
        ``rank``.
    random_seed : int, optional
        Seed of the sampler.
    **options
        Options of :func:`pmctx.models.vonmises_map.fit_data` (override the data's scalars).

    Returns
    -------
    arviz.InferenceData
        The unit's fit.

    Examples
    --------
    >>> idata = fit_vonmises({"theta": np.full((3, 3), 0.5), "rank": 3}, random_seed=0,
    ...                      draws=10, tune=5, chains=1, check_convergence=False,
    ...                      progressbar=False)
    >>> idata.posterior["theta"].shape
    (1, 10, 3, 3)
    """
    options = {k: _scalar(data[k]) for k in ("kappa", "kappa_obs", "rank") if k in data} | options
    unit = {"theta": data["theta"], "mask": data.get("mask")}
    return _registered_fit("vonmises")(unit, random_seed=random_seed, **options)


def fit_gum(data: dict, *, random_seed=None, method: str = "laplace", draws: int = 1000,
            **options):  # fmt: skip
    """GUM by Laplace (default) or NUTS (``method="nuts"``, the registered fit
    :func:`pmctx.models.gum.fit_data`); ``formula`` and ``family`` come from ``options`` or
    from the data (a ``.npz`` entry or a column).

    Parameters
    ----------
    data : dict
        One unit's columns, optionally with ``formula``, ``family`` and ``noise_sd`` entries.
    random_seed : int, optional
        Seed of the Laplace draws or of NUTS.
    method : {"laplace", "nuts"}, default "laplace"
        Laplace approximation or NUTS through :func:`pmctx.models.gum.fit_data`.
    draws : int, default 1000
        Posterior draws.
    **options
        ``formula``, ``family`` and further :func:`pmctx.gum.gum` (Laplace) or
        :func:`pmctx.models.gum.fit_data` (NUTS) options.

    Returns
    -------
    arviz.InferenceData
        The unit's fit.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> unit = {"x": rng.uniform(0, 2, 30), "formula": "y ~ f(x)"}
    >>> unit["y"] = rng.normal(np.sin(unit["x"]), 0.3)
    >>> fit_gum(unit, random_seed=0, draws=50, noise_sd=0.3).posterior["f_x"].shape[:2]
    (1, 50)
    """
    data = dict(data)
    formula = _text(options.pop("formula", None) or data.pop("formula", ""))
    family = _text(options.pop("family", None) or data.pop("family", "gaussian"))
    data.pop("formula", None), data.pop("family", None)
    if "noise_sd" in data:
        options.setdefault("noise_sd", float(_scalar(data.pop("noise_sd"))))
    if not formula:
        raise ValueError(
            "A GUM unit needs a formula: pass --set formula='y ~ f(x)' or store 'formula' in "
            "each unit's .npz."
        )
    if method == "nuts":
        fit = _registered_fit("gum")
        return fit({"columns": data}, random_seed=random_seed, draws=draws, formula=formula,
                   family=family, **options)  # fmt: skip
    if method != "laplace":
        raise ValueError(f"method must be 'laplace' or 'nuts', got {method!r}.")
    from pmctx.gum import gum

    seed = 0 if random_seed is None else int(random_seed)
    return gum(formula, data, family=family, **options).laplace(draws=draws, seed=seed)


#: The batch adapter of each registered model (a registered model without one gets its
#: registered fit, on the data dict its schema produces).
BATCH_FITS = {"ibp": fit_ibp, "crp": fit_crp, "vonmises": fit_vonmises, "gum": fit_gum}

_SIMULATE_MODULES = {
    "ibp": "pmctx.ibp.simulate",
    "crp": "pmctx.conditioning.simulate",
    "vonmises": "pmctx.vonmises.simulate",
    "gum": "pmctx.gum.simulate",
}


def _spec(name: str):
    try:
        from pmctx.registry import get_spec
    except ImportError:
        return None
    return get_spec(name)


def resolve_fit(model):
    """The ``fit_unit`` callable of registered model ``model`` (a name such as ``"gum"``);
    a callable is your own ``fit_unit`` and comes back unchanged.

    Parameters
    ----------
    model : str or callable
        A registered model name (``"ibp"``, ``"crp"``, ``"vonmises"``, ``"gum"``, ...) or your
        own ``fit_unit(data, *, random_seed, **options)``.

    Returns
    -------
    callable
        ``fit_unit(data: dict, *, random_seed, **options) -> InferenceData``.

    Examples
    --------
    >>> resolve_fit("gum").__name__
    'fit_gum'
    """
    if callable(model):
        return model
    spec = _spec(model)  # ValueError for an unknown model
    if spec is None:
        if model not in BATCH_FITS:
            raise ValueError(f"Unknown model {model!r}; choose from {sorted(BATCH_FITS)}.")
        return BATCH_FITS[model]
    return BATCH_FITS.get(spec.name, spec.fit)


def resolve_simulate(name: str):
    """``simulate(rng, **options) -> (data, truth)`` of model ``name``.

    Parameters
    ----------
    name : str
        A registered model name.

    Returns
    -------
    callable
        ``simulate(rng, **options) -> (data, truth)``.

    Examples
    --------
    >>> data, truth = resolve_simulate("gum")(np.random.default_rng(0), n=10)
    >>> "formula" in data
    True
    """
    import importlib

    spec = _spec(name)
    if spec is not None and getattr(spec, "simulate", None) is not None:
        return spec.simulate
    if name not in _SIMULATE_MODULES:
        raise ValueError(f"Unknown model {name!r}; choose from {sorted(_SIMULATE_MODULES)}.")
    return importlib.import_module(_SIMULATE_MODULES[name]).simulate


def resolve_invariants(name: str):
    """``invariants(idata) -> dict`` of posterior draws of the quantities ``simulate`` ranks.

    Taken from the model's simulate module, whose names match its ``truth`` by construction.

    Parameters
    ----------
    name : str
        A model with a simulate module (``"ibp"``, ``"crp"``, ``"vonmises"``, ``"gum"``).

    Returns
    -------
    callable
        ``invariants(idata) -> dict`` of posterior draws by quantity name.

    Examples
    --------
    >>> resolve_invariants("vonmises").__module__
    'pmctx.vonmises.simulate'
    """
    import importlib

    if name not in _SIMULATE_MODULES:
        raise ValueError(f"Unknown model {name!r}; choose from {sorted(_SIMULATE_MODULES)}.")
    return importlib.import_module(_SIMULATE_MODULES[name]).invariants
