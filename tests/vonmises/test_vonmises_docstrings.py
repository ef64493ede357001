"""The examples in the orientation-map modules' docstrings run and print what they show."""

import pytest

from pmctx.testing import assert_docstring_examples

MODULES = [
    "pmctx.vonmises.potentials",
    "pmctx.vonmises.pointwise",
    "pmctx.vonmises.ffbs",
    "pmctx.vonmises.augmented",
    "pmctx.vonmises.cluster",
    "pmctx.vonmises.marginals",
    "pmctx.vonmises.maps",
    "tests.oracles.vonmises_exact",
    "pmctx.vonmises.plots",
    "pmctx.vonmises.demo",
    "pmctx.vonmises.inputs",
    "pmctx.vonmises.outputs",
    "pmctx.vonmises.predictive",
    "pmctx.vonmises.series",
    "pmctx.vonmises.simulate",
    "pmctx.steps.vonmises",
    "pmctx.models.vonmises_map",
    "pmctx.vonmises.hyper",
    "pmctx.vonmises.chain",
    "pmctx.vonmises.select",
    "pmctx.models.vonmises_chain",
    "pmctx.vonmises.chain_collapsed",
    "pmctx.steps.vonmises_chain_collapsed",
    "pmctx.vonmises.start",
    "pmctx.vonmises.average",
    "pmctx.models.vonmises_select",
    "pmctx.vonmises.jumps",
    "pmctx.steps.vonmises_jumps",
    "pmctx.steps.vonmises_jax",
    "pmctx.vonmises.spectral",
    "pmctx.vonmises.spectral_cv",
    "pmctx.vonmises.spectral_hmc",
    "pmctx.vonmises.spectral_kriging",
    "pmctx.vonmises.jax_series",
    "pmctx.models.vonmises_spectral",
    "pmctx.steps.vonmises_spectral",
]


#: Modules of optional extras, run where the extra is installed: module -> extra's module.
OPTIONAL = {"pmctx.vonmises.jax_series": "jax", "pmctx.steps.vonmises_jax": "jax"}


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    if name in OPTIONAL:
        pytest.importorskip(OPTIONAL[name])
    assert_docstring_examples(name)
