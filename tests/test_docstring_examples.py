"""The examples in the foundation modules' docstrings run and print what they show."""

import doctest
import importlib

import pytest

MODULES = [
    "pmctx.validation",
    "pmctx.testing",
    "pmctx.io",
    "pmctx.progress",
    "pmctx.steps.base",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0, f"{name} has no docstring example"
    assert result.failed == 0
