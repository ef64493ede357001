"""The examples in the latent-cause modules' docstrings run and print what they show."""

import doctest
import importlib

import pytest

MODULES = [
    "pmctx.conditioning.design",
    "pmctx.conditioning.particle_filter",
    "pmctx.conditioning.exact",
    "pmctx.conditioning.behaviour",
    "pmctx.conditioning.plots",
    "pmctx.steps.crp_gibbs",
    "pmctx.models.crp_conditioning",
]


@pytest.mark.parametrize("name", MODULES)
def test_crp_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0, f"{name} has no docstring example"
    assert result.failed == 0
