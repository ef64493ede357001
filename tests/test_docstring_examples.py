"""The examples in the foundation modules' docstrings run and print what they show."""

import pytest

from pmctx.testing import assert_docstring_examples

MODULES = [
    "pmctx",
    "pmctx.validation",
    "pmctx.testing",
    "pmctx.io",
    "pmctx.trees",
    "pmctx.numerics",
    "pmctx.options",
    "pmctx.progress",
    "pmctx.steps.base",
    "pmctx.sampling",
    "pmctx.convergence",
    "pmctx.slice",
    "pmctx.registry",
    "pmctx.exceptions",
    "pmctx.summarize",
    "pmctx.cli",
    "pmctx.datafiles",
    "pmctx.ibp.inputs",
    "pmctx.ibp.predict",
    "pmctx.conditioning.inputs",
    "pmctx.vonmises.inputs",
    "pmctx.gum.inputs",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    assert_docstring_examples(name)
