"""pmctx.memory: output sizes said before sampling, and a trace that keeps big variables
compactly (compact dtypes, thinned draws, running moments) with the same draws as PyMC's."""

import warnings

import numpy as np
import pymc as pm
import pytest

from pmctx.exceptions import MemoryWarning
from pmctx.memory import (
    MOMENTS_GROUP,
    StoreTrace,
    available_memory,
    check_output_memory,
    even_draws,
    subset_draws,
)


def test_check_output_memory_warns_with_the_largest_outputs_and_advice():
    outputs = {"posterior Z": 400_000_000, "log_likelihood": 320_000_000, "small": 10}
    with pytest.warns(MemoryWarning, match=r"need about 720 MB \(posterior Z 400 MB, "
                      r"log_likelihood 320 MB.*of the 1\.0 GB .*Pass fewer draws"):  # fmt: skip
        total = check_output_memory(outputs, what="fit", advice="Pass fewer draws.",
                                    available=10**9)  # fmt: skip
    assert total == 720_000_010
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_output_memory(outputs, what="fit", advice="", available=10**10)
    with pytest.raises(ValueError, match=r"share must be in \(0, 1\], got 0"):
        check_output_memory(outputs, what="fit", advice="", share=0)


def test_available_memory_reads_the_override(monkeypatch):
    monkeypatch.setenv("PMCTX_MEMORY_BYTES", "12345")
    assert available_memory() == 12345
    monkeypatch.setenv("PMCTX_MEMORY_BYTES", "2GB")
    with pytest.raises(ValueError, match="PMCTX_MEMORY_BYTES must be a whole number .*'2GB'"):
        available_memory()


def test_subset_and_even_draws():
    assert subset_draws(4, 1000, 10, budget=10**9) == 1000
    assert subset_draws(4, 1000, 1000, itemsize=8, budget=4 * 8 * 1000 * 7) == 7
    assert subset_draws(4, 1000, 10**9) == 1  # at least one draw
    assert even_draws(1000, 3).tolist() == [0, 500, 999]
    assert even_draws(5, 10).tolist() == [0, 1, 2, 3, 4]


def _model():
    with pm.Model(coords={"i": range(6)}) as model:
        p = pm.Beta("p", 2.0, 2.0)
        z = pm.Bernoulli("z", p, dims="i")
        x = pm.Normal("x", z, 1.0, dims="i")
        pm.Deterministic("y", 2.0 * x + z, dims="i")
    return model


def _sample(model, trace=None, chains=2):
    with model:
        steps = [pm.BinaryGibbsMetropolis([model["z"]]), pm.Metropolis([model["x"], model["p"]])]
        return pm.sample(
            draws=40, tune=15, chains=chains, cores=1, step=steps, trace=trace, random_seed=7,
            progressbar=False, compute_convergence_checks=False,
        )  # fmt: skip


@pytest.fixture(scope="module")
def plain():
    return _sample(_model()).posterior


def test_store_trace_keeps_the_same_draws_in_compact_dtypes(plain):
    model = _model()
    trace = StoreTrace(model, draws=40, per_draw={"z": "int8", "y": "float32"})
    post = trace.attach(_sample(model, trace)).posterior
    assert post["z"].dtype == np.int8 and post["y"].dtype == np.float32
    assert post["z"].dims == ("chain", "draw", "i") and post.sizes["draw"] == 40
    np.testing.assert_array_equal(post["z"].values, plain["z"].values)  # same draws
    np.testing.assert_allclose(post["y"].values, plain["y"].values, rtol=1e-6)
    np.testing.assert_array_equal(post["p"].values, plain["p"].values)


def test_store_trace_thins_and_keeps_running_moments(plain):
    model = _model()
    trace = StoreTrace(model, draws=40, per_draw={"z": None}, moments=["y"], thin=3)
    idata = trace.attach(_sample(model, trace))
    thinned = idata.posterior_thinned
    assert "z" not in idata.posterior and "y" not in idata.posterior
    assert thinned.sizes["draw"] == 14 and thinned.attrs["thin"] == 3
    np.testing.assert_array_equal(thinned["z"].values, plain["z"].values[:, ::3])
    moments = idata[MOMENTS_GROUP]["y"]
    assert moments.dims == ("chain", "moment", "i")
    y = plain["y"].values
    # Running sums in float64 over 40 draws: equal to the two-pass moments to rounding.
    np.testing.assert_allclose(moments.sel(moment="mean").values, y.mean(axis=1), rtol=1e-10)
    np.testing.assert_allclose(moments.sel(moment="sd").values, y.std(axis=1), rtol=1e-8)


def test_store_trace_rejects_unknown_variables_and_bad_sizes():
    model = _model()
    with pytest.raises(ValueError, match=r"\['w'\] are not variables of the model"):
        StoreTrace(model, draws=10, per_draw={"w": "int8"})
    with pytest.raises(ValueError, match="draws must be a positive integer, got None"):
        StoreTrace(model, moments=["y"])
    with pytest.raises(ValueError, match="thin must be a positive integer, got 0"):
        StoreTrace(model, draws=10, moments=["y"], thin=0)
