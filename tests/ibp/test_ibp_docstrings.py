"""The examples in the IBP modules' docstrings run and show what they claim."""

import doctest
import importlib

import pytest

MODULES = [
    "pmctx.ibp.sampler",
    "pmctx.ibp.diagnostics",
    "pmctx.ibp.data",
    "pmctx.ibp.reference",
    "pmctx.steps.ibp_gibbs",
    "pmctx.models.ibp",
]


@pytest.mark.parametrize("name", MODULES)
def test_ibp_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0, f"{name} has no docstring example"
    assert result.failed == 0
