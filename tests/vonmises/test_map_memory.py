"""A map reconstruction says, before sampling, when its outputs would not fit in memory."""

import numpy as np
import pytest
from pmctx.models import vonmises_map

from pmctx.exceptions import MemoryWarning


def test_reconstruct_warns_before_sampling_when_outputs_pass_the_memory(monkeypatch):
    monkeypatch.setenv("PMCTX_MEMORY_BYTES", "100000")  # 100 kB available

    def no_sampling(*args, **kwargs):
        raise RuntimeError("sampling started")

    monkeypatch.setattr(vonmises_map, "run_sampler", no_sampling)
    theta = np.full((8, 8), 0.5)
    with (
        pytest.warns(
            MemoryWarning,
            match=r"map reconstruction \(64 nodes, 2 x 100 draws\) "
            r"need about 614 kB .*posterior_predictive=False",
        ),  # fmt: skip
        pytest.raises(RuntimeError, match="sampling started"),
    ):
        vonmises_map.reconstruct(theta, kappa=2.0, kappa_obs=3.0, rank=3, draws=100, tune=100,
                                 chains=2)  # fmt: skip
