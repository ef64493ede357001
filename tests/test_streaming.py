"""Draws streamed to disk (pmctx.streaming): the same draws as in memory, read lazily with
xarray/Dask, for pm.sample with pmctx's own Gibbs steps, von Mises maps and IBP fits."""

import arviz as az
import dask.array as da
import numpy as np
import pymc as pm
import pytest
import xarray as xr

import pmctx
from pmctx.steps.base import PmctxStep
from pmctx.streaming import DiskTrace, disk_path, open_trace, save_groups


class _Flip(PmctxStep):
    name = "flip"
    stats_dtypes_shapes = {"value": (np.int64, [])}

    def step(self, point):
        point, key = dict(point), self.value_names[0]
        point[key] = self.rng.integers(2, size=point[key].shape)
        return point, [{"value": int(point[key].sum())}]


class _Redraw(PmctxStep):
    name = "redraw"
    stats_dtypes_shapes = {"first": (np.float64, [])}

    def step(self, point):
        point, key = dict(point), self.value_names[0]
        point[key] = self.rng.normal(size=point[key].shape)
        return point, [{"first": float(point[key][0])}]


def _toy():
    with pm.Model(coords={"i": range(5)}) as model:
        b = pm.Bernoulli("b", 0.5, dims="i")
        x = pm.Normal("x", b.sum(), shape=3)
        pm.Normal("y", x.sum(), 1.0, observed=np.array([0.3, 1.0]))
    return model


def _sample(model, trace):
    with model:
        steps = [_Flip([model["b"]]), _Redraw([model["x"]])]  # pmctx Gibbs steps only
        return pm.sample(draws=23, tune=7, chains=2, cores=1, step=steps, trace=trace,
                         random_seed=1, progressbar=False,
                         compute_convergence_checks=False)  # fmt: skip


def test_disk_trace_streams_the_draws_memory_would_keep(tmp_path):
    memory = _sample(_toy(), None)
    model = _toy()
    path = tmp_path / "fit.zarr"
    trace = DiskTrace(model, path=path, draws=23, chains=2, draws_per_chunk=5)  # 5 blocks
    idata = save_groups(trace.attach(_sample(model, trace)), path)
    for name in ("b", "x"):
        assert isinstance(idata.posterior[name].data, da.Array)  # read lazily
        np.testing.assert_array_equal(idata.posterior[name].values, memory.posterior[name].values)
    np.testing.assert_array_equal(idata.sample_stats["value"], memory.sample_stats["value"])
    again = open_trace(path)
    assert set(again.children) == {"posterior", "sample_stats", "observed_data"}
    lazy = xr.open_zarr(path, group="posterior", consolidated=False)
    assert lazy["b"].chunks[:2] == ((1, 1), (5, 5, 5, 5, 3))  # one chunk per chain and block
    np.testing.assert_array_equal(lazy["x"].values, memory.posterior["x"].values)


def test_store_paths_and_stores_are_checked(tmp_path):
    assert disk_path("all", ("auto", "all")) is None
    assert disk_path(tmp_path / "a.zarr", ("auto",)) == tmp_path / "a.zarr"
    with pytest.raises(ValueError, match=r"store must be one of \('auto', 'all'\) or a path "
                       r"ending in '.zarr'.*got 'fit.nc'"):  # fmt: skip
        disk_path("fit.nc", ("auto", "all"))
    with pytest.raises(FileNotFoundError, match="is not a Zarr store of a fit"):
        open_trace(tmp_path / "missing.zarr")
    with pytest.raises(ValueError, match="chains must be a positive integer, got None"):
        DiskTrace(_toy(), path=tmp_path / "b.zarr", draws=5)


@pytest.mark.slow  # two map reconstructions (numba kernels), ~10 s on a loaded machine
def test_map_streamed_to_disk_equals_the_fit_kept_in_memory(tmp_path):
    from pmctx.models import vonmises_map as vm

    theta = np.random.default_rng(0).uniform(0, np.pi, (6, 6))
    theta[0, 0] = np.nan
    # 2 x 13 draws: ArviZ 1's PSIS needs 25 draws or more (5 in the tail), az.loo below too
    kw = dict(kappa=2.0, kappa_obs=3.0, rank=3, draws=13, tune=4, chains=2, cores=1,
              random_seed=3, progressbar=False, check_convergence=False)  # fmt: skip
    memory = vm.reconstruct(theta, store="all", **kw)
    disk = vm.reconstruct(theta, store=str(tmp_path / "map.zarr"), **kw)
    for name in ("o", "theta"):
        assert disk.posterior[name].dtype == np.float32
        assert isinstance(disk.posterior[name].data, da.Array)
        np.testing.assert_allclose(disk.posterior[name], memory.posterior[name], atol=1e-6)
    np.testing.assert_allclose(disk.log_likelihood["z"], memory.log_likelihood["z"], atol=1e-5)
    assert disk.posterior_predictive["z"].shape == memory.posterior_predictive["z"].shape
    # az.loo refuses Dask arrays; pmctx.streaming.loo loads the log-likelihood (float32).
    elpd = pmctx.streaming.loo(disk).elpd
    assert abs(elpd - az.loo(memory).elpd) < 1e-3
    assert len(pmctx.summary(disk)) == len(pmctx.summary(memory))


@pytest.mark.slow  # two IBP fits of 20 trials, ~10 s on a loaded machine
def test_ibp_streamed_to_disk_equals_the_fit_kept_in_memory(tmp_path):
    from pmctx.models import ibp

    from pmctx.ibp.data import visuomotor_data

    data = visuomotor_data(20, random_seed=2)
    kw = dict(K_max=10, draws=20, tune=10, chains=2, cores=1, random_seed=4, sigma_n=0.3,
              check_convergence=False, progressbar=False)  # fmt: skip
    memory = ibp.sample(data.F, data.X, store="all", **kw)
    disk = ibp.sample(data.F, data.X, store=tmp_path / "ibp.zarr", **kw)
    assert disk.posterior["Z"].dtype == np.int8 and isinstance(disk.posterior["Z"].data, da.Array)
    for name in ("Z", "Y", "n_active"):
        np.testing.assert_array_equal(disk.posterior[name], memory.posterior[name])
    np.testing.assert_allclose(disk.posterior["F_hat"], memory.posterior["F_hat"], rtol=1e-6)
    np.testing.assert_allclose(disk.log_likelihood["joint"], memory.log_likelihood["joint"],
                               rtol=1e-5)  # fmt: skip
    with pytest.raises(ValueError, match="reconstructions='moments' keeps running moments"):
        ibp.sample(data.F, data.X, store=tmp_path / "x.zarr", reconstructions="moments", **kw)


def test_loo_by_blocks_of_observations_equals_az_loo():
    """PSIS smooths each observation on its own: blocks of 7 rows (of a pixel grid, several
    observation dims) give az.loo's pointwise values, totals, p_loo and Pareto k exactly."""
    import arviz as az

    rng = np.random.default_rng(3)
    ll = rng.normal(-1.0, 0.3, (2, 150, 20, 3)) * rng.gamma(2.0, 1.0, (1, 1, 20, 3))
    fit = az.from_dict(
        {"posterior": {"mu": rng.normal(size=(2, 150))}, "log_likelihood": {"y": ll}}
    )
    whole = az.loo(fit, pointwise=True, reff=0.9)
    blocks = pmctx.streaming.loo(fit, pointwise=True, reff=0.9, block_bytes=8 * 300 * 3 * 7)
    for key in ("elpd", "se", "p", "n_samples", "n_data_points", "warning", "good_k"):
        np.testing.assert_allclose(getattr(blocks, key), getattr(whole, key), rtol=1e-12)
    np.testing.assert_allclose(blocks.elpd_i.values, whole.elpd_i.values, rtol=1e-12)
    np.testing.assert_allclose(blocks.pareto_k.values, whole.pareto_k.values, rtol=1e-12)
    assert pmctx.streaming.loo(fit, pointwise=False, block_bytes=8 * 300 * 3 * 7).elpd_i is None
    assert len(az.compare({"a": blocks, "b": whole})) == 2  # az.compare reads it
