"""The examples in the latent-cause modules' docstrings run and print what they show."""

import pytest

from pmctx.testing import assert_docstring_examples

MODULES = [
    "pmctx.conditioning.design",
    "pmctx.conditioning.particle_filter",
    "pmctx.conditioning.filter_result",
    "pmctx.conditioning.filter_settings",
    "pmctx.conditioning.exact",
    "pmctx.conditioning.behaviour",
    "pmctx.conditioning.response",
    "pmctx.conditioning.fitting",
    "pmctx.conditioning.likelihood",
    "pmctx.conditioning.pmmh",
    "pmctx.conditioning.recovery",
    "pmctx.conditioning.posterior",
    "pmctx.conditioning.plots",
    "pmctx.steps.crp_gibbs",
    "pmctx.models.crp_conditioning",
    "pmctx.conditioning.demo",
    "pmctx.conditioning.study",
]


@pytest.mark.parametrize("name", MODULES)
def test_crp_docstring_examples(name):
    assert_docstring_examples(name)
