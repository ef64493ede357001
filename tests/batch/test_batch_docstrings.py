"""The examples in the batch and simulate modules' docstrings run and show what they claim."""

import pytest

from pmctx.testing import assert_docstring_examples

MODULES = [
    "pmctx.batch.units",
    "pmctx.batch.cluster",
    "pmctx.batch.engine",
    "pmctx.batch.records",
    "pmctx.batch.scheduling",
    "pmctx.batch.writer",
    "pmctx.batch.adapters",
    "pmctx.batch.toy",
    "pmctx.batch.population",
    "pmctx.batch.bms",
    "pmctx.batch.sbc",
    "pmctx.batch.cli",
    "pmctx.ibp.simulate",
    "pmctx.conditioning.simulate",
    "pmctx.vonmises.simulate",
    "pmctx.gum.simulate",
]


@pytest.mark.parametrize("name", MODULES)
def test_batch_docstring_examples(name):
    assert_docstring_examples(name)
