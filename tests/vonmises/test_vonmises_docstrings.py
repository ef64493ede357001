"""The examples in the orientation-map modules' docstrings run and print what they show."""

import doctest
import importlib

import pytest

MODULES = [
    "pmctx.vonmises.potentials",
    "pmctx.vonmises.pointwise",
    "pmctx.vonmises.ffbs",
    "pmctx.vonmises.augmented",
    "pmctx.vonmises.marginals",
    "pmctx.vonmises.maps",
    "pmctx.vonmises.exact",
    "pmctx.vonmises.plots",
    "pmctx.steps.vonmises",
    "pmctx.models.vonmises_map",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0, f"{name} has no docstring example"
    assert result.failed == 0
