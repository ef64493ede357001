"""The examples in the IBP modules' docstrings run and show what they claim."""

import pytest

from pmctx.testing import assert_docstring_examples

MODULES = [
    "pmctx.ibp.sampler",
    "pmctx.ibp.birth_death",
    "pmctx.ibp.diagnostics",
    "pmctx.ibp.data",
    "pmctx.ibp.start",
    "pmctx.ibp.hyper",
    "tests.oracles.ibp_reference",
    "pmctx.ibp.conditionals",
    "pmctx.ibp.hyper",
    "pmctx.steps.ibp_gibbs",
    "pmctx.models.ibp",
    "pmctx.ibp.inputs",
    "pmctx.ibp.outputs",
    "pmctx.ibp.refits",
    "pmctx.ibp.fit_checks",
]


@pytest.mark.parametrize("name", MODULES)
def test_ibp_docstring_examples(name):
    assert_docstring_examples(name)
