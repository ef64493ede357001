"""Model name -> ``fit_unit`` callable: the one place the batch engine learns about models.

``resolve_fit(name)`` returns ``pmctx.registry.get_spec(name).fit`` when the registry exists,
and otherwise one of the fallbacks below, which call the model modules' current functions.
Every fallback follows the engine's contract
``fit_unit(data: dict, *, random_seed, **options) -> InferenceData``.

Examples
--------
>>> fit = resolve_fit("gum")
>>> callable(fit)
True
"""

from __future__ import annotations

import numpy as np

__all__ = ["FALLBACK_FITS", "resolve_fit", "resolve_invariants", "resolve_simulate"]


def _text(value) -> str:
    return str(_scalar(value))


def _scalar(value):
    # A table column repeats a unit's scalar on every row; an .npz stores it as a 0-d array.
    if isinstance(value, np.ndarray):
        return value.item() if value.size == 1 or value.ndim == 0 else value.ravel()[0]
    return value


def fit_ibp(data: dict, *, random_seed=None, **options):
    """IBP visuo-motor model (:func:`pmctx.models.ibp.sample`) on ``F`` and/or ``X``."""
    from pmctx.models.ibp import sample
    from pmctx.steps.ibp_gibbs import HYPER_NAMES

    keys = ("K_max", *HYPER_NAMES)
    options = {k: _scalar(data[k]) for k in keys if k in data} | options
    options.setdefault("chains", 2)
    return sample(data.get("F"), data.get("X"), random_seed=random_seed, **options)


def fit_crp(data: dict, *, random_seed=None, **options):
    """CRP latent-cause model.

    With ``responses`` in ``data``: the subject's alpha from conditioned responses
    (:func:`pmctx.conditioning.simulate.fit_alpha_posterior`: posterior over an alpha grid,
    draws of ``alpha``, log evidence in ``attrs``). Otherwise the batch posterior over causes
    (:func:`pmctx.models.crp_conditioning.sample_posterior`). The trial features are
    ``features`` (trials x features, US first) or, in a table, every other column in order.
    """
    data = dict(data)
    responses = data.pop("responses", None)
    grid = data.pop("alphas", None)
    settings = {k: _scalar(data.pop(k)) for k in ("alpha", "max_causes") if k in data}
    features = data.pop("features", None)
    if features is None:
        features = np.column_stack([np.asarray(v, float) for v in data.values()])
    if responses is not None:
        from pmctx.conditioning.simulate import fit_alpha_posterior

        unit = {"features": features, "responses": responses}
        if grid is not None:
            unit["alphas"] = grid
        return fit_alpha_posterior(unit, random_seed=random_seed, **options)
    from pmctx.models.crp_conditioning import sample_posterior

    return sample_posterior(features, seed=random_seed, **(settings | options))


def fit_vonmises(data: dict, *, random_seed=None, **options):
    """Orientation-map reconstruction (:func:`pmctx.models.vonmises_map.reconstruct`)."""
    from pmctx.models.vonmises_map import reconstruct

    options = {k: _scalar(data[k]) for k in ("kappa", "kappa_obs", "rank") if k in data} | options
    return reconstruct(data["theta"], mask=data.get("mask"), seed=random_seed, **options)


def fit_gum(data: dict, *, random_seed=None, method: str = "laplace", draws: int = 1000,
            **options):  # fmt: skip
    """GUM by Laplace (default) or NUTS (``method="nuts"``); ``formula`` and ``family`` come
    from ``options`` or from the data (a ``.npz`` entry or a column)."""
    from pmctx.gum import gum

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
    seed = 0 if random_seed is None else int(random_seed)
    g = gum(formula, data, family=family, **options)
    if method == "laplace":
        return g.laplace(draws=draws, seed=seed)
    if method == "nuts":
        return g.sample(draws=draws, seed=seed)
    raise ValueError(f"method must be 'laplace' or 'nuts', got {method!r}.")


FALLBACK_FITS = {"ibp": fit_ibp, "crp": fit_crp, "vonmises": fit_vonmises, "gum": fit_gum}

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


def resolve_fit(name: str):
    """The ``fit_unit`` callable of model ``name`` (registry first, then the fallbacks)."""
    spec = _spec(name)
    if spec is not None:
        return spec.fit
    if name not in FALLBACK_FITS:
        raise ValueError(f"Unknown model {name!r}; choose from {sorted(FALLBACK_FITS)}.")
    return FALLBACK_FITS[name]


def resolve_simulate(name: str):
    """``simulate(rng, **options) -> (data, truth)`` of model ``name``."""
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
    """
    import importlib

    if name not in _SIMULATE_MODULES:
        raise ValueError(f"Unknown model {name!r}; choose from {sorted(_SIMULATE_MODULES)}.")
    return importlib.import_module(_SIMULATE_MODULES[name]).invariants
