"""One public vocabulary: seeds are ``random_seed`` everywhere a user passes one.

Every registered model's spec callables (``fit``, ``demo``, ``fit_unit``, ``simulate``,
``predict``) that take a seed call it ``random_seed`` (an int or a ``numpy.random.Generator``),
and no public function of the model modules (``pmctx.models.*``) or of the model-family
packages has a parameter called ``seed`` or ``rng``. ``rng`` stays inside kernels: private
functions, the map sweeps of :data:`pmctx.vonmises.SWEEPS` (``sweep(o, field, kappa, rank,
rng)``, called once per sweep inside a step) and step methods (PyMC's own ``rng=``). The
sampler keywords of every registered ``fit`` carry pm.sample's defaults
(:data:`pmctx.sampling.SAMPLE_DEFAULTS`).
"""

from __future__ import annotations

import importlib
import inspect

import pytest

from pmctx.registry import list_specs, model_names
from pmctx.sampling import SAMPLE_DEFAULTS, SAMPLE_KWARGS

#: Names users must not meet as parameters of public functions.
OLD_NAMES = ("seed", "rng")

#: The spec fields that are callables a user may pass a seed to.
SEEDED = ("fit", "demo", "fit_unit", "simulate", "predict")

#: Model modules (pmctx.models.*) and the model-family packages, by their ``__all__``.
PUBLIC_MODULES = (
    "pmctx.models.crp_conditioning",
    "pmctx.models.gum",
    "pmctx.models.ibp",
    "pmctx.models.vonmises_chain",
    "pmctx.models.vonmises_map",
    "pmctx.models.vonmises_select",
    "pmctx.conditioning",
    "pmctx.vonmises",
    "pmctx.batch",
    "pmctx.gum",
    "pmctx.kfold",
    "pmctx.sampling",
)


def _kernels() -> set:
    from pmctx.vonmises import SWEEPS

    return {f.__name__ for f in SWEEPS.values()}


def _public_callables(module_name: str):
    """``(qualified name, function)`` for the functions and public methods of ``__all__``."""
    module = importlib.import_module(module_name)
    names = getattr(module, "__all__", None)
    assert names is not None, f"{module_name} declares no __all__"
    kernels = _kernels()
    for name in names:
        if name.startswith("_") or name in kernels:
            continue
        obj = getattr(module, name)
        if inspect.isfunction(obj):
            yield f"{module_name}.{name}", obj
        elif inspect.isclass(obj) and obj.__module__.startswith(("pmctx", "models")):
            for attr, member in vars(obj).items():
                if attr.startswith("_") and attr != "__init__":
                    continue
                func = getattr(member, "__func__", member)
                if inspect.isfunction(func):
                    yield f"{module_name}.{name}.{attr}", func


def _old_names(func) -> list[str]:
    return [p for p in inspect.signature(func).parameters if p in OLD_NAMES]


@pytest.mark.parametrize("model", model_names())
def test_spec_callables_name_their_seed_random_seed(model):
    spec = next(s for s in list_specs() if s.name == model)
    bad = {}
    for field in SEEDED:
        func = getattr(spec, field)
        if func is None:
            continue
        params = inspect.signature(func).parameters
        if _old_names(func):
            bad[field] = _old_names(func)
        if field in ("fit", "demo", "fit_unit"):
            assert "random_seed" in params, f"{model}: {field} takes no random_seed"
    assert not bad, f"{model}: seed parameters not called random_seed: {bad}"
    if spec.simulate is not None:
        # SBC calls simulate(random_seed, **options): the seed comes first.
        first = next(iter(inspect.signature(spec.simulate).parameters))
        assert first == "random_seed", f"{model}: simulate's first parameter is {first!r}"


@pytest.mark.parametrize("module_name", PUBLIC_MODULES)
def test_no_public_function_takes_seed_or_rng(module_name):
    bad = {
        name: _old_names(func) for name, func in _public_callables(module_name) if _old_names(func)
    }
    assert not bad, f"public parameters still called seed/rng: {bad}"


def test_the_seed_alias_helper_is_gone():
    import pmctx.sampling

    assert not hasattr(pmctx.sampling, "resolve_seed")


@pytest.mark.parametrize("model", model_names())
def test_registered_fits_share_the_sampler_keywords_and_defaults(model):
    spec = next(s for s in list_specs() if s.name == model)
    params = inspect.signature(spec.fit).parameters
    for name in SAMPLE_KWARGS:
        assert name in params, f"{model}: fit lacks {name}"
        assert params[name].kind is inspect.Parameter.KEYWORD_ONLY, (model, name)
        assert params[name].default == SAMPLE_DEFAULTS[name], (model, name)
    order = [p for p in params if p in SAMPLE_DEFAULTS]
    assert order == list(SAMPLE_KWARGS), f"{model}: sampler keywords in order {order}"


def test_every_model_is_checked():
    assert {"crp", "gum", "ibp", "vonmises", "vonmises-chain"} <= set(model_names())


#: Models whose spec must offer a prediction for new inputs.
PREDICTING = ("crp", "gum", "ibp", "vonmises", "vonmises-chain")


@pytest.mark.parametrize("model", model_names())
def test_every_predict_takes_the_same_arguments_and_returns_a_dataset(model):
    spec = next(s for s in list_specs() if s.name == model)
    if spec.predict is None:
        assert model not in PREDICTING, f"{model} has no predict"
        return
    params = list(inspect.signature(spec.predict).parameters.values())
    assert [p.name for p in params[:2]] == ["idata", "new_data"], (model, params[:2])
    assert all(p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD for p in params[:2]), model
    seed = inspect.signature(spec.predict).parameters.get("random_seed")
    assert seed is not None and seed.kind is inspect.Parameter.KEYWORD_ONLY, model
    assert seed.default is None, f"{model}: random_seed defaults to {seed.default!r}"
    returns = str(inspect.signature(spec.predict).return_annotation)
    assert returns.endswith("Dataset"), f"{model}: predict is annotated {returns!r}"


def test_ibp_predict_explains_what_new_data_holds():
    from pmctx.models.ibp import predict

    with pytest.raises(TypeError, match="mapping with 'X' \\(cues\\) and/or 'F'"):
        predict(None, [[0, 1]])
