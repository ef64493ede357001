"""The nutpie internals pmctx._upstream_nutpie reads are still there, under those names and
with the fields and arguments it passes: a nutpie release that drops or changes one fails
here (pmctx itself then falls back to nutpie.compile_pymc_model with one warning)."""

import dataclasses
import inspect

from pmctx import _upstream_nutpie


def test_private_names_still_exist():
    from nutpie.compile_pymc import (  # noqa: F401  (imported by name on purpose)
        CompiledPyMCModel,
        _prepare_dims_and_coords,
        address_as_void_pointer,
    )

    assert set(_upstream_nutpie.PRIVATE_NAMES) == {
        "CompiledPyMCModel",
        "_prepare_dims_and_coords",
        "address_as_void_pointer",
    }
    assert _upstream_nutpie.missing() == []


def test_compiled_model_takes_the_fields_pmctx_sets():
    from nutpie.compile_pymc import CompiledPyMCModel

    names = {f.name for f in dataclasses.fields(CompiledPyMCModel)}
    assert set(_upstream_nutpie._FIELDS) <= names
    fields = _upstream_nutpie.compiled_model_fields()
    assert set(fields) <= names


def test_prepare_dims_and_coords_takes_known_arguments():
    import pymc as pm
    from nutpie.compile_pymc import _prepare_dims_and_coords

    params = list(inspect.signature(_prepare_dims_and_coords).parameters)
    assert params in (["model", "shape_info"], ["model", "shape_info", "reparameterized_names"])
    with pm.Model(coords={"i": ["a", "b"]}) as model:
        pm.Normal("x", dims="i")
    dims, coords = _upstream_nutpie.dims_and_coords(model, (["x"], ["x"], [(2,)]))
    assert dims["x"] == ("i",)
    assert list(coords["i"]) == ["a", "b"]
    assert list(coords["unconstrained_parameter"]) == ["x_0", "x_1"]
