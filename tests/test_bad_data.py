"""Every registered model rejects empty and text data at its boundary, before sampling.

The data come from each model's own ``simulate`` (through its spec), so a model added to the
registry is covered without editing this file.
"""

import numpy as np
import pytest

from pmctx.registry import get_spec, model_names

SAMPLER = {"draws": 5}  # the one sampler keyword every fit_unit takes (GUM: Laplace draws)


@pytest.fixture(autouse=True)
def no_sampling(monkeypatch):
    """Validation must come first: reaching pm.sample fails the test."""
    import pymc

    def sample(*args, **kwargs):
        raise AssertionError("pm.sample was reached with bad data")

    monkeypatch.setattr(pymc, "sample", sample)


def _simulated(name):
    spec = get_spec(name)
    if spec.simulate is None:
        pytest.skip(f"{name} declares no simulate")
    data, _ = spec.simulate(0)
    arrays = {k: v for k, v in data.items() if isinstance(v, np.ndarray) and v.ndim >= 1}
    assert arrays, f"{name}'s simulate returned no arrays"
    return spec, data, arrays


@pytest.mark.parametrize("name", model_names())
def test_empty_data_is_rejected_before_sampling(name):
    spec, data, arrays = _simulated(name)
    empty = {**data, **{k: v[:0] for k, v in arrays.items()}}
    with pytest.raises(
        ValueError, match=r"(?i)empty|no (rows|trials|values|observations)|at least"
    ):
        spec.unit_fit()(empty, random_seed=0, **SAMPLER)


@pytest.mark.parametrize("name", model_names())
def test_text_data_is_rejected_with_a_clear_type_error(name):
    spec, data, arrays = _simulated(name)
    text = {**data, **{k: np.full(v.shape, "a") for k, v in arrays.items()}}
    with pytest.raises((TypeError, ValueError), match=r"(?i)numb|numeric|float|binary|text"):
        spec.unit_fit()(text, random_seed=0, **SAMPLER)
