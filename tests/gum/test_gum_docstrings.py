"""The examples in the GUM modules' docstrings run and print what they show."""

import doctest
import importlib

import pytest

MODULES = [
    "pmctx.gum.kernels",
    "pmctx.gum.basis",
    "pmctx.gum.terms",
    "pmctx.gum.formula",
    "pmctx.gum.constraints",
    "pmctx.gum.families",
    "pmctx.gum.synthetic",
    "pmctx.gum.glm",
    "pmctx.gum.api",
    "pmctx.models.gum",
]


@pytest.mark.parametrize("name", MODULES)
def test_gum_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0, f"{name} has no docstring example"
    assert result.failed == 0
