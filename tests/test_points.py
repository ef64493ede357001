"""pmctx.points.initial_point: model.initial_point() once per model state, never stale."""

import numpy as np
import pymc as pm
import pytest

from pmctx.points import initial_point


def _counting(model, monkeypatch):
    calls = []
    original = model.initial_point

    def counted(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(model, "initial_point", counted)
    return calls


def _assert_points_equal(a, b):
    assert a.keys() == b.keys()
    for name in a:
        np.testing.assert_array_equal(a[name], b[name])


def test_reuses_the_point_and_hands_out_copies(monkeypatch):
    with pm.Model() as model:
        x = pm.HalfNormal("x", shape=2, initval=[1.0, 2.0])
        pm.Normal("y", x.sum(), observed=[0.3])
    calls = _counting(model, monkeypatch)
    first = initial_point(model)
    first["x_log__"][:] = 9.0
    second = initial_point(model)
    assert len(calls) == 1
    np.testing.assert_allclose(second["x_log__"], np.log([1.0, 2.0]))
    _assert_points_equal(second, model.initial_point())


def test_recomputes_when_initial_values_data_or_variables_change(monkeypatch):
    with pm.Model(coords={"unit": range(3)}) as model:
        loc = pm.Data("loc", np.zeros(3), dims="unit")
        mu = pm.Normal("mu", loc, dims="unit")
    calls = _counting(model, monkeypatch)
    np.testing.assert_array_equal(initial_point(model)["mu"], np.zeros(3))
    model.set_initval(mu, np.array([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(initial_point(model)["mu"], [1.0, 2.0, 3.0])
    model.set_initval(mu, None)
    with model:
        pm.set_data({"loc": np.full(5, 4.0)}, coords={"unit": range(5)})
    np.testing.assert_array_equal(initial_point(model)["mu"], np.full(5, 4.0))
    with model:
        pm.Normal("nu")
    assert set(initial_point(model)) == {"mu", "nu"}
    assert len(calls) == 4
    _assert_points_equal(initial_point(model), model.initial_point())


@pytest.mark.parametrize("not_a_model", [None, {"mu": 0.0}, "model"])
def test_rejects_what_is_not_a_model(not_a_model):
    with pytest.raises(TypeError, match=r"expects a pm\.Model, got .*; pass the model itself"):
        initial_point(not_a_model)


@pytest.mark.parametrize("strategy", ["prior"])
def test_random_initial_values_are_never_reused(monkeypatch, strategy):
    with pm.Model() as model:
        pm.Normal("mu", initval=strategy)
    calls = _counting(model, monkeypatch)
    initial_point(model)
    initial_point(model)
    assert len(calls) == 2


def test_run_sampler_compiles_the_trace_once_for_all_chains(monkeypatch):
    """pm.sample copies the trace run_sampler hands it: one recording function, not one per
    chain, and the draws are those of pm.sample's own per-chain traces (which run_sampler
    leaves to pm.sample when var_names is given)."""
    import pytensor

    from pmctx.sampling import run_sampler

    with pm.Model() as model:
        mu = pm.Normal("mu", shape=2)
        pm.Deterministic("twice", 2 * mu)
        pm.Normal("y", mu.sum(), observed=[0.5])
    # PyMC's NUTS (PyMC 6 would choose nutpie for this model, which records no such trace)
    kwargs = dict(draws=5, tune=5, chains=3, cores=1, random_seed=4, progressbar=False,
                  nuts_sampler="pymc")  # fmt: skip
    plain = run_sampler(model, var_names=["mu", "twice"], **kwargs)
    compiled = []
    original = model.compile_fn

    def counting(*args, **kwargs):  # PyMC 6 traces compile their recording function here
        outs = kwargs.get("outs", args[0] if args else None)
        if isinstance(outs, list) and outs and all(isinstance(o, pytensor.Out) for o in outs):
            compiled.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(model, "compile_fn", counting)
    shared = run_sampler(model, **kwargs)
    assert len(compiled) == 1
    for name in ("mu", "twice"):
        np.testing.assert_array_equal(shared.posterior[name], plain.posterior[name])


def test_run_sampler_leaves_the_traces_to_pm_sample_without_a_default_start(monkeypatch):
    """A model whose default start cannot be computed (the user's initvals give one) samples
    as before: run_sampler then hands pm.sample no trace of its own."""
    import pmctx.sampling as sampling

    def no_default_start(model):
        raise ValueError("no support point")

    monkeypatch.setattr(sampling, "initial_point", no_default_start)
    with pm.Model() as model:
        pm.Normal("mu")
    idata = sampling.run_sampler(
        model, draws=5, tune=5, chains=2, cores=1, random_seed=1, progressbar=False
    )
    assert idata.posterior["mu"].shape == (2, 5)
