"""The examples in the GUM modules' docstrings run and print what they show."""

import pytest

from pmctx.testing import assert_docstring_examples

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
    "pmctx.gum.model",
    "pmctx.gum.columns",
    "pmctx.gum.coordinates",
    "pmctx.gum.nuts",
    "pmctx.gum.approximations",
    "pmctx.gum.assemble",
    "pmctx.gum.streams",
    "pmctx.gum.plots",
    "pmctx.gum.predict",
    "pmctx.gum.heldout",
    "pmctx.gum.declaration",
    "pmctx.gum.init",
    "pmctx.gum.derived",
    "pmctx.gum.many",
    "pmctx.gum.outputs",
    "pmctx.gum.curvature",
    "pmctx.gum.evidence",
    "pmctx.gum.grouped",
    "pmctx.gum.backends",
    "pmctx.gum.design",
    "pmctx.gum.build",
    "pmctx.gum.whiten",
    "pmctx.gum.cached",
    "pmctx.gum.recipes",
    "pmctx.gum.warm",
    "pmctx.gum.hsgp",
    "pmctx.models.gum",
]


@pytest.mark.parametrize("name", MODULES)
def test_gum_docstring_examples(name):
    assert_docstring_examples(name)
