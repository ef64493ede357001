"""nutpie's model of the whitened GUM from disk-cached Numba code (pmctx.gum.cached): the
compiled log density, gradient and Deterministics equal the PyMC model's, a wrong gradient is
caught, and data sets of the same structure share the cached code."""

import ctypes
import warnings

import numpy as np
import nutpie
import pymc as pm
import pytensor
import pytest

import pmctx.gum.cached as cached
from pmctx.gum import backends
from pmctx.gum.whiten import WHITE_NAME


def _call_logp(compiled, x):
    """Call the compiled logp cfunc exactly as nutpie does (pointers, user data)."""
    x = np.ascontiguousarray(x, dtype=float)
    grad, logp = np.zeros_like(x), np.zeros(())
    ptr = ctypes.POINTER(ctypes.c_double)
    code = compiled.compiled_logp_func.ctypes(
        len(x),
        x.ctypes.data_as(ptr),
        grad.ctypes.data_as(ptr),
        logp.ctypes.data_as(ptr),
        ctypes.c_void_p(compiled.user_data.ctypes.data),
    )
    return code, float(logp), grad


def _call_expand(compiled, x):
    x = np.ascontiguousarray(x, dtype=float)
    out = np.zeros(compiled.n_expanded)
    ptr = ctypes.POINTER(ctypes.c_double)
    code = compiled.compiled_expand_func.ctypes(
        len(x),
        compiled.n_expanded,
        x.ctypes.data_as(ptr),
        out.ctypes.data_as(ptr),
        ctypes.c_void_p(compiled.user_data.ctypes.data),
    )
    names, slices, shapes = compiled.shape_info
    return code, {n: out[s].reshape(shape) for n, s, shape in zip(names, slices, shapes)}


def _max_errors(g, compiled, n_points=5):
    """Largest |logp - model logp| and |grad - model grad| at random whitened points."""
    white = g.whitened_model
    logp, dlogp = white.compile_logp(), white.compile_dlogp()
    rng = np.random.default_rng(0)
    errors = []
    for _ in range(n_points):
        z = 2 * rng.normal(size=compiled.n_dim)
        code, value, grad = _call_logp(compiled, z)
        assert code == 0
        errors.append(
            (
                abs(value - float(logp({WHITE_NAME: z}))),
                float(np.max(np.abs(grad - dlogp({WHITE_NAME: z})))),
            )
        )
    return np.max(errors, axis=0)


def test_cached_logp_and_gradient_equal_the_model(product_gum):
    g = product_gum(120)
    compiled = cached.compile_cached_nutpie(g.whitened_model)
    logp_error, grad_error = _max_errors(g, compiled)
    assert logp_error < 1e-8
    assert grad_error < 1e-8


def test_wrong_gradient_is_caught(product_gum, monkeypatch):
    g = product_gum(120)
    monkeypatch.setattr(cached, "_gradient", lambda logp, v: 1.001 * cached.pytensor.grad(logp, v))
    compiled = cached.compile_cached_nutpie(g.whitened_model)
    logp_error, grad_error = _max_errors(g, compiled)
    assert logp_error < 1e-8
    assert grad_error > 1e-4


def test_cached_deterministics_equal_the_model(product_gum):
    g = product_gum(120)
    white = g.whitened_model
    compiled = cached.compile_cached_nutpie(white)
    z = np.random.default_rng(1).normal(size=compiled.n_dim)
    code, values = _call_expand(compiled, z)
    assert code == 0
    names = [d.name for d in white.deterministics]
    graphs = white.replace_rvs_by_values(white.deterministics)
    expected = pytensor.function(white.value_vars, graphs, on_unused_input="ignore")(z)
    assert set(names) <= set(values) and WHITE_NAME in values
    np.testing.assert_allclose(values[WHITE_NAME], z)
    for name, value in zip(names, expected):
        np.testing.assert_allclose(values[name], value, atol=1e-10)
    assert compiled.dims["f_x"] == white.named_vars_to_dims["f_x"]


def test_data_sets_of_one_structure_share_the_cached_code(product_gum):
    first = cached.compile_cached_nutpie(product_gum(120, seed=3).whitened_model)
    other = cached.compile_cached_nutpie(product_gum(120, seed=4).whitened_model)
    assert first.cache_keys == other.cache_keys
    assert not np.array_equal(first.keep[0][0], other.keep[0][0])  # different data


def test_models_that_do_not_qualify_are_refused_and_fall_back():
    with pm.Model() as model:
        pm.HalfNormal("s")
        pm.Normal("x", shape=2)
    with pytest.raises(ValueError, match="one untransformed free vector"):
        cached.compile_cached_nutpie(model)
    with pm.Model() as model:
        pm.Normal("x", shape=2)
    assert type(backends.compile_nutpie(model, cached=False)).__name__ == "CompiledPyMCModel"
    monkey = cached.compile_cached_nutpie
    try:
        cached.compile_cached_nutpie = lambda m: (_ for _ in ()).throw(ImportError("old"))
        with pytest.warns(backends.CompileFallbackWarning, match="ImportError: old"):
            compiled = backends.compile_nutpie(model, cached=True)
    finally:
        cached.compile_cached_nutpie = monkey
    assert type(compiled).__name__ == "CompiledPyMCModel"  # nutpie's own compile


def test_fallback_to_nutpies_compile_warns_once(monkeypatch):
    """A failed cached compile is said once (CompileFallbackWarning), not silently slow."""

    def broken(model):
        raise AttributeError("nutpie.compile_pymc has no attribute 'CompiledPyMCModel'")

    monkeypatch.setattr(cached, "compile_cached_nutpie", broken)
    monkeypatch.setattr(backends, "_FALLBACK_WARNED", set())
    calls = []
    monkeypatch.setattr(nutpie, "compile_pymc_model", lambda m, **kw: calls.append(m) or "ok")
    with pm.Model() as model:
        pm.Normal("x", shape=2)
    with pytest.warns(backends.CompileFallbackWarning, match="CompiledPyMCModel"):
        assert backends.compile_nutpie(model, cached=True) == "ok"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert backends.compile_nutpie(model, cached=True) == "ok"
    assert len(calls) == 2
